import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, DTypeLike, Float, PRNGKeyArray

from .._multistart import maximize_from_candidates
from .._polynomial_cosine import polynomial_cosine
from .._validation import check_box
from ..kernels import RandomFourierFeatures
from ._base import AbstractSamples


class SampleExtrema(eqx.Module):
    """Per-sample maxima g_m⁺ = max_x g_m(x) at x_m⁺ and minima g_m⁻ at x_m⁻ on a box
    (Nguyen et al. 2021, §3: the pairs (g_m⁻, g_m⁺) weighted by π, and (x_m⁺, g_m⁺)
    the quantities BES learns about)."""

    x_max: Float[Array, "M D"]
    value_max: Float[Array, " M"]
    x_min: Float[Array, "M D"]
    value_min: Float[Array, " M"]


def sample_extrema(
    key: PRNGKeyArray,
    samples: AbstractSamples,
    lower: Float[ArrayLike, " D"],
    upper: Float[ArrayLike, " D"],
    *,
    num_candidates: int = 1000,
    num_starts: int = 5,
    num_steps: int = 50,
    learning_rate: float = 0.05,
    search_dtype: DTypeLike = jnp.float32,
    newton_steps: int = 2,
) -> SampleExtrema:
    """Maximum and minimum of every sample on the box [`lower`, `upper`].

    All samples are evaluated on one set of `num_candidates` uniform points; each sample's
    `num_starts` best (resp. worst) candidates start box-clipped Adam searches
    (`acquisition.maximize_multistart`, steps in units of the box width), vmapped over
    samples, both directions and starts. Nguyen et al. (2021) specify only "multi-start
    gradient descent"; these defaults are ours.

    The cosines of the random features dominate the cost. The search runs on a copy of the
    samples in `search_dtype` whose features take their cosines from a polynomial (absolute
    error about 3·10⁻⁷; XLA's CPU cosine does not vectorise); the end point of every start is
    then evaluated by the samples themselves, and the best one kept, so every returned value
    is the sample's value at the returned point, not an estimate. Adam's steps of nearly fixed
    length leave that point about 10⁻³ of the box from the optimum; `newton_steps` projected
    Newton steps on the samples themselves (coordinates held at a face stay there), each kept
    only where it raises the value, take it there (quadratic convergence; D × D Hessians,
    cheap at the dimensions of BO). `ValueError` unless lower < upper.
    """
    if not isinstance(samples, AbstractSamples):
        raise ValueError(f"`samples` must be an AbstractSamples, got {type(samples).__name__}.")
    lower, upper = check_box(lower, upper)
    if num_starts > num_candidates:
        raise ValueError(f"`num_starts` ({num_starts}) must not exceed `num_candidates` ({num_candidates}).")
    search_dtype = jnp.dtype(search_dtype)
    if not jnp.issubdtype(search_dtype, jnp.floating):
        raise ValueError(f"`search_dtype` must be a real floating dtype, got {search_dtype}.")
    if isinstance(newton_steps, bool) or not isinstance(newton_steps, int) or newton_steps < 0:
        raise ValueError(f"`newton_steps` must be a non-negative int, got {newton_steps!r}.")
    return _sample_extrema(
        key, samples, lower, upper, num_candidates, num_starts, num_steps, learning_rate, search_dtype, newton_steps
    )


def _newton_polish(objective, x, value, lower, upper, num_steps: int):
    """`num_steps` projected Newton steps on the box from (`x`, `value`), maximising: the
    coordinates held at a face by the gradient stay fixed, the free ones F move by
    −(H_FF)⁻¹ ∇_F f, then clipped to the box; a step is kept only where it raises the
    objective (a non-finite one never)."""

    def gradient_twice(x):
        gradient = jax.grad(objective)(x)
        return gradient, gradient

    def step(carry, _):
        x, value = carry
        hessian, gradient = jax.jacfwd(gradient_twice, has_aux=True)(x)  # one reverse pass for both
        held = ((x <= lower) & (gradient < 0)) | ((x >= upper) & (gradient > 0))
        free_hessian = jnp.where(held[:, None] | held[None, :], jnp.eye(x.shape[0], dtype=x.dtype), hessian)
        free_gradient = jnp.where(held, 0.0, gradient)
        moved = jnp.clip(x - jnp.linalg.solve(free_hessian, free_gradient), lower, upper)
        moved_value = objective(moved)
        better = jnp.isfinite(moved_value) & (moved_value > value)
        return (jnp.where(better, moved, x), jnp.where(better, moved_value, value)), None

    (x, value), _ = jax.lax.scan(step, (x, value), None, length=num_steps)
    return x, value


def _cast_floating(tree, dtype):
    return jax.tree_util.tree_map(lambda leaf: leaf.astype(dtype) if eqx.is_inexact_array(leaf) else leaf, tree)


def _search_copy(samples: AbstractSamples, dtype) -> AbstractSamples:
    """The samples in `dtype`, their random features' cosines by `polynomial_cosine`."""

    def swap_cosine(node):
        if isinstance(node, RandomFourierFeatures):
            return dataclasses.replace(node, cosine=polynomial_cosine)
        return node

    is_features = lambda node: isinstance(node, RandomFourierFeatures)  # noqa: E731
    return _cast_floating(jax.tree_util.tree_map(swap_cosine, samples, is_leaf=is_features), dtype)


@eqx.filter_jit
def _sample_extrema(
    key, samples, lower, upper, num_candidates, num_starts, num_steps, learning_rate, search_dtype, newton_steps
):
    unit = jax.random.uniform(key, (num_candidates, lower.shape[0]), lower.dtype)
    candidates = lower[None, :] + (upper - lower)[None, :] * unit
    searched = _search_copy(samples, search_dtype)
    search_lower, search_upper, search_candidates = _cast_floating((lower, upper, candidates), search_dtype)
    values = searched(search_candidates)
    num_samples = samples.num_samples

    def search(index, sign):
        search_sign = sign.astype(search_dtype)
        result = maximize_from_candidates(
            lambda x: search_sign * searched.evaluate(index, x),
            search_candidates,
            num_starts=num_starts,
            values=search_sign * values[index],
            scale=search_upper - search_lower,
            num_steps=num_steps,
            learning_rate=learning_rate,
            lower=search_lower,
            upper=search_upper,
        )
        exact = lambda x: sign * samples.evaluate(index, x)  # noqa: E731
        ends = jnp.clip(result.start_x.astype(lower.dtype), lower[None, :], upper[None, :])
        end_values = jax.vmap(exact)(ends)
        end_values = jnp.where(jnp.isfinite(end_values), end_values, -jnp.inf)
        best = jnp.argmax(end_values)
        x, value = _newton_polish(exact, ends[best], end_values[best], lower, upper, newton_steps)
        return x, sign * value

    indices = jnp.concatenate([jnp.arange(num_samples), jnp.arange(num_samples)])
    signs = jnp.concatenate([jnp.ones(num_samples, lower.dtype), -jnp.ones(num_samples, lower.dtype)])
    x_best, value_best = jax.vmap(search)(indices, signs)
    return SampleExtrema(x_best[:num_samples], value_best[:num_samples], x_best[num_samples:], value_best[num_samples:])
