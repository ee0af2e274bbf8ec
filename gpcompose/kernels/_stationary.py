import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_inputs
from ..parameters import AbstractParameter, as_positive
from ._base import AbstractKernel, select_dims


def scale_frequencies(standard: Float[Array, "F d"], lengthscale: Float[Array, "*d"]) -> Float[Array, "F d"]:
    """ω = ω₀ / ℓ for a scalar or per-dimension lengthscale, broadcast by rank so that it
    also works under `jax_numpy_rank_promotion="raise"`."""
    return standard / jnp.atleast_1d(lengthscale)[None, :]


def safe_sqrt(squared: Float[Array, ""]) -> Float[Array, ""]:
    """√r² with a zero (not NaN) gradient at r² = 0."""
    positive = squared > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0)


class AbstractStationaryKernel(AbstractKernel):
    """k(x, x′) = σ² ρ(r²) with the ARD-scaled squared distance r² = Σ_d (x_d − x′_d)²/ℓ_d².

    **Arguments:** `lengthscale` ℓ (scalar or one per active dimension), `variance` σ²
    and `active_dims` (indices of the input columns the kernel sees; all by default).
    Numbers are wrapped in `Positive`; pass a parameter to choose its transform or prior.
    """

    lengthscale: AbstractParameter = eqx.field(converter=as_positive, default=1.0)
    variance: AbstractParameter = eqx.field(converter=as_positive, default=1.0)
    active_dims: tuple[int, ...] | None = eqx.field(default=None, static=True)

    @abc.abstractmethod
    def correlation(self, squared_distance: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
        """ρ(r²) elementwise, with ρ(0) = 1."""

    def scaled_difference(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, " d"]:
        """(x − x′)/ℓ on the active dimensions."""
        return (select_dims(self.active_dims, x1) - select_dims(self.active_dims, x2)) / self.lengthscale.value

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        squared_distance = jnp.sum(self.scaled_difference(x1, x2) ** 2)
        return self.variance.value * self.correlation(squared_distance)

    def cross(self, X1: Float[ArrayLike, "N D"], X2: Float[ArrayLike, "M D"]) -> Float[Array, "N M"]:
        """K[i, j] = σ² ρ(r²_ij), with every squared distance from one matrix product
        (`scaled_squared_distances`)."""
        X1 = check_inputs(X1, "X1")
        X2 = check_inputs(X2, "X2", dimension=X1.shape[1])
        return self.variance.value * self.correlation(self.scaled_squared_distances(X1, X2))

    def gram(self, X: Float[ArrayLike, "N D"]) -> Float[Array, "N N"]:
        """K[i, j] = σ² ρ(r²_ij) with r²_ii = 0 exactly, so that the diagonal is σ² as in `diagonal`."""
        X = check_inputs(X, "X")
        squared_distances = self.scaled_squared_distances(X, X)
        squared_distances = jnp.where(jnp.eye(X.shape[0], dtype=bool), 0.0, squared_distances)
        return self.variance.value * self.correlation(squared_distances)

    def scaled_squared_distances(self, X1: Float[Array, "N D"], X2: Float[Array, "M D"]) -> Float[Array, "N M"]:
        """r²_ij = |a_i|² + |b_j|² − 2 a_iᵀb_j with a = (X1 − c)/ℓ and b = (X2 − c)/ℓ on the
        active dimensions, c the mean of X1's finite rows (a constant: r² does not depend on it).

        One (N, d) × (d, M) product instead of N·M·d differences: its reverse-mode derivative
        is a few matrix products rather than an (N, M, d) array (about 20× faster than the
        pairwise form for the Gram matrix's gradient at N = 721, d = 8 on two CPU cores).

        Rounding: the three terms carry errors of a few ε·s_ij, s_ij = |a_i|² + |b_j|² and ε
        the dtype's machine epsilon, so values below 16 ε s_ij are indistinguishable from 0
        and are set to 0: coincident inputs get r² = 0 exactly, as in `evaluate` and
        `diagonal` (which matters for the Matérn-1/2 kernel, linear in r = √r²). Centring keeps
        |a| at the data's spread rather than its offset.
        """
        A = self._scaled_inputs(X1)
        B = self._scaled_inputs(X2)
        finite_rows = jnp.all(jnp.isfinite(A), axis=1, keepdims=True)
        centre = jnp.sum(jnp.where(finite_rows, A, 0.0), axis=0) / jnp.maximum(jnp.sum(finite_rows, dtype=A.dtype), 1.0)
        centre = jax.lax.stop_gradient(centre)[None, :]
        A = A - centre
        B = B - centre
        norms = jnp.sum(A**2, axis=1)[:, None] + jnp.sum(B**2, axis=1)[None, :]
        squared = norms - 2.0 * (A @ B.T)
        rounding = 16.0 * jnp.finfo(squared.dtype).eps * jax.lax.stop_gradient(norms)
        return jnp.where(squared > rounding, squared, 0.0)

    def _scaled_inputs(self, X: Float[Array, "N D"]) -> Float[Array, "N d"]:
        """X/ℓ on the active dimensions."""
        return select_dims(self.active_dims, X) / jnp.atleast_1d(self.lengthscale.value)[None, :]


class AbstractSpectralKernel(AbstractStationaryKernel):
    """A stationary kernel that can sample its normalised spectral density.

    Bochner: k(τ) = σ² E_ω[cos(ωᵀτ)] with ω drawn from the spectral density; random
    Fourier features (`random_features`) use these frequencies.
    """

    @abc.abstractmethod
    def spectral_frequencies(self, key: PRNGKeyArray, num_features: int, dimension: int) -> Float[Array, "F d"]:
        """`num_features` frequencies ω on the `dimension` active input coordinates."""
