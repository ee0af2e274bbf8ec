"""The BO surrogate: a GP on the standardised outputs, or the square-root GP on them,
with SE-ARD hyperparameters refitted by ML-II (with weak priors) at every iteration."""

import math
from collections.abc import Callable

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from .. import gp
from .._maximize import maximize
from .._posterior_interface import AbstractPosterior
from ..bounded import (
    RootPriorMean,
    condition_square_root,
    root_prior_mean,
    square_root_pathwise,
    square_root_targets,
)
from ..kernels import SquaredExponential
from ..means import AbstractMean, Zero
from ..parameters import Positive
from ..priors import LogNormal
from ..sampling import AbstractSamples, pathwise

INITIAL_LENGTHSCALE = 0.3  # [ours] on the unit cube
INITIAL_NOISE = 1e-3  # [ours] standardised units


class Surrogate(eqx.Module):
    """A fitted exact GP or square-root GP with its noise variance: `predict` (latent mean and
    variance of f; linearised for the square-root GP), `lookahead_variance` (after adding a
    point) and `samples` (pathwise, by the `sampler` that matches the posterior)."""

    posterior: AbstractPosterior
    noise_variance: Float[Array, ""]
    sampler: Callable[..., AbstractSamples] = eqx.field(static=True)

    def predict(self, X: Float[Array, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Latent mean and variance of f at `X` (`AbstractPosterior.predict`)."""
        return self.posterior.predict(X)

    def lookahead_variance(self, X_query: Float[Array, "Q D"], x: Float[Array, " D"]) -> Float[Array, " Q"]:
        """Latent variance at `X_query` after one more noisy observation at `x` (the variance
        reduction that entropy-search acquisitions need); hyperparameters held fixed."""
        return self.posterior.lookahead_variance(X_query, x, self.noise_variance)

    def samples(self, key: PRNGKeyArray, num_samples: int, num_features: int) -> AbstractSamples:
        """`num_samples` pathwise posterior functions with `num_features` random Fourier features
        (`sampling.pathwise`, or `bounded.square_root_pathwise` for the square-root GP)."""
        return self.sampler(key, self.posterior, num_samples, num_features)


def _initial_parameters(dimension: int, variance: Float[Array, ""]) -> dict:
    """SE-ARD kernel and noise with weak log-normal priors (one e-fold in lengthscale and
    variance, two in noise) [ours], so that ML-II on a handful of points stays sane."""
    dtype = variance.dtype
    lengthscale = jnp.full((dimension,), INITIAL_LENGTHSCALE, dtype)
    kernel = SquaredExponential(
        lengthscale=Positive(lengthscale, prior=LogNormal(jnp.log(lengthscale), jnp.ones((), dtype))),
        variance=Positive(variance, prior=LogNormal(jnp.log(variance), jnp.ones((), dtype))),
    )
    noise = Positive(
        jnp.asarray(INITIAL_NOISE, dtype),
        minimum=1e-6,
        prior=LogNormal(jnp.asarray(math.log(INITIAL_NOISE), dtype), jnp.asarray(2.0, dtype)),
    )
    return {"kernel": kernel, "noise": noise}


def _log_marginal_likelihood(parameters: dict, data) -> Float[Array, ""]:
    X, targets, mask, mean = data
    posterior = gp.condition(parameters["kernel"], mean, X, targets, parameters["noise"], mask=mask)
    return gp.log_marginal_likelihood(posterior)


def fit_surrogate(
    X: Float[Array, "C D"],
    y: Float[Array, " C"],
    mask: Bool[Array, " C"],
    offset: Float[Array, ""] | None,
    fit_steps: int,
    root_center: RootPriorMean = "data",
) -> Surrogate:
    """ML-II fit (optimistix BFGS through `maximize`) of a GP to standardised outputs `y`
    (zero prior mean), or with an `offset` c to h = √(2(c − y)) for the square-root GP
    (Alg. 1; prior mean of h `bounded.root_prior_mean(c, root_center)`). A fit that ends
    non-finite keeps the initial values."""
    mean: AbstractMean
    count = jnp.maximum(jnp.sum(mask), 1).astype(X.dtype)
    if offset is None:
        targets, mean = y, Zero()
        variance = jnp.ones((), X.dtype)
    else:
        targets, _ = square_root_targets(y, offset, mask)
        mean = root_prior_mean(offset, root_center)
        spread = jnp.sum(jnp.where(mask, (targets - mean.constant.value) ** 2, 0.0)) / count
        variance = jnp.maximum(spread, 0.05)
    initial = _initial_parameters(X.shape[1], variance)
    data = (X, targets, mask, mean)
    fit = maximize(_log_marginal_likelihood, initial, data, max_steps=fit_steps, scale=count)
    parameters = fit.params_or(initial)
    noise_variance = parameters["noise"].value
    if offset is None:
        posterior = gp.condition(parameters["kernel"], mean, X, targets, noise_variance, mask=mask)
        return Surrogate(posterior, noise_variance, pathwise)
    posterior = condition_square_root(parameters["kernel"], X, y, noise_variance, offset, mean=mean, mask=mask)
    return Surrogate(posterior, noise_variance, square_root_pathwise)
