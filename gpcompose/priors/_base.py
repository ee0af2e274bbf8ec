import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray


class AbstractPrior(eqx.Module):
    """A prior density on the constrained value of one hyperparameter (elementwise).

    `log_prob(x)` returns the elementwise log density; parameters sum it over their
    elements. Priors on the log of a positive parameter are written `LogScale(base)`.
    Priors that are proper distributions also give exact draws with `sample`; SteinGP
    initialises its particles from them (Pinder, Nemeth & Leslie 2020, App. 12).
    """

    @abc.abstractmethod
    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        """Elementwise log density at `value`."""

    def sample(self, key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, "*shape"]:
        """Independent draws of `shape`; the prior's parameters are broadcast to `shape`.

        Raises `NotImplementedError` for a prior without a sampler, e.g. an improper one.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no `sample`: only proper priors with an exact sampler can be drawn from."
        )


def sample_dtype(parameter: Array) -> jnp.dtype:
    """The dtype of draws from a prior with this parameter: its own if floating, else the default float."""
    return parameter.dtype if jnp.issubdtype(parameter.dtype, jnp.floating) else jax.dtypes.canonicalize_dtype(float)
