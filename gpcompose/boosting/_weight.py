"""The w-step of boosted variational inference: the weight of the new component by a
bracketed root finder on the derivative of the concave 1-D objective 𝓛(w)."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Float, PRNGKeyArray

from ..gp import ExactPosterior
from ..mixtures import AbstractGaussianMixture, diagonal_gaussian_log_prob
from ..quadrature import integrate_components
from ..sparse import SparsePosterior
from ._relbo import gaussian_as_mixture


class WeightProblem(eqx.Module):
    """Everything 𝓛(w) needs once the new component f = N(μ, Σ) is fixed.

    With q_w = (1 − w) q + w f (BVBMC thesis eqs. 5.39–5.41, 6.2–6.3),

        𝓛(w) = (1 − w) A_q + w A_f + H[q_w],  A_q = ∫ m_D q,  A_f = ∫ m_D f,

    where the A's are Bayesian-quadrature means (closed form). The entropy is estimated
    with points θ_s drawn half from q and half from f, i.e. from p = (q + f)/2 (balance
    importance sampling):

        Ĥ[q_w] = (1/S) Σ_s φ(q_w(θ_s)) / p(θ_s),  φ(u) = −u log u.

    φ is concave and q_w(θ) is affine in w, so 𝓛̂ is exactly concave in w for every set of
    draws, and its derivative

        𝓛̂′(w) = A_f − A_q − (1/S) Σ_s [(f − q)/p](θ_s) (log q_w(θ_s) + 1)

    is non-increasing: an unbiased estimate of 𝓛′(w) = ∫ (m_D − log q_w)(f − q) (eq. 5.41;
    the "+1" integrates to zero against f − q; chapter 6 prints the wrong sign).
    """

    mixture_integral: Float[Array, ""]
    component_integral: Float[Array, ""]
    log_q: Float[Array, " S"]
    log_f: Float[Array, " S"]

    def _log_mixture(self, w):
        return jnp.logaddexp(jnp.log1p(-w) + self.log_q, jnp.log(w) + self.log_f)

    def _log_proposal(self):
        return jnp.logaddexp(self.log_q, self.log_f) - math.log(2.0)

    def objective(self, w: Float[Array, ""]) -> Float[Array, ""]:
        """𝓛̂(w) for w ∈ [0, 1]."""
        log_q_w = self._log_mixture(w)
        entropy = -jnp.mean(jnp.exp(log_q_w - self._log_proposal()) * log_q_w)
        return (1.0 - w) * self.mixture_integral + w * self.component_integral + entropy

    def derivative(self, w: Float[Array, ""]) -> Float[Array, ""]:
        """𝓛̂′(w) for w ∈ [0, 1] (finite at both ends)."""
        log_proposal = self._log_proposal()
        ratio = jnp.exp(self.log_f - log_proposal) - jnp.exp(self.log_q - log_proposal)
        return self.component_integral - self.mixture_integral - jnp.mean(ratio * (self._log_mixture(w) + 1.0))


def weight_problem(
    posterior: ExactPosterior | SparsePosterior,
    mixture: AbstractGaussianMixture,
    mean: Float[Array, " D"],
    log_scale: Float[Array, " D"],
    key: PRNGKeyArray,
    num_samples: int,
) -> WeightProblem:
    """The `WeightProblem` of adding N(mean, diag(e^{2 log_scale})) to `mixture`, with
    ⌈num_samples/2⌉ draws from each of q and f."""
    mixture_key, component_key = jax.random.split(key)
    half = -(-num_samples // 2)
    component_means, _ = integrate_components(posterior, mixture)
    mixture_integral = mixture.weights @ component_means
    component_integral = integrate_components(posterior, gaussian_as_mixture(mean, log_scale))[0][0]
    noise = jax.random.normal(component_key, (half, mean.shape[0]), mean.dtype)
    points = jnp.concatenate([mixture.sample(mixture_key, half), mean[None, :] + jnp.exp(log_scale)[None, :] * noise])
    log_q = mixture.log_prob(points)
    variance = jnp.exp(2.0 * log_scale)
    log_f = jax.vmap(lambda point: diagonal_gaussian_log_prob(point, mean, variance))(points)
    return WeightProblem(mixture_integral, component_integral, log_q, log_f)


def solve_weight(problem: WeightProblem, tolerance: float = 1e-8) -> Float[Array, ""]:
    """argmax_{w∈[0,1]} 𝓛̂(w): the root of the non-increasing 𝓛̂′ by bisection (optimistix),
    which converges to the end of [0, 1] nearest the root when 𝓛̂′ keeps one sign there
    (w = 0: the component is useless; w = 1: it replaces the mixture)."""
    dtype = problem.log_q.dtype
    solver = optx.Bisection(rtol=tolerance, atol=tolerance, flip=True)
    solution = optx.root_find(
        lambda w, _: problem.derivative(w),
        solver,
        jnp.asarray(0.5, dtype),
        options=dict(lower=jnp.asarray(0.0, dtype), upper=jnp.asarray(1.0, dtype)),
        max_steps=4 * int(math.ceil(-math.log2(tolerance))),
        throw=False,
    )
    return jnp.clip(solution.value, 0.0, 1.0)
