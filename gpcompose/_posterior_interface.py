"""The interface of a GP posterior state, implemented by the exact, sparse and square-root
posteriors, so that acquisitions, quadrature and the active learners need not know which."""

import abc
from typing import Self

import equinox as eqx
from jaxtyping import Array, ArrayLike, Bool, Float

from ._jit import public_jit
from ._observations import with_observation_noise
from .kernels import AbstractKernel
from .means import AbstractMean
from .parameters import AbstractParameter, value_of


class AbstractPosterior(eqx.Module):
    """A posterior over a latent function f given noisy observations of it.

    - `predict(X)`: the mean and variance of f at the rows of `X`;
    - `reducible_predict(X)`: the mean and the part of the variance that more observations
      can remove (the variance itself, except for approximations with a variance floor);
    - `lookahead_variance(X_query, x, noise_variance)`: the variance at `X_query` after one
      more observation at `x`, hyperparameters held fixed;
    - `update(x, y, noise_variance)`: the posterior with one more observation, by a rank-1
      update of its factorisation.
    """

    @abc.abstractmethod
    def predict(self, X: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Latent predictive mean and variance at the rows of `X`."""

    def reducible_predict(self, X: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Latent mean and the variance that observations can reduce (here `predict`'s)."""
        return self.predict(X)

    @abc.abstractmethod
    def lookahead_variance(
        self, X_query: Float[ArrayLike, "Q D"], x: Float[ArrayLike, " D"], noise_variance: Float[ArrayLike, ""]
    ) -> Float[Array, " Q"]:
        """Latent variance at `X_query` after a hypothetical observation at `x`."""

    @abc.abstractmethod
    def update(self, x: Float[ArrayLike, " D"], y: Float[ArrayLike, ""], noise_variance: Float[ArrayLike, ""]) -> Self:
        """The posterior after one more observation y at `x` with noise variance σ²."""


class AbstractGaussianPosterior(AbstractPosterior):
    """A posterior whose mean is linear in the observations and whose covariance does not
    depend on them (exact and sparse GP regression), so that every linear functional of f —
    a Bayesian-quadrature integral ∫ f dN, a value f(x) — is Gaussian, and so is a new
    observation y = f(x) + ε of Gaussian noise (`predict_y`).

    Such a posterior is summarised on its support inputs S (the training inputs, or the
    inducing inputs): for functionals L_k with prior cross-covariances c_k = Cov(L_k f, f(S)),
        E[L_k f] = L_k m + `functional_moments(c)[0]`_k,
        Cov(L_j f, L_k f) = Cov_prior(L_j f, L_k f) − `functional_moments(c)[1]`_{jk}.
    """

    kernel: eqx.AbstractVar[AbstractKernel]
    mean: eqx.AbstractVar[AbstractMean]

    @property
    @abc.abstractmethod
    def support(self) -> tuple[Float[Array, "S D"], Bool[Array, " S"]]:
        """The support inputs S and the mask of those in use."""

    def predict_y(
        self, X: Float[ArrayLike, "Q D"], noise_variance: Float[ArrayLike, "*Q"] | AbstractParameter
    ) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """`predict_y(self, X, noise_variance)`."""
        return predict_y(self, X, noise_variance)

    @abc.abstractmethod
    def functional_moments(self, cross: Float[Array, "K S"]) -> tuple[Float[Array, " K"], Float[Array, "K K"]]:
        """The data's shift of the functionals' means and reduction of their covariance, from
        their prior cross-covariances with f(S) (zero in unused columns)."""


@public_jit()
def predict_y(
    posterior: AbstractGaussianPosterior,
    X_new: Float[ArrayLike, "Q D"],
    noise_variance: Float[ArrayLike, "*Q"] | AbstractParameter,
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Predictive mean and variance of new observations y = f(x) + ε, ε ~ N(0, σ²), at `X_new`:
    μ(x) and s²(x) + σ², the latent moments of `posterior.predict` with the noise variance
    added (Rasmussen & Williams 2006, Sec. 2.2, after eq. 2.26; for SGPR, Titsias 2009, Sec. 2).
    One function for every Gaussian posterior, reached as `gp.predict_y` and `sparse.predict_y`.

    `noise_variance` is σ² at the new inputs: a scalar, one value per row of `X_new`, or a
    parameter (e.g. the fitted one passed to `condition`); finite and > 0. It is an argument
    because a posterior conditioned on one noise variance per row has no single noise to reuse.
    """
    mean, variance = posterior.predict(X_new)
    return mean, with_observation_noise(variance, value_of(noise_variance))
