"""Exact samplers for the tilted laws π(ω | c) of the super-Gaussian catalogue (Galy-Fajou, Wenzel
& Opper 2020, §3.3.2 and Table 1; the paper leaves the laws implicit, and each likelihood's
docstring states its law). Each draws one variate per entry of its parameters and has no
host-side loop: rejection steps are `lax.while_loop`s, so the samplers work under `jit` and `vmap`.
"""

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr
from jaxtyping import Array, Float, PRNGKeyArray


def sample_gamma(key: PRNGKeyArray, shape: Float[Array, " n"], rate: Float[Array, " n"]) -> Float[Array, " n"]:
    """Gamma(shape, rate) variates."""
    return jax.random.gamma(key, shape, dtype=rate.dtype) / rate


def sample_inverse_gaussian(
    key: PRNGKeyArray, mean: Float[Array, " n"], shape: Float[Array, " n"]
) -> Float[Array, " n"]:
    """Inverse-Gaussian IG(mean μ, shape λ) variates by Michael, Schucany & Haas (1976).

    With y = ν², ν ~ N(0, 1), the two roots of λ(x − μ)² = μ² y x are μ t₁ and μ/t₁ with
    t₁ = 2φ / (2φ + y + √(y(y + 4φ))), φ = λ/μ (written without cancellation); the smaller root
    is returned with probability 1/(1 + t₁), the larger otherwise.
    """
    normal_key, uniform_key = jax.random.split(key)
    y = jax.random.normal(normal_key, mean.shape, mean.dtype) ** 2
    ratio = shape / mean
    small_root = 2 * ratio / (2 * ratio + y + jnp.sqrt(y * (y + 4 * ratio)))
    uniform = jax.random.uniform(uniform_key, mean.shape, mean.dtype)
    return jnp.where(uniform * (1 + small_root) <= 1, mean * small_root, mean / small_root)


def sample_gig_three_halves(key: PRNGKeyArray, chi: Float[Array, " n"], psi: Float[Array, " n"]) -> Float[Array, " n"]:
    """GIG(p = 3/2, χ, ψ) variates, density ∝ x^{1/2} e^{−(χ/x + ψx)/2}.

    Built from two exact facts. Halgreen (1979): for p > 0, GIG(p, χ, ψ) = GIG(−p, χ, ψ) ⊕
    Gamma(p, rate ψ/2) (the Laplace transforms differ by the factor (ψ/(ψ + 2s))^p), with
    GIG(−1/2, χ, ψ) = IG(mean √(χ/ψ), shape χ). Size-biasing: x · GIG(p) ∝ GIG(p + 1), and a
    size-biased sum U + G is the size-biased U plus G with probability E U/(E U + E G), else U plus
    the size-biased G; size-biased Gamma(p) is Gamma(p + 1). So with U, U′ ~ IG, G, G′ ~ Gamma(1/2):
    GIG(3/2) = U′ + G′ + G with probability √(χ/ψ)/(√(χ/ψ) + 1/ψ), else U + Gamma(3/2).
    """
    keys = jax.random.split(key, 6)
    rate = psi / 2
    ig_mean = jnp.sqrt(chi / psi)
    first = sample_inverse_gaussian(keys[0], ig_mean, chi)
    second = sample_inverse_gaussian(keys[1], ig_mean, chi)
    half = jnp.full_like(psi, 0.5)
    size_biased_first = second + sample_gamma(keys[2], half, rate) + sample_gamma(keys[3], half, rate)
    size_biased_gamma = first + sample_gamma(keys[4], 3 * half, rate)
    mean_inverse_gaussian = ig_mean
    mean_gamma = 1 / psi
    choose_first = jax.random.uniform(keys[5], psi.shape, psi.dtype) * (mean_inverse_gaussian + mean_gamma)
    return jnp.where(choose_first < mean_inverse_gaussian, size_biased_first, size_biased_gamma)


# Devroye's sampler for J*(1, z) (Polson, Scott & Windle 2013, §4): a mixture proposal split at
# t = 0.64 and an alternating-series acceptance test.
_TRUNCATION = 0.64
_MAX_SERIES_TERMS = 200


def _series_coefficient(n, x):
    """a_n(x) of the J*(1, 0) density as an alternating series (Polson et al. 2013, eq. 11)."""
    half = jnp.asarray(n, x.dtype) + 0.5
    scale = half * math.pi
    left = jnp.exp(jnp.log(scale) - 1.5 * (math.log(0.5 * math.pi) + jnp.log(x)) - 2 * half**2 / x)
    right = scale * jnp.exp(-0.5 * scale**2 * x)
    return jnp.where(x > _TRUNCATION, right, left)


