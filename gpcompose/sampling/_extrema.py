import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._multistart import maximize_from_candidates
from .._validation import check_box
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
) -> SampleExtrema:
    """Maximum and minimum of every sample on the box [`lower`, `upper`].

    All samples are evaluated on one set of `num_candidates` uniform points; each sample's
    `num_starts` best (resp. worst) candidates start box-clipped Adam searches
    (`acquisition.maximize_multistart`, steps in units of the box width), vmapped over
    samples, both directions and starts. Nguyen et al. (2021) specify only "multi-start
    gradient descent"; these defaults are ours. `ValueError` unless lower < upper.
    """
    if not isinstance(samples, AbstractSamples):
        raise ValueError(f"`samples` must be an AbstractSamples, got {type(samples).__name__}.")
    lower, upper = check_box(lower, upper)
    if num_starts > num_candidates:
        raise ValueError(f"`num_starts` ({num_starts}) must not exceed `num_candidates` ({num_candidates}).")
    return _sample_extrema(key, samples, lower, upper, num_candidates, num_starts, num_steps, learning_rate)


@eqx.filter_jit
def _sample_extrema(key, samples, lower, upper, num_candidates, num_starts, num_steps, learning_rate):
    unit = jax.random.uniform(key, (num_candidates, lower.shape[0]), lower.dtype)
    candidates = lower[None, :] + (upper - lower)[None, :] * unit
    values = samples(candidates)
    num_samples = samples.num_samples

    def search(index, sign):
        result = maximize_from_candidates(
            lambda x: sign * samples.evaluate(index, x),
            candidates,
            num_starts=num_starts,
            values=sign * values[index],
            scale=upper - lower,
            num_steps=num_steps,
            learning_rate=learning_rate,
            lower=lower,
            upper=upper,
        )
        return result.x, sign * result.value

    indices = jnp.concatenate([jnp.arange(num_samples), jnp.arange(num_samples)])
    signs = jnp.concatenate([jnp.ones(num_samples, lower.dtype), -jnp.ones(num_samples, lower.dtype)])
    x_best, value_best = jax.vmap(search)(indices, signs)
    return SampleExtrema(x_best[:num_samples], value_best[:num_samples], x_best[num_samples:], value_best[num_samples:])
