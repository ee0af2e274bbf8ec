import abc

import equinox as eqx
from jaxtyping import Array, ArrayLike, Float


class AbstractLikelihood(eqx.Module):
    """An observation model p(y | f) for a latent function value f.

    `log_prob(y, f)` is elementwise and broadcasts over `y` and `f`; models sum it over
    data points themselves (with an N/|B| factor when they minibatch).
    """

    @abc.abstractmethod
    def log_prob(self, y: Float[ArrayLike, "*batch"], f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """log p(y | f), elementwise."""
