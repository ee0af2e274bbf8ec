import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_inputs, check_targets
from ..kernels import AbstractKernel
from ..likelihoods import AbstractLikelihood
from ..svgd import SVGDInfo
from ._model import AbstractSteinGPModel, SteinGPParticle


def mixture_moments(
    means: Float[Array, "J Q"], variances: Float[Array, "J Q"]
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Mean and variance of the equally weighted mixture (1/J) Σ_j p_j, from the
    components' means μ_j and variances s_j² (the closed form of the particle mixture of
    Pinder, Nemeth & Leslie 2020, Alg. 2, which estimates these moments by sampling):

        mean = (1/J) Σ_j μ_j,   variance = (1/J) Σ_j (s_j² + μ_j²) − mean².

    The variance is computed as (1/J) Σ_j [s_j² + (μ_j − mean)²], which is the same
    quantity without the cancellation.
    """
    mean = jnp.mean(means, axis=0)
    return mean, jnp.mean(variances + (means - mean[None, :]) ** 2, axis=0)


class SteinGPResult(eqx.Module):
    """The particles of a SteinGP run and the particle-mixture predictive (Pinder et al. 2020, Alg. 2).

    - `model`: the target (data, kernel and likelihood with their priors).
    - `particles`: a `SteinGPParticle` with a leading axis J on every leaf (unconstrained
      hyperparameters and whitened latents).
    - `info`: the `SVGDInfo` of every step, stacked (KSD², bandwidth, finite flags), or
      None when the result was built without it.

    `components` gives the kernels and likelihoods of all particles (read constrained
    values with `.value`, e.g. `result.components[0].lengthscale.value`, shape `(J,)`).
    """

    model: AbstractSteinGPModel
    particles: SteinGPParticle
    info: SVGDInfo | None

    @property
    def num_particles(self) -> int:
        """J, the number of particles."""
        return jax.tree.leaves(self.particles)[0].shape[0]

    @property
    def components(self) -> tuple[AbstractKernel, AbstractLikelihood]:
        """The (kernel, likelihood) of every particle, stacked with a leading axis J."""
        return jax.vmap(self.model.components)(self.particles)

    def _new_inputs(self, X_new: Float[ArrayLike, "Q D"]) -> Float[Array, "Q D"]:
        return check_inputs(X_new, "X_new", dimension=self.model.X.shape[1]).astype(self.model.X.dtype)

    @eqx.filter_jit
    def latent_predictions(self, X_new: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, "J Q"], Float[Array, "J Q"]]:
        """Each particle's latent predictive mean and variance of f(X_new), shape `(J, Q)`."""
        X_new = self._new_inputs(X_new)
        return jax.vmap(lambda particle: self.model.latent_predictive(particle, X_new))(self.particles)

    @eqx.filter_jit
    def predict(self, X_new: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Mean and variance of y* under the particle mixture (1/J) Σ_j p(y* | X_new, λ_j).

        Each particle's predictive moments come from its likelihood
        (`likelihood.predictive_moments`: for a Gaussian, (μ_j, s_j² + σ_j²); for a
        Bernoulli, (p_j, p_j(1 − p_j)) with p_j = p(y* = 1)); they are combined by
        `mixture_moments`, the closed-form limit of SteinGP Alg. 2's sample mean and variance.
        """
        X_new = self._new_inputs(X_new)

        def particle_moments(particle):
            latent_mean, latent_variance = self.model.latent_predictive(particle, X_new)
            _, likelihood = self.model.components(particle)
            return likelihood.predictive_moments(latent_mean, latent_variance)

        return mixture_moments(*jax.vmap(particle_moments)(self.particles))

    @eqx.filter_jit
    def log_predictive_density(
        self, X_new: Float[ArrayLike, "Q D"], y_new: Float[ArrayLike, " Q"]
    ) -> Float[Array, " Q"]:
        """log (1/J) Σ_j p(y*_q | x*_q, λ_j) for each test point, by log-sum-exp over particles.

        Each term is the particle's marginal predictive density
        (`likelihood.log_predictive_density`, exact for Gaussian and probit likelihoods).
        Sum or average the result for a test log-likelihood.
        """
        X_new = self._new_inputs(X_new)
        y_new = check_targets(y_new, "y_new", X_new.shape[0]).astype(X_new.dtype)

        def particle_log_density(particle):
            latent_mean, latent_variance = self.model.latent_predictive(particle, X_new)
            _, likelihood = self.model.components(particle)
            return likelihood.log_predictive_density(y_new, latent_mean, latent_variance)

        log_densities = jax.vmap(particle_log_density)(self.particles)
        return jax.nn.logsumexp(log_densities, axis=0) - math.log(self.num_particles)

    @eqx.filter_jit
    def sample(self, key: PRNGKeyArray, X_new: Float[ArrayLike, "Q D"], num_samples: int) -> Float[Array, "J K Q"]:
        """SteinGP Alg. 2: `num_samples` draws y* per particle, shape `(J, num_samples, Q)`.

        Each draw takes f* from the particle's marginal latent predictive at every point
        independently, then y* ~ p(y* | f*) (`likelihood.sample`). The mean and variance over
        all J·K draws converge to `predict`.
        """
        X_new = self._new_inputs(X_new)
        particle_keys = jax.random.split(key, self.num_particles)

        def particle_samples(particle, particle_key):
            latent_mean, latent_variance = self.model.latent_predictive(particle, X_new)
            _, likelihood = self.model.components(particle)
            latent_key, observation_key = jax.random.split(particle_key)
            shape = (num_samples, X_new.shape[0])
            noise = jax.random.normal(latent_key, shape, X_new.dtype)
            latent = latent_mean[None, :] + jnp.sqrt(latent_variance)[None, :] * noise
            return likelihood.sample(observation_key, latent)

        return jax.vmap(particle_samples)(self.particles, particle_keys)
