"""Zeros shaped like a function's output: the first carry of a loop, or the value of a branch
that does not run."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import PyTree


def zeros_like_output(function: Callable, *args) -> PyTree:
    """Zeros of the shapes and dtypes of `function(*args)` (`eqx.filter_eval_shape`: traced,
    not run); non-array leaves as the output has them."""
    shapes = eqx.filter_eval_shape(function, *args)
    return jax.tree.map(lambda leaf: jnp.zeros(leaf.shape, leaf.dtype), shapes)
