"""The BVBMC surrogate: a GP of the log density fitted by ML-II on scaled outputs
(thesis §6.1.1.2, eqs. 6.7–6.11) and expressed in raw units for boosting."""

from typing import TYPE_CHECKING

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .. import gp
from .._maximize import maximize
from ..kernels import AbstractKernel, ProductMatern
from ..means import AbstractMean
from ..parameters import Positive

if TYPE_CHECKING:
    from ._learner import BVBMC


def initial_prior(
    X: Float[Array, "C D"], scaled: Float[Array, " C"], mask: Bool[Array, " C"], kernel, learner: "BVBMC"
) -> tuple[AbstractKernel, AbstractMean]:
    """Starting kernel and mean for ML-II in scaled units.

    Kernel (unless given): product Matérn-5/2 with outputscale −C/2 (the reference code's
    start when C < 0, else 1; C from `learner.mean`) and lengthscales the sd of the used
    inputs [ours; the code starts at 1]. Mean: `learner.mean`'s start (`AbstractPriorMean.initial`).
    """
    weights = mask.astype(X.dtype) / jnp.sum(mask.astype(X.dtype))
    centre = weights @ X
    spread = jnp.sqrt(jnp.maximum(weights @ (X - centre[None, :]) ** 2, 1e-12))
    constant = learner.mean.constant(scaled, mask)
    if kernel is None:
        outputscale = jnp.where(constant < 0, -0.5 * constant, 1.0)
        kernel = ProductMatern(2.5, lengthscale=Positive(spread), variance=Positive(outputscale))
    return kernel, learner.mean.initial(X, scaled, mask, spread)


def _log_evidence(prior, data):
    X, scaled, mask, jitter = data
    return gp.log_marginal_likelihood(gp.condition(prior[0], prior[1], X, scaled, jitter, mask=mask))


def fit_prior(
    prior: tuple[AbstractKernel, AbstractMean],
    X: Float[Array, "C D"],
    scaled: Float[Array, " C"],
    mask: Bool[Array, " C"],
    learner: "BVBMC",
) -> tuple[AbstractKernel, AbstractMean]:
    """ML-II (eq. 3.16) of the kernel (and a quadratic mean) on the scaled outputs with the
    fixed jitter noise, by BFGS (`gpcompose.maximize`; the thesis's code uses Adam). A fit
    that ends non-finite keeps the start."""
    count = jnp.sum(mask.astype(X.dtype))
    jitter = jnp.asarray(learner.jitter, X.dtype)
    fitted = maximize(
        _log_evidence,
        prior,
        (X, scaled, mask, jitter),
        max_steps=learner.fit_steps,
        scale=count,
    )
    return fitted.params_or(prior)


def raw_units_posterior(
    prior: tuple[AbstractKernel, AbstractMean],
    X: Float[Array, "C D"],
    y: Float[Array, " C"],
    mask: Bool[Array, " C"],
    shift: Float[Array, ""],
    scale: Float[Array, ""],
    learner: "BVBMC",
) -> gp.ExactPosterior:
    """The GP of ỹ = (y − shift)/scale, re-expressed on y itself: kernel scale² k, mean
    scale · m + shift, noise scale² · jitter. This is the same GP (eqs. 6.7–6.9: every
    BMC mean is rescaled by a·(·) + b and every variance by a²), so boosting and the ELBO
    work in raw units with no further rescaling."""
    kernel, mean = prior
    raw_kernel = (scale**2) * kernel
    raw_mean = learner.mean.raw_units(mean, shift, scale)
    noise = jnp.asarray(learner.jitter, X.dtype) * scale**2
    return gp.condition(raw_kernel, raw_mean, X, y, noise, mask=mask)


def scaled_prediction(
    posterior: gp.ExactPosterior, x: Float[Array, " D"], shift: Float[Array, ""], scale: Float[Array, ""]
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Latent mean and variance at x in the normalised units the acquisitions use."""
    mean, variance = gp.predict(posterior, x[None, :])
    return (mean[0] - shift) / scale, variance[0] / scale**2
