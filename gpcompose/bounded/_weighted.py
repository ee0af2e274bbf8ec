import jax
from jaxtyping import Array, ArrayLike, Float

from ..sampling import AbstractSamples


def weighted_mean(
    samples: AbstractSamples, log_weights: Float[Array, " M"], X: Float[ArrayLike, "Q D"]
) -> Float[Array, " Q"]:
    """ĝ(X) = Σ_m π(g_m) g_m(X) / Σ_m π(g_m) (Nguyen et al. 2021, eq. 3, normalised; Alg. 1 prints it
    unnormalised), with the weights formed by a softmax of the log weights."""
    if log_weights.shape != (samples.num_samples,):
        raise ValueError(f"`log_weights` must have shape ({samples.num_samples},), got shape {log_weights.shape}.")
    return jax.nn.softmax(log_weights) @ samples(X)
