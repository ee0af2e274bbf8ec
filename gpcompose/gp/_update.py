import jax.numpy as jnp
from jaxtyping import ArrayLike, Float

from .._errors import RESULTS
from .._jit import public_jit
from .._linalg import CholeskyFactor, cholesky_append, cholesky_solve
from .._observations import append_observation, centred_targets
from ._posterior import ExactPosterior


@public_jit()
def update(
    posterior: ExactPosterior,
    x: Float[ArrayLike, " D"],
    y: Float[ArrayLike, ""],
    noise_variance: Float[ArrayLike, ""],
) -> ExactPosterior:
    """Append one observation (x, y) with noise σ² by a rank-1 extension of the factor.

    The new row of chol(K + D) is [L⁻¹k(X, x), √(k(x, x) + σ² − ‖L⁻¹k(X, x)‖²)], O(C²)
    instead of the O(C³) refactorisation; the buffer needs a free slot (see `capacity`
    in `condition`). Hyperparameters are unchanged. `noise_variance` ≥ 0, as in `condition`.
    If the extension loses positive definiteness the result becomes `RESULTS.update_failed`;
    the other codes of `ExactPosterior.result` are recomputed for the extended state.
    """
    observations, slot = append_observation(posterior.observations, x, y, noise_variance, zero_noise_allowed=True)
    cross = posterior.kernel.cross(observations.inputs, observations.inputs[slot][None])[:, 0]
    column = jnp.where(posterior.observations.mask, cross, 0.0)
    column = column.at[slot].set(cross[slot] + observations.noise_variance[slot] + posterior.factor.jitter)
    lower, ok = cholesky_append(posterior.factor.lower, column, slot)
    result = RESULTS.where(ok, posterior.factor.result, RESULTS.update_failed)
    factor = CholeskyFactor(lower, posterior.factor.jitter, result)
    weights = cholesky_solve(lower, centred_targets(posterior.mean, observations))
    return ExactPosterior(posterior.kernel, posterior.mean, observations, factor, weights)
