"""Finiteness checks and guards over pytrees of arrays."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Bool, PyTree


def all_finite(tree: PyTree) -> Bool:
    """Whether every floating-point array leaf of `tree` is finite everywhere (leaves that
    are not inexact arrays are ignored, so a tree without any is finite); a traced scalar,
    so it can gate a `select_tree`."""
    leaves = jax.tree_util.tree_leaves(eqx.filter(tree, eqx.is_inexact_array))
    return jnp.all(jnp.asarray([jnp.all(jnp.isfinite(leaf)) for leaf in leaves], dtype=bool))


def zero_non_finite(tree: PyTree) -> PyTree:
    """`tree` with every NaN or infinite entry of its array leaves set to zero.

    Used on a stochastic gradient before an optimiser update: one non-finite sample then
    skips that coordinate's step instead of turning the optimiser state into NaN."""
    return jax.tree_util.tree_map(lambda g: jnp.where(jnp.isfinite(g), g, 0.0), tree)


def finite_optimiser_step(
    optimiser: optax.GradientTransformation, gradient: PyTree, optimiser_state: PyTree, parameters: PyTree
) -> tuple[PyTree, PyTree]:
    """One optax step on `parameters` with the non-finite entries of `gradient` zeroed
    (`zero_non_finite`); returns the new parameters and optimiser state."""
    with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 step counts and floats
        updates, optimiser_state = optimiser.update(zero_non_finite(gradient), optimiser_state)
    return optax.apply_updates(parameters, updates), optimiser_state
