import abc

import equinox as eqx
import jax
from jaxtyping import Array, ArrayLike, Float

from .._validation import check_inputs


class AbstractMean(eqx.Module):
    """A prior mean function m(x); `evaluate` on one point, `mean(X)` on a batch."""

    @abc.abstractmethod
    def evaluate(self, x: Float[Array, " D"]) -> Float[Array, ""]:
        """m(x) for one point of shape `(D,)`."""

    def __call__(self, X: Float[ArrayLike, "N D"]) -> Float[Array, " N"]:
        X = check_inputs(X, "X")
        return jax.vmap(self.evaluate)(X)
