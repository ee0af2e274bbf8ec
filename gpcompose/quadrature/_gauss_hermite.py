import itertools
import math

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

# A tensor grid grows like degree^D; the default degree keeps it below this many nodes.
_DEFAULT_MAX_NODES = 20_000


def default_degree(dimension: int) -> int:
    """Largest 1-D degree (≤ 64) whose tensor grid in `dimension` dims has ≤ 20 000 nodes."""
    return max(2, min(64, int(math.floor(_DEFAULT_MAX_NODES ** (1.0 / max(dimension, 1)) + 1e-9))))


def standard_normal_nodes(dimension: int, degree: int, dtype) -> tuple[Float[Array, "P D"], Float[Array, " P"]]:
    """Tensor-product Gauss–Hermite rule for E_{ξ~N(0, I_D)}[f(ξ)] = Σ_p w_p f(ξ_p).

    From the physicists' rule (nodes x_k, weights v_k for ∫ e^{−x²} f): ξ = √2 x and
    w = v / √π in each dimension (BVBMC thesis eqs. 4.16–4.23).
    """
    nodes_1d, weights_1d = np.polynomial.hermite.hermgauss(degree)
    nodes_1d = math.sqrt(2.0) * nodes_1d
    weights_1d = weights_1d / math.sqrt(math.pi)
    grid = np.array(list(itertools.product(nodes_1d, repeat=dimension))).reshape(-1, dimension)
    weights = np.prod(np.array(list(itertools.product(weights_1d, repeat=dimension))).reshape(-1, dimension), axis=1)
    return jnp.asarray(grid, dtype), jnp.asarray(weights, dtype)
