"""The BVBMC acquisition functions in log space (Naiff 2019, thesis §5.5.2 and §6.1.2).

Each takes the GP's latent mean m and variance k = k_D(x, x) at a point, in normalised
output units, and log q(x) of the current mixture, and returns the log of

    US       k q²                       (5.55)
    PROP     k e^m q²                   (5.56; VBMC's prospective prediction)
    soft-PROP k softplus(m) q²          (6.13)
    MMLT     e^{2m + k}(e^k − 1)        (6.14, with k(x, x), not k(x, x′))
    MMLT_P   e^{2m + k}(e^k − 1) q²     (6.15; the reference code uses q¹)

Logs keep e^m and e^{2m+k} from overflowing; log(e^k − 1) = k + log(−expm1(−k)) and
log softplus(m) are evaluated without cancellation. A zero variance (at a noiseless
training point) is floored at the smallest normal number, so the values stay finite.
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


def _log_variance(variance):
    return jnp.log(jnp.maximum(variance, jnp.finfo(variance.dtype).tiny))


def log_variance_regularizer(variance: Float[Array, ""], threshold: Float[Array, ""]) -> Float[Array, ""]:
    """log of the VBMC-style factor exp(−(v_reg/k − 1) 1[k < v_reg]) that the reference code
    multiplies into every acquisition: 0 for k ≥ v_reg, 1 − v_reg/k below (−∞ as k → 0)."""
    safe = jnp.maximum(variance, jnp.finfo(variance.dtype).tiny)
    return jnp.where(variance < threshold, 1.0 - threshold / safe, 0.0)


def log_uncertainty_sampling(
    mean: Float[Array, ""], variance: Float[Array, ""], log_q: Float[Array, ""]
) -> Float[Array, ""]:
    """log(k q²)."""
    del mean
    return _log_variance(variance) + 2.0 * log_q


def log_prospective(mean: Float[Array, ""], variance: Float[Array, ""], log_q: Float[Array, ""]) -> Float[Array, ""]:
    """log(k e^m q²)."""
    return _log_variance(variance) + mean + 2.0 * log_q


def _log_softplus(value):
    """log(log(1 + e^v)): log1p(e^v) underflows to 0 for v ≪ 0, where it equals e^v."""
    small = value < -30.0
    return jnp.where(small, value, jnp.log(jax.nn.softplus(jnp.where(small, 0.0, value))))


def log_soft_prospective(
    mean: Float[Array, ""], variance: Float[Array, ""], log_q: Float[Array, ""]
) -> Float[Array, ""]:
    """log(k softplus(m) q²)."""
    return _log_variance(variance) + _log_softplus(mean) + 2.0 * log_q


def _log_expm1(value):
    """log(e^k − 1) = k + log(−expm1(−k)) for k > 0, floored like the variance."""
    safe = jnp.maximum(value, jnp.finfo(value.dtype).tiny)
    return safe + jnp.log(-jnp.expm1(-safe))


def log_moment_matched_log_transform(
    mean: Float[Array, ""], variance: Float[Array, ""], log_q: Float[Array, ""]
) -> Float[Array, ""]:
    """log(e^{2m + k}(e^k − 1)), the variance of e^f for f ~ N(m, k) (MMLT)."""
    del log_q
    return 2.0 * mean + variance + _log_expm1(variance)


def log_prospective_moment_matched_log_transform(
    mean: Float[Array, ""], variance: Float[Array, ""], log_q: Float[Array, ""]
) -> Float[Array, ""]:
    """log(e^{2m + k}(e^k − 1) q²) (MMLT_P)."""
    return log_moment_matched_log_transform(mean, variance, log_q) + 2.0 * log_q


LOG_BMC_ACQUISITIONS = {
    "us": log_uncertainty_sampling,
    "prop": log_prospective,
    "soft_prop": log_soft_prospective,
    "mmlt": log_moment_matched_log_transform,
    "mmlt_p": log_prospective_moment_matched_log_transform,
}
"""The acquisition functions by their short names (`bvbmc.BVBMC` takes them as modules)."""
