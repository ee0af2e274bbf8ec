import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_box
from ..acquisition._multistart import maximise_multistart
from ._base import AbstractSamples


class SampleExtrema(eqx.Module):
    """Per-sample maxima g_m⁺ = max_x g_m(x) at x_m⁺ and minima g_m⁻ at x_m⁻ on a box
    (bounded-sampling document §3: the pairs (g_m⁻, g_m⁺) weighted by π, and (x_m⁺, g_m⁺)
    the quantities BES learns about)."""

    x_max: Float[Array, "M D"]
    value_max: Float[Array, " M"]
    x_min: Float[Array, "M D"]
    value_min: Float[Array, " M"]


@eqx.filter_jit
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
    (`acquisition.maximise_multistart`, steps in units of the box width), vmapped over
    samples and starts. The document specifies only "multi-start gradient descent"; these
    defaults are ours.
    """
    lower, upper = check_box(lower, upper)
    dtype = lower.dtype
    if num_starts > num_candidates:
        raise ValueError(f"`num_starts` ({num_starts}) must not exceed `num_candidates` ({num_candidates}).")
    dimension = lower.shape[0]
    unit = jax.random.uniform(key, (num_candidates, dimension), dtype)
    candidates = lower + (upper - lower) * unit
    values = samples(candidates)
    width = upper - lower

    def search(index, sign):
        _, rows = jax.lax.top_k(sign * values[index], num_starts)
        result = maximise_multistart(
            lambda x: sign * samples.evaluate(index, x),
            candidates[rows],
            scale=width,
            num_steps=num_steps,
            learning_rate=learning_rate,
            lower=lower,
            upper=upper,
        )
        return result.x, sign * result.value

    indices = jnp.arange(samples.num_samples)
    x_max, value_max = jax.vmap(lambda m: search(m, 1.0))(indices)
    x_min, value_min = jax.vmap(lambda m: search(m, -1.0))(indices)
    return SampleExtrema(x_max, value_max, x_min, value_min)