def _truncated_inverse_gaussian(key, z):
    """IG(mean 1/z, shape 1) truncated to (0, t) (Polson et al. 2013, Algorithm 3)."""
    t = _TRUNCATION
    dtype = z.dtype
    mean = 1 / jnp.maximum(z, jnp.finfo(dtype).tiny)

    def propose(carry):
        key, _, _ = carry
        key, k1, k2, k3, k4 = jax.random.split(key, 5)
        # μ > t: X = t / (1 + t E₁)² accepted when E₁² ≤ 2E₂/t and U ≤ exp(−z²X/2).
        e1 = jax.random.exponential(k1, (), dtype)
        e2 = jax.random.exponential(k2, (), dtype)
        candidate_wide = t / (1 + t * e1) ** 2
        u = jax.random.uniform(k3, (), dtype)
        accept_wide = (e1**2 <= 2 * e2 / t) & (u <= jnp.exp(-0.5 * z**2 * candidate_wide))
        # μ ≤ t: an untruncated IG(μ, 1) draw, accepted when below t.
        candidate_narrow = sample_inverse_gaussian(k4, mean[None], jnp.ones((1,), dtype))[0]
        accept_narrow = candidate_narrow < t
        wide = mean > t
        return key, jnp.where(wide, candidate_wide, candidate_narrow), jnp.where(wide, accept_wide, accept_narrow)

    initial = (key, jnp.asarray(t / 2, dtype), jnp.asarray(False))
    _, value, _ = jax.lax.while_loop(lambda carry: ~carry[2], propose, initial)
    return value


def _j_star(key, z):
    """One J*(1, z) variate; PG(1, 2z) = J*(1, z)/4."""
    t = _TRUNCATION
    dtype = z.dtype
    rate = math.pi**2 / 8 + z**2 / 2
    root_t = math.sqrt(t)
    log_ratio = jnp.log(rate) + rate * t
    q_over_p = (4 / math.pi) * (
        jnp.exp(log_ratio - z + log_ndtr((t * z - 1) / root_t))
        + jnp.exp(log_ratio + z + log_ndtr(-(t * z + 1) / root_t))
    )
    exponential_probability = 1 / (1 + q_over_p)

    def attempt(carry):
        key, _, _ = carry
        key, k1, k2, k3, k4 = jax.random.split(key, 5)
        exponential_tail = t + jax.random.exponential(k1, (), dtype) / rate
        body = _truncated_inverse_gaussian(k2, z)
        x = jnp.where(jax.random.uniform(k3, (), dtype) < exponential_probability, exponential_tail, body)
        bound = _series_coefficient(0, x)
        threshold = jax.random.uniform(k4, (), dtype) * bound

        def series_step(state):
            n, partial_sum, _, _ = state
            n = n + 1
            term = _series_coefficient(n, x)
            odd = n % 2 == 1
            partial_sum = jnp.where(odd, partial_sum - term, partial_sum + term)
            accepted = odd & (threshold <= partial_sum)
            rejected = ~odd & (threshold > partial_sum)
            return n, partial_sum, accepted | rejected, accepted

        def undecided(state):
            n, _, decided, _ = state
            return ~decided & (n < _MAX_SERIES_TERMS)

        _, _, _, accepted = jax.lax.while_loop(
            undecided, series_step, (0, bound, jnp.asarray(False), jnp.asarray(False))
        )
        return key, x, accepted

    initial = (key, jnp.asarray(t, dtype), jnp.asarray(False))
    _, value, _ = jax.lax.while_loop(lambda carry: ~carry[2], attempt, initial)
    return value


@jax.jit
def sample_polya_gamma(key: PRNGKeyArray, c: Float[Array, " n"]) -> Float[Array, " n"]:
    """Pólya–Gamma PG(1, c) variates, exact, by Devroye's method: PG(1, c) = J*(1, |c|/2)/4
    (Polson, Scott & Windle 2013, Algorithm 1). Compiled once per shape, so that eager calls
    do not re-trace the rejection loops."""
    keys = jax.random.split(key, c.shape[0])
    return jax.vmap(_j_star)(keys, jnp.abs(c) / 2) / 4
