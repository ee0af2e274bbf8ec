import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree

from ..kernels import AbstractKernel
from ..likelihoods import AbstractLikelihood
from ..parameters import log_prior, partition, with_prior_draws


class SteinGPParticle(eqx.Module):
    """One SteinGP particle λ = (θ, ν) in unconstrained coordinates.

    - `hyperparameters`: the trainable leaves of `(kernel, likelihood)` (the unconstrained
      coordinates u of every non-`Fixed` parameter; `None` elsewhere), as returned by
      `gpcompose.parameters.partition`.
    - `latents`: the whitened latent values ν (N of them for the whitened model, M for the
      sparse model), or `None` for the conjugate model.

    A stack of particles is the same module with a leading axis J on every leaf.
    """

    hyperparameters: PyTree
    latents: Float[Array, " L"] | None


class AbstractSteinGPModel(eqx.Module):
    """A SteinGP target: an unnormalised log posterior over particles, and per-particle
    latent predictions.

    **Fields** (abstract): `kernel` and `likelihood` (their parameters carry the priors and
    the initial values), the training inputs `X` `(N, D)` and targets `y` `(N,)`.

    Subclasses give the log density log p(λ | X, y) + const of a particle, with minibatch
    indices where the model supports them, and the latent predictive N(f*; μ, s²) of one
    particle at new inputs.
    """

    kernel: eqx.AbstractVar[AbstractKernel]
    likelihood: eqx.AbstractVar[AbstractLikelihood]
    X: eqx.AbstractVar[Float[Array, "N D"]]
    y: eqx.AbstractVar[Float[Array, " N"]]

    @property
    def num_data(self) -> int:
        """N, the number of training points."""
        return self.X.shape[0]

    @property
    @abc.abstractmethod
    def num_latents(self) -> int | None:
        """Length of ν, or None when the model has no latents."""

    @abc.abstractmethod
    def log_density(self, particle: SteinGPParticle, batch_indices: Int[Array, " B"] | None = None) -> Float[Array, ""]:
        """log p(y | λ) + log p₀(λ) up to a constant (an unbiased minibatch estimate of it
        when `batch_indices` is given), in the unconstrained coordinates (with log-Jacobians)."""

    @abc.abstractmethod
    def latent_predictive(
        self, particle: SteinGPParticle, X_new: Float[Array, "Q D"]
    ) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Mean and variance of the latent f(X_new) given one particle."""

    def components(self, particle: SteinGPParticle) -> tuple[AbstractKernel, AbstractLikelihood]:
        """The kernel and likelihood at the particle's hyperparameters."""
        _, rest = partition((self.kernel, self.likelihood))
        return eqx.combine(particle.hyperparameters, rest)

    def log_prior(self, particle: SteinGPParticle) -> Float[Array, ""]:
        """log p₀(θ) + log|dθ/du| + log N(ν; 0, I) up to the constant of N(ν; 0, I)."""
        hyperprior = log_prior(self.components(particle))
        if particle.latents is None:
            return hyperprior
        return hyperprior - 0.5 * jnp.sum(particle.latents**2)

    def initial_particle(self, key: PRNGKeyArray, scale: Float[Array, ""] | None = None) -> SteinGPParticle:
        """One initial particle; its latents are always ν ~ N(0, I), their prior.

        - `scale=None`: SteinGP's initialisation (Pinder, Nemeth & Leslie 2020, App. 12): each
          hyperparameter's constrained value θ is drawn from its prior (U[0, 1) above its
          lower bound when it has none) and stored as u = T⁻¹(θ)
          (`gpcompose.parameters.with_prior_draws`).
        - `scale` given: u = u₀ + scale · ε, ε ~ N(0, I), around the initial unconstrained
          hyperparameters u₀.
        """
        hyper_key, latent_key = jax.random.split(key)
        if scale is None:
            hyperparameters, _ = partition(with_prior_draws((self.kernel, self.likelihood), hyper_key))
        else:
            hyperparameters, _ = partition((self.kernel, self.likelihood))
            leaves, treedef = jax.tree.flatten(hyperparameters)
            leaf_keys = jax.random.split(hyper_key, max(len(leaves), 1))
            leaves = [
                leaf + scale * jax.random.normal(leaf_key, leaf.shape, leaf.dtype)
                for leaf, leaf_key in zip(leaves, leaf_keys)
            ]
            hyperparameters = jax.tree.unflatten(treedef, leaves)
        latents = None
        if self.num_latents is not None:
            latents = jax.random.normal(latent_key, (self.num_latents,), self.X.dtype)
        return SteinGPParticle(hyperparameters, latents)
