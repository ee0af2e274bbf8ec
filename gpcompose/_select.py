"""Choosing between two pytrees of one structure by a traced flag."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Bool, PyTree


def select_tree(condition: Bool, on_true: PyTree, on_false: PyTree) -> PyTree:
    """Leafwise `jnp.where(condition, a, b)` over the array leaves of `on_true` and
    `on_false`, which share one structure; a non-array leaf is taken from `on_true`. The
    traced-flag counterpart of `on_true if condition else on_false`: both are computed,
    so it stays one program under `jit` and `vmap`."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(condition, a, b) if eqx.is_array(a) else a, on_true, on_false)
