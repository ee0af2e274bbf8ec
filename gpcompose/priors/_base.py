import abc

import equinox as eqx
from jaxtyping import Array, ArrayLike, Float


class AbstractPrior(eqx.Module):
    """A prior density on the constrained value of one hyperparameter (elementwise).

    `log_prob(x)` returns the elementwise log density; parameters sum it over their
    elements. Priors on the log of a positive parameter are written `LogScale(base)`.
    """

    @abc.abstractmethod
    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        """Elementwise log density at `value`."""
