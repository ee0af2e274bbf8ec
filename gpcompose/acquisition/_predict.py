from jaxtyping import Array, Float

from ..gp import ExactPosterior
from ..gp import lookahead_variance as exact_lookahead_variance
from ..gp import predict as exact_predict
from ..sparse import SparsePosterior
from ..sparse import lookahead_variance as sparse_lookahead_variance
from ..sparse import predict as sparse_predict


def latent_predict(
    posterior: ExactPosterior | SparsePosterior, X: Float[Array, "Q D"]
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Latent mean and variance of an exact or a sparse posterior."""
    if isinstance(posterior, SparsePosterior):
        return sparse_predict(posterior, X)
    if isinstance(posterior, ExactPosterior):
        return exact_predict(posterior, X)
    raise ValueError(f"`posterior` must be an ExactPosterior or a SparsePosterior, got {type(posterior).__name__}.")


def latent_lookahead_variance(
    posterior: ExactPosterior | SparsePosterior,
    X_query: Float[Array, "Q D"],
    x: Float[Array, " D"],
    noise_variance: Float[Array, ""],
) -> Float[Array, " Q"]:
    """Latent variance at `X_query` after a hypothetical observation at `x` (no refit)."""
    if isinstance(posterior, SparsePosterior):
        return sparse_lookahead_variance(posterior, X_query, x, noise_variance)
    if isinstance(posterior, ExactPosterior):
        return exact_lookahead_variance(posterior, X_query, x, noise_variance)
    raise ValueError(f"`posterior` must be an ExactPosterior or a SparsePosterior, got {type(posterior).__name__}.")
