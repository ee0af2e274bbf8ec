"""Draws of parameters' unconstrained coordinates from their priors (SteinGP's particle initialisation)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from ._positive import Positive, lowest_above
from ._real import Real
from ._tree import is_parameter


def sample_unconstrained(parameter: Positive | Real, key: PRNGKeyArray) -> Float[Array, "*shape"]:
    """The unconstrained coordinate u = T⁻¹(θ) of a draw θ of the parameter's constrained value.

    SteinGP (Pinder, Nemeth & Leslie 2020, App. 12): "each particle is drawn from the parameter's
    prior where there is one, otherwise from U[0, 1]". So θ ~ `parameter.prior` (its
    `sample`; a prior without a sampler raises `NotImplementedError`) or, without a prior,
    θ ~ U[0, 1) above the parameter's lower bound: θ = minimum + U[0, 1) for a `Positive`
    (U[10⁻⁶, 1 + 10⁻⁶) under SteinGP's constraint), θ ~ U[0, 1) for a `Real`. A `Real`
    without a prior has a flat, improper prior, so the paper's U[0, 1) is a convention,
    not a draw from it, and ignores the parameter's scale: give such a parameter a prior.
    The draw is made on θ and mapped through the parameter's inverse transform (the
    reference code writes the prior draw into u directly, which we do not copy).

    A `Positive` draw at or below `minimum` (probability F(minimum) under the prior,
    5·10⁻⁷ for Gamma(1, 2) with minimum 10⁻⁶) has no coordinate; it is moved to
    minimum · (1 + ε) + tiny (ε, tiny: the dtype's machine epsilon and smallest normal
    number), the first representable values above the floor, so u stays finite.

    Returns an array of the parameter's shape and dtype. Raises `ValueError` for a
    parameter that is not `Positive` or `Real` (`Fixed` is not trainable).
    """
    if not isinstance(parameter, (Positive, Real)):
        raise ValueError(f"`parameter` must be a Positive or Real parameter, got {type(parameter).__name__}.")
    value = parameter.value
    if parameter.prior is None:
        draw = jax.random.uniform(key, value.shape, value.dtype)
        if isinstance(parameter, Positive):
            draw = parameter.minimum + draw
    else:
        draw = parameter.prior.sample(key, value.shape).astype(value.dtype)
    if isinstance(parameter, Positive):
        draw = jnp.maximum(draw, lowest_above(parameter.minimum, value.dtype))
    return parameter.inverse(draw)


def with_prior_draws(tree: PyTree, key: PRNGKeyArray) -> PyTree:
    """`tree` with the unconstrained coordinate of every `Positive` and `Real` parameter
    replaced by `sample_unconstrained` (one independent key per parameter); `Fixed`
    parameters and other leaves are kept."""
    nodes = jax.tree.leaves(tree, is_leaf=is_parameter)
    keys = iter(jax.random.split(key, max(len(nodes), 1)))

    def draw(node):
        if not isinstance(node, (Positive, Real)):
            return node
        return eqx.tree_at(lambda parameter: parameter.unconstrained, node, sample_unconstrained(node, next(keys)))

    return jax.tree.map(draw, tree, is_leaf=is_parameter)
