"""The f-step of boosted variational inference with Bayesian Monte Carlo: the residual
ELBO (RELBO) of a new diagonal Gaussian component and its maximisation."""

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, PRNGKeyArray

from .._finite import finite_optimiser_step
from ..gp import ExactPosterior
from ..mixtures import AbstractGaussianMixture, GaussianMixture
from ..quadrature import integrate_components
from ..sparse import SparsePosterior


def gaussian_as_mixture(mean: Float[Array, " D"], log_scale: Float[Array, " D"]) -> GaussianMixture:
    """N(mean, diag(e^{2 log_scale})) as a one-component `GaussianMixture` (a quadrature measure)."""
    return GaussianMixture(jnp.zeros((1,), mean.dtype), mean[None, :], log_scale[None, :], jnp.ones((1,), bool))


def relbo(
    posterior: ExactPosterior | SparsePosterior,
    mixture: AbstractGaussianMixture,
    mean: Float[Array, " D"],
    log_scale: Float[Array, " D"],
    noise: Float[Array, "S D"],
    *,
    regularization: Float[Array, ""],
    log_stabilizer: Float[Array, ""],
) -> Float[Array, ""]:
    """RELBO^{δ_D}_D(μ, Σ) of a candidate component f = N(μ, Σ), Σ = diag(σ²)
    (BVBMC thesis eqs. 5.45, 6.1 and 6.6, with the λ/4 that (6.5)–(6.6) drop):

        ∫ m_D(θ) f(θ) dθ  −  E_f[log(q(θ) + δ_D)]  +  (λ/4) log|Σ|.

    - The first term is the Bayesian-quadrature mean of the GP `posterior` against f,
      in closed form (`quadrature.integrate_components`).
    - The cross-entropy against the current mixture q is a reparameterised Monte Carlo
      average over θ_s = μ + σ ⊙ ε_s with ε = `noise`; δ_D = e^{log_stabilizer} keeps
      the objective bounded in the tails, where m_D is flat and −log q grows without bound.
    - λ = `regularization` is the entropy (log-determinant) regulariser (Guo et al. 2016;
      Locatello et al. 2018): λ/4 log|Σ| = (λ/2)(H[f] − const).

    Differentiable in `mean` and `log_scale` (σ = e^{log_scale}).
    """
    bmc_term = integrate_components(posterior, gaussian_as_mixture(mean, log_scale))[0][0]
    samples = mean[None, :] + jnp.exp(log_scale)[None, :] * noise
    log_q = mixture.log_prob(samples)
    cross_entropy = jnp.mean(jnp.logaddexp(log_q, log_stabilizer))
    return bmc_term - cross_entropy + 0.5 * regularization * jnp.sum(log_scale)


def fit_component(
    posterior: ExactPosterior | SparsePosterior,
    mixture: AbstractGaussianMixture,
    key: PRNGKeyArray,
    *,
    regularization: Float[Array, ""],
    log_stabilizer: Float[Array, ""],
    num_steps: int,
    learning_rate: Float[Array, ""],
    num_samples: int,
    bounds: tuple[Float[Array, " D"], Float[Array, " D"]] | None = None,
) -> tuple[Float[Array, " D"], Float[Array, " D"], Float[Array, ""]]:
    """The f-step: maximise `relbo` over (μ, log σ) by Adam with fresh reparameterisation
    noise (`num_samples` draws) at every one of `num_steps` steps.

    The search starts at one draw θ₀ ~ q with the scales σ₀ of the component it came from
    (the reference code starts at μ ~ q, σ² ~ HalfNormal(1); using σ₀ [ours] makes the start
    scale-free), and moves μ in units of σ₀. Non-finite gradients are zeroed.

    `bounds = (lower, upper)` keeps the component in that box (mean in it, standard
    deviations at most its width; `AbstractGaussianMixture.clip_to_box`) from the start and
    after every step (projected Adam).

    **Returns:** (μ, log σ, RELBO at the result, on fresh noise).
    """
    choice_key, start_key, steps_key, final_key = jax.random.split(key, 4)
    dtype = mixture.component_means.dtype
    dimension = mixture.dimension
    index = jax.random.categorical(choice_key, mixture.log_weights)
    start_scale = jnp.sqrt(mixture.component_variances[index])
    start_mean = mixture.component_means[index] + start_scale * jax.random.normal(start_key, (dimension,), dtype)

    def clip(mean, log_scale):
        if bounds is None:
            return mean, log_scale
        component = gaussian_as_mixture(mean, log_scale).clip_to_box(*bounds)
        return component.means[0], component.log_scales[0]

    start_mean, start_log_scale = clip(start_mean, jnp.log(start_scale))
    start_scale = jnp.exp(start_log_scale)

    def project(parameters):
        offset, log_scale = parameters
        mean, log_scale = clip(start_mean + start_scale * offset, log_scale)
        return (mean - start_mean) / start_scale, log_scale

    def objective(parameters, noise):
        offset, log_scale = parameters
        return relbo(
            posterior,
            mixture,
            start_mean + start_scale * offset,
            log_scale,
            noise,
            regularization=regularization,
            log_stabilizer=log_stabilizer,
        )

    optimiser = optax.adam(learning_rate)

    def step(carry, step_key):
        parameters, optimiser_state = carry
        noise = jax.random.normal(step_key, (num_samples, dimension), dtype)
        gradient = jax.grad(lambda p: -objective(p, noise))(parameters)
        parameters, optimiser_state = finite_optimiser_step(optimiser, gradient, optimiser_state, parameters)
        return (project(parameters), optimiser_state), None

    parameters = (jnp.zeros((dimension,), dtype), start_log_scale)
    (parameters, _), _ = jax.lax.scan(
        step, (parameters, optimiser.init(parameters)), jax.random.split(steps_key, num_steps)
    )
    offset, log_scale = parameters
    final_noise = jax.random.normal(final_key, (num_samples, dimension), dtype)
    return start_mean + start_scale * offset, log_scale, objective(parameters, final_noise)
