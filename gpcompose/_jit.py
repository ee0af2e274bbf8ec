"""Compile-once wrappers for the public functions.

Public functions are jitted so that calling them eagerly in a Python loop (an active
learning loop, a notebook) reuses one compiled program per shape. `eqx.filter_jit`
treats Python numbers as static, which would recompile for every new value of a
scalar such as an observed `y`; `public_jit` converts Python floats (and ints not
named in `static_argnames`) that the caller passed to arrays first, and fills in the
defaults (unconverted), so that an argument left out and the same default passed
explicitly reuse one program. Inside a user's own `jit`, `vmap` or
`grad` the wrapper is transparent, except that a run-time value error raised inside the
function names it (`_errors.error_if`).
"""

import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import equinox as eqx
import jax.numpy as jnp

from ._errors import raised_by
from ._validation import check_key

P = ParamSpec("P")
R = TypeVar("R")


def _public_path(cls_or_function) -> str:
    """The dotted name under which a user reaches a class or function: for gpcompose's, its
    module path without the private modules ("gpcompose.gp._posterior" → "gp") and its
    qualified name; for others (a user's subclass), the full module path."""
    package, *modules = cls_or_function.__module__.split(".")
    if package != "gpcompose":
        return f"{cls_or_function.__module__}.{cls_or_function.__qualname__}"
    public_modules = [part for part in modules if not part.startswith("_")]
    return ".".join([*(public_modules or ["gpcompose"]), cls_or_function.__qualname__])


def public_jit(*, static_argnames: tuple[str, ...] = ()) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: `eqx.filter_jit` with Python scalars turned into (weakly typed) arrays, whose
    run-time value errors start with the function's public name ("gp.condition: …"; for a
    method, that of the class of `self`: "bo.BO.tell: …"), and whose argument `key`, if it
    has one, must be a PRNG key (`check_key`, a `TypeError` naming it otherwise)."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        jitted = eqx.filter_jit(function)
        signature = inspect.signature(function)
        is_method = next(iter(signature.parameters), None) == "self"

        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = signature.bind(*args, **kwargs)
            passed = set(bound.arguments)
            if bound.arguments.get("key") is not None:
                check_key(bound.arguments["key"])
            bound.apply_defaults()  # f(x) and f(x, None) share one compiled program
            for name in passed:
                value = bound.arguments[name]
                is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
                if is_number and name not in static_argnames:
                    bound.arguments[name] = jnp.asarray(value)
            if is_method:
                public_name = f"{_public_path(type(bound.arguments['self']))}.{function.__name__}"
            else:
                public_name = _public_path(function)
            with raised_by(public_name):
                return jitted(*bound.args, **bound.kwargs)

        return wrapper

    return decorate
