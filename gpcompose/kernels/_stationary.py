import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_inputs
from ..parameters import AbstractParameter, positive_converter
from ._base import AbstractKernel, as_active_dims, check_per_dimension, select_dims


def scale_frequencies(standard: Float[Array, "F d"], lengthscale: Float[Array, "*d"]) -> Float[Array, "F d"]:
    """ω = ω₀ / ℓ for a scalar or per-dimension lengthscale, broadcast by rank so that it
    also works under `jax_numpy_rank_promotion="raise"`."""
    return standard / jnp.atleast_1d(lengthscale)[None, :]


def safe_sqrt(squared: Float[Array, ""]) -> Float[Array, ""]:
    """√r² with a zero (not NaN) gradient at r² = 0; a NaN r² stays NaN (0 · r² there)."""
    positive = squared > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0 * squared)


@jax.custom_jvp
def squared_distances(A: Float[Array, "N d"], B: Float[Array, "M d"]) -> Float[Array, "N M"]:
    """Pairwise squared Euclidean distances r²_ij = Σ_d (a_id − b_jd)² between the rows of
    `A` (N, d) and `B` (M, d), as an (N, M) array.

    Each entry is summed from its coordinate differences, so it is accurate to a few ε r²_ij
    even for near-coincident rows, and for A = B symmetric to the same few ε. Values below
    ε² (|a_i|² + |b_j|²) are set to 0: compiled code may contract a = x/ℓ and the difference
    into one multiply-add, so equal inputs can differ by the rounding of x/ℓ, and the cut-off
    keeps r² = 0 and k = σ² exactly at coincident rows (as in a kernel's `evaluate` and
    `diagonal`). A row with a NaN gives NaN distances (not 0, which would read as k = σ²).

    The derivative uses the expansion r²_ij = |a_i|² + |b_j|² − 2 a_iᵀb_j instead, whose
    reverse mode is a few (N, d) × (d, M) matrix products rather than an (N, M, d) array of
    differences. The expansion is not used for values: its rounding error of a few
    ε (|a_i|² + |b_j|²) is most of r² for near-coincident rows (through √r² in a Matérn-1/2
    kernel, an error of order √ε in k and an asymmetric Gram).
    """
    squared = jnp.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)
    scale = jnp.sum(A**2, axis=1)[:, None] + jnp.sum(B**2, axis=1)[None, :]
    negligible = (squared <= jnp.finfo(squared.dtype).eps ** 2 * scale) & jnp.isfinite(scale)
    return jnp.where(negligible, 0.0, squared)  # NaN rows stay NaN, infinite ones infinitely far


@squared_distances.defjvp
def _squared_distances_jvp(primals, tangents):
    """d r²_ij = 2 (a_i − b_j)ᵀ(da_i − db_j), written as
    2 a_iᵀda_i + 2 b_jᵀdb_j − 2 a_iᵀdb_j − 2 da_iᵀb_j with a, b centred on the mean c of A's
    finite rows (a constant: the difference does not depend on it), which keeps the
    cancellation error at ε |a − c| |da| rather than ε |a| |da|. At coincident rows the
    result is rounding-sized rather than exactly 0; there r² = 0, where `safe_sqrt` has a zero
    derivative (Matérn-1/2) and the smooth correlations a finite ρ′(0).

    Not masked with `jnp.where(r² > 0, ·, 0)`: XLA:CPU miscompiles the reverse pass of that
    mask when ℓ has shape (1,) (a wrong jitted Gram gradient, correct without jit and in
    forward mode), which `test_gram_gradient_under_jit_equals_forward_mode` guards against."""
    A, B = primals
    dA, dB = tangents
    finite_rows = jnp.all(jnp.isfinite(A), axis=1, keepdims=True)
    centre = jnp.sum(jnp.where(finite_rows, A, 0.0), axis=0) / jnp.maximum(jnp.sum(finite_rows, dtype=A.dtype), 1.0)
    centre = jax.lax.stop_gradient(centre)
    a = A - centre[None, :]
    b = B - centre[None, :]
    tangent = (
        2.0 * jnp.sum(a * dA, axis=1)[:, None] + 2.0 * jnp.sum(b * dB, axis=1)[None, :] - 2.0 * (a @ dB.T + dA @ b.T)
    )
    return squared_distances(A, B), tangent


class AbstractStationaryKernel(AbstractKernel):
    """k(x, x′) = σ² ρ(r²) with the ARD-scaled squared distance r² = Σ_d (x_d − x′_d)²/ℓ_d².

    **Arguments:** `lengthscale` ℓ (scalar or one per active dimension), `variance` σ²
    and `active_dims` (indices of the input columns the kernel sees; all by default).
    Numbers are wrapped in `Positive`; pass a parameter to choose its transform or prior.
    """

    lengthscale: AbstractParameter = eqx.field(converter=positive_converter("lengthscale"), default=1.0)
    variance: AbstractParameter = eqx.field(converter=positive_converter("variance"), default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(converter=as_active_dims, default=None, static=True)

    @abc.abstractmethod
    def correlation(self, squared_distance: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
        """ρ(r²) elementwise, with ρ(0) = 1."""

    def scaled_difference(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, " d"]:
        """(x − x′)/ℓ on the active dimensions."""
        difference = select_dims(self.active_dims, x1) - select_dims(self.active_dims, x2)
        return difference / self.checked_lengthscale(difference.shape[-1])

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        squared_distance = jnp.sum(self.scaled_difference(x1, x2) ** 2)
        return self.variance.value * self.correlation(squared_distance)

    def cross(self, X1: Float[ArrayLike, "N D"], X2: Float[ArrayLike, "M D"]) -> Float[Array, "N M"]:
        """K[i, j] = σ² ρ(r²_ij) from all squared distances at once (`squared_distances`); `gram`
        is `cross(X, X)`, with diagonal σ² exactly."""
        X1 = check_inputs(X1, "X1")
        X2 = check_inputs(X2, "X2", dimension=X1.shape[1])
        return self.variance.value * self.correlation(self.scaled_squared_distances(X1, X2))

    def scaled_squared_distances(self, X1: Float[Array, "N D"], X2: Float[Array, "M D"]) -> Float[Array, "N M"]:
        """r²_ij = Σ_d (a_id − b_jd)² with a = X1/ℓ and b = X2/ℓ on the active dimensions
        (`squared_distances`)."""
        return squared_distances(self._scaled_inputs(X1), self._scaled_inputs(X2))

    def _scaled_inputs(self, X: Float[Array, "N D"]) -> Float[Array, "N d"]:
        """X/ℓ on the active dimensions."""
        active = select_dims(self.active_dims, X)
        return active / jnp.atleast_1d(self.checked_lengthscale(active.shape[-1]))[None, :]

    def checked_lengthscale(self, num_active: int) -> Float[Array, "*d"]:
        """ℓ, shared or one per active column (`check_per_dimension`)."""
        return check_per_dimension(self, "lengthscale", self.lengthscale.value, num_active)


class AbstractSpectralKernel(AbstractStationaryKernel):
    """A stationary kernel that can sample its normalised spectral density.

    Bochner: k(τ) = σ² E_ω[cos(ωᵀτ)] with ω drawn from the spectral density; random
    Fourier features (`random_features`) use these frequencies.
    """

    @abc.abstractmethod
    def spectral_frequencies(self, key: PRNGKeyArray, num_features: int, dimension: int) -> Float[Array, "F d"]:
        """`num_features` frequencies ω on the `dimension` active input coordinates."""
