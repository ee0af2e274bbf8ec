"""`rare_cond`: a `lax.cond` whose rarely taken branch, under `vmap`, runs only when some
member of the batch takes it."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import custom_batching
from jax.extend.core import ClosedJaxpr, jaxpr_as_fun
from jaxtyping import Array, Bool


def _with_explicit_constants(function: Callable, operands: tuple) -> tuple[Callable, list]:
    """(call, constants) with `call(constants, operands) == function(*operands)`: every value
    that `function` closes over, a tracer of an enclosing transformation included, becomes an
    argument, so that `vmap` sees which of them are batched."""
    closed, out_shape = jax.make_jaxpr(function, return_shape=True)(*operands)
    out_tree = jax.tree.structure(out_shape)
    jaxpr = closed.jaxpr
    opened = ClosedJaxpr(jaxpr.replace(constvars=[], invars=jaxpr.constvars + jaxpr.invars), ())

    def call(constants, operands):
        return jax.tree.unflatten(out_tree, jaxpr_as_fun(opened)(*constants, *jax.tree.leaves(operands)))

    return call, list(closed.consts)


def rare_cond(pred: Bool[Array, ""], rare_fun: Callable, usual_fun: Callable, *operands: Any) -> Any:
    """`jax.lax.cond(pred, rare_fun, usual_fun, *operands)`, with another batching rule.

    Under `vmap` with a batched `pred`, `lax.cond` becomes a `select`: both branches run for
    every member. Here the batch runs `usual_fun` alone when no member takes `rare_fun`, and
    both (then a select) only when some member does; an unbatched `pred` stays a `lax.cond`.
    The rare branch appears once in the batched program (the usual one twice, so pass the
    cheap branch as `usual_fun`). For an expensive branch that is rarely taken (a refit, a
    fall-back), a vmapped run then pays for it only at the steps where some member takes it
    (for every member there). The values are those of `lax.cond`. The batching rule is a
    `jax.custom_batching.custom_vmap`, which has no reverse-mode derivative: this is for the
    control flow of drivers, not for the inside of an objective.
    """
    rare_call, rare_constants = _with_explicit_constants(rare_fun, operands)
    usual_call, usual_constants = _with_explicit_constants(usual_fun, operands)

    @custom_batching.custom_vmap
    def branch(pred, operands, rare_constants, usual_constants):
        return jax.lax.cond(
            pred, lambda: rare_call(rare_constants, operands), lambda: usual_call(usual_constants, operands)
        )

    @branch.def_vmap
    def batched_branch(axis_size, in_batched, pred, operands, rare_constants, usual_constants):
        pred_batched, operands_batched, rare_batched, usual_batched = in_batched

        def vmapped(call, constants, constants_batched):
            def run():
                in_axes = jax.tree.map(lambda flag: 0 if flag else None, (constants_batched, operands_batched))
                return jax.vmap(call, in_axes=in_axes, axis_size=axis_size)(constants, operands)

            return run

        run_rare = vmapped(rare_call, rare_constants, rare_batched)
        run_usual = vmapped(usual_call, usual_constants, usual_batched)

        def run_both():
            def select(if_rare, if_usual):
                return jnp.where(jnp.reshape(pred, (-1,) + (1,) * (if_rare.ndim - 1)), if_rare, if_usual)

            return jax.tree.map(select, run_rare(), run_usual())

        if pred_batched:
            out = jax.lax.cond(jnp.any(pred), run_both, run_usual)
        else:
            out = jax.lax.cond(pred, run_rare, run_usual)
        return out, jax.tree.map(lambda _: True, out)

    return branch(pred, operands, rare_constants, usual_constants)
