"""Compile-once wrappers for the public functions.

Public functions are jitted so that calling them eagerly in a Python loop (an active
learning loop, a notebook) reuses one compiled program per shape. `eqx.filter_jit`
treats Python numbers as static, which would recompile for every new value of a
scalar such as an observed `y`; `public_jit` converts Python floats (and ints not
named in `static_argnames`) that the caller passed to arrays first, and fills in the
defaults (unconverted), so that an argument left out and the same default passed
explicitly reuse one program. Inside a user's own `jit`, `vmap` or
`grad` the wrapper is transparent.
"""

import functools
import inspect
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import equinox as eqx
import jax.numpy as jnp

P = ParamSpec("P")
R = TypeVar("R")


def public_jit(*, static_argnames: tuple[str, ...] = ()) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: `eqx.filter_jit` with Python scalars turned into (weakly typed) arrays."""

    def decorate(function: Callable[P, R]) -> Callable[P, R]:
        jitted = eqx.filter_jit(function)
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = signature.bind(*args, **kwargs)
            passed = set(bound.arguments)
            bound.apply_defaults()  # f(x) and f(x, None) share one compiled program
            for name in passed:
                value = bound.arguments[name]
                is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
                if is_number and name not in static_argnames:
                    bound.arguments[name] = jnp.asarray(value)
            return jitted(*bound.args, **bound.kwargs)

        return wrapper

    return decorate
