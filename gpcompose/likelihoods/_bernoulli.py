from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr, ndtr
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import as_floating, raise_if
from ._base import AbstractLikelihood


def binary_labels(y: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
    """`y` as a floating array of labels in {0, 1}; any other value is an error naming `y`,
    raised now for concrete labels and at run time (`eqx.error_if`) for traced ones."""
    y = as_floating(y, "y")
    valid = jnp.all((y == 0) | (y == 1))
    got = "" if isinstance(valid, jax.core.Tracer) else f", got the values {np.unique(np.asarray(y)).tolist()[:6]}"
    message = f"`y` must hold Bernoulli labels in {{0, 1}} (for labels in {{-1, 1}} pass (y + 1) / 2){got}."
    return raise_if(y, ~valid, message)


class Bernoulli(AbstractLikelihood):
    """p(y | f) for binary labels y ∈ {0, 1} (other labels are an error; for y ∈ {−1, 1}
    pass (y + 1)/2): p(y = 1 | f) = Φ(f) (`link="probit"`) or
    σ(f) = 1/(1 + e^{−f}) (`link="logit"`).

    Both links are symmetric, so with the sign s = 2y − 1,

        log p(y | f) = log Φ(s f)  (probit, `log_ndtr`),   log σ(s f)  (logit, `log_sigmoid`),

    which stay finite and accurate for large |f| (SteinGP, Pinder, Nemeth & Leslie 2020, §5.1,
    uses a Bernoulli likelihood). With the probit link the Gaussian predictive is closed form,
    p(y = 1) = Φ(m/√(1 + v)) for f ~ N(m, v) (Rasmussen & Williams 2006, eq. 3.80); the logit
    link uses Gauss–Hermite quadrature.

    **Arguments:** `link`, `"probit"` (default) or `"logit"`.
    """

    link: Literal["probit", "logit"] = eqx.field(static=True, default="probit")

    def __check_init__(self):
        if self.link not in ("probit", "logit"):
            raise ValueError(f"`link` must be 'probit' or 'logit', got {self.link!r}.")

    def _log_inverse_link(self, f: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
        return log_ndtr(f) if self.link == "probit" else jax.nn.log_sigmoid(f)

    def targets(self, y: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """The labels `y`, checked to be in {0, 1} (`binary_labels`)."""
        return binary_labels(y)

    def log_prob(self, y: Float[ArrayLike, "*batch"], f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        f = jnp.asarray(f)
        sign = 2 * self.targets(y).astype(f.dtype) - 1
        return self._log_inverse_link(sign * f)

    def log_predictive_density(
        self, y: Float[ArrayLike, "*batch"], mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> Float[Array, "*batch"]:
        """log p(y) for f ~ N(m, v): log Φ(s m/√(1 + v)) for the probit link, quadrature for the logit."""
        if self.link == "logit":
            return super().log_predictive_density(y, mean, variance)
        mean = jnp.asarray(mean)
        sign = 2 * self.targets(y).astype(mean.dtype) - 1
        return log_ndtr(sign * mean / jnp.sqrt(1 + jnp.asarray(variance)))

    def predictive_moments(
        self, mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
        """(p, p(1 − p)) with p = p(y = 1) for f ~ N(m, v)."""
        mean = jnp.asarray(mean)
        probability = jnp.exp(self.log_predictive_density(jnp.ones_like(mean), mean, variance))
        return probability, probability * (1 - probability)

    def sample(self, key: PRNGKeyArray, f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        f = jnp.asarray(f)
        probability = ndtr(f) if self.link == "probit" else jax.nn.sigmoid(f)
        return jax.random.bernoulli(key, probability).astype(f.dtype)
