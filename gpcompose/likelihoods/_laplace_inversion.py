"""The generic ω sampler of Galy-Fajou et al. (2020, §3.3.2, Alg. 2): inverse-CDF sampling of the tilted
law π(ω | c) from its Laplace transform alone (Ridout 2009), with the CDF and the density computed by
the Euler algorithm of Abate, Choudhury & Whitt (2000). Parameters A = 19, m = 11, n = 28 and the
tolerance 1e-7 are those of AugmentedGaussianProcesses.jl, the authors' library.

The Euler sum multiplies round-off by e^{A/2} ≈ 1.3 × 10⁴, so it needs float64: float32 input raises a
`ValueError`.
"""

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

_EULER_A = 19.0
_EULER_M = 11
_EULER_N = 28
_TOLERANCE = 1e-7
_MAX_DOUBLINGS = 200
_MAX_NEWTON_STEPS = 100


def euler_inversion(transform: Callable[[Array], Array], t: Float[Array, ""]) -> Float[Array, ""]:
    """f(t) from its Laplace transform f̂ by the Euler algorithm (Abate, Choudhury & Whitt 2000):

        s_K = (e^{A/2}/t) [½ Re f̂(A/(2t)) + Σ_{k=1}^{K} (−1)^k Re f̂((A + 2πik)/(2t))],
        f(t) ≈ Σ_{j=0}^{m} C(m, j) 2^{−m} s_{n+j},

    with discretisation error about e^{−A} ≈ 6 × 10⁻⁹. `transform` maps a complex array to f̂ there.
    """
    k = np.arange(_EULER_N + _EULER_M + 1)
    points = (_EULER_A + 2j * math.pi * k) / (2 * t.astype(jnp.complex128))
    weights = jnp.asarray(np.where(k == 0, 0.5, 1.0) * (-1.0) ** k, t.dtype)
    partial_sums = jnp.cumsum(weights * jnp.real(transform(points))) * (math.exp(_EULER_A / 2) / t)
    binomial = jnp.asarray([math.comb(_EULER_M, j) / 2.0**_EULER_M for j in range(_EULER_M + 1)], t.dtype)
    return jnp.sum(binomial * partial_sums[_EULER_N:])


def tilted_cdf_and_density(log_phi, c_squared: Float[Array, ""], x: Float[Array, ""]):
    """F(x) and π(x | c) of the tilted law, whose Laplace transforms are φ(s + c²)/(s φ(c²)) and
    φ(s + c²)/φ(c²) (Ridout 2009)."""
    log_normalizer = log_phi(c_squared)

    def density_transform(s):
        return jnp.exp(log_phi(s + c_squared.astype(s.dtype)) - log_normalizer.astype(s.dtype))

    cdf = euler_inversion(lambda s: density_transform(s) / s, x)
    density = euler_inversion(density_transform, x)
    return cdf, density


def _sample_one(log_phi, key, c_squared):
    uniform = jax.random.uniform(key, (), c_squared.dtype, minval=1e-12, maxval=1 - 1e-12)

    def residual(x):
        cdf, density = tilted_cdf_and_density(log_phi, c_squared, x)
        return cdf - uniform, density

    # bracket: double an upper end from 1 until F(upper) ≥ u
    def below(carry):
        upper, count = carry
        return (residual(upper)[0] < 0) & (count < _MAX_DOUBLINGS)

    upper, _ = jax.lax.while_loop(below, lambda carry: (2 * carry[0], carry[1] + 1), (jnp.ones_like(c_squared), 0))

    # safeguarded Newton: a Newton step that leaves the bracket is replaced by bisection
    def unconverged(carry):
        _, _, _, error, count = carry
        return (jnp.abs(error) > _TOLERANCE) & (count < _MAX_NEWTON_STEPS)

    def newton_step(carry):
        lower, upper, x, _, count = carry
        error, density = residual(x)
        lower = jnp.where(error < 0, x, lower)
        upper = jnp.where(error < 0, upper, x)
        candidate = x - error / density
        inside = jnp.isfinite(candidate) & (candidate > lower) & (candidate < upper)
        return lower, upper, jnp.where(inside, candidate, (lower + upper) / 2), error, count + 1

    start = (jnp.zeros_like(upper), upper, upper / 2, jnp.ones_like(upper), 0)
    _, _, x, _, _ = jax.lax.while_loop(unconverged, newton_step, start)
    return x


def sample_by_laplace_inversion(
    log_phi: Callable[[Array], Array], key: PRNGKeyArray, c_squared: Float[Array, " n"]
) -> Float[Array, " n"]:
    """ω_i ~ π(ω | c_i) for any completely monotone φ (given as `log_phi`, which must accept complex
    arguments), by inverse-CDF sampling with a bracketed Newton search (Ridout 2009). float64 only."""
    if c_squared.dtype != jnp.float64:
        raise ValueError(
            f"Laplace-transform inversion needs float64 (the Euler sum amplifies round-off by e^(A/2) ≈ 1.3e4); "
            f"got `c_squared` of dtype {c_squared.dtype}. Enable `jax_enable_x64` and pass float64 arrays."
        )
    keys = jax.random.split(key, c_squared.shape[0])
    return jax.vmap(lambda one_key, value: _sample_one(log_phi, one_key, value))(keys, c_squared)
