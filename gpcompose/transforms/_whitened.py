import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._linalg import solve_triangular
from ._bounded import BoundedTransform


class WhitenedTransform(eqx.Module):
    """A `BoundedTransform` x ↦ u followed by an affine whitening u ↦ w = L⁻¹(u − m)
    (VBMC's "variational whitening", Acerbi 2020; Li, Clarté & Acerbi 2023, App. A.5, describe it as
    background without saying whether SVBMC uses it).

    With m and L L^T the mean and covariance of a variational posterior in u, that
    posterior has zero mean and identity covariance in w, so an axis-aligned kernel, the
    negative-quadratic mean and a diagonal mixture family fit a correlated posterior as
    well as an uncorrelated one. A density p(x) becomes p(x(w)) |dx/dw| in w, with
        log|dx/dw| = log|dx/du|(u(w)) + Σ_d log|L_dd|,   u(w) = m + L w.
    The identity whitening (m = 0, L = I) is the bounded transform itself.

    **Arguments:** the `bounded` transform, the `shift` m (D,) and the lower-triangular
    `factor` L (D, D) with a positive diagonal.
    """

    bounded: BoundedTransform
    shift: Float[Array, " D"]
    factor: Float[Array, "D D"]

    def __check_init__(self):
        dimension = self.bounded.dimension
        if self.shift.shape != (dimension,) or self.factor.shape != (dimension, dimension):
            raise ValueError(
                f"`shift` must have shape ({dimension},) and `factor` ({dimension}, {dimension}) to match "
                f"the bounded transform, got {self.shift.shape} and {self.factor.shape}."
            )

    @classmethod
    def identity(cls, bounded: BoundedTransform) -> "WhitenedTransform":
        """w = u: no whitening."""
        dimension = bounded.dimension
        return cls(bounded, jnp.zeros(dimension, bounded.lower.dtype), jnp.eye(dimension, dtype=bounded.lower.dtype))

    @property
    def dimension(self) -> int:
        """The dimension D."""
        return self.bounded.dimension

    @property
    def lower(self) -> Float[Array, " D"]:
        """The lower bounds of the original space."""
        return self.bounded.lower

    @property
    def upper(self) -> Float[Array, " D"]:
        """The upper bounds of the original space."""
        return self.bounded.upper

    def _shift_like(self, values: Array) -> Array:
        return self.shift.reshape((1,) * (values.ndim - 1) + (self.dimension,))

    def whiten(self, u: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """w = L⁻¹(u − m)."""
        u = jnp.asarray(u)
        centred = u - self._shift_like(u)
        solved = solve_triangular(self.factor, centred.reshape(-1, self.dimension).T)
        return solved.T.reshape(centred.shape)

    def unwhiten(self, w: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """u = m + L w."""
        w = jnp.asarray(w)
        return self._shift_like(w) + w @ self.factor.T

    def to_unbounded(self, x: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """w(x)."""
        return self.whiten(self.bounded.to_unbounded(x))

    def from_unbounded(self, w: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """x(w)."""
        return self.bounded.from_unbounded(self.unwhiten(w))

    def log_abs_det_jacobian(self, w: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch"]:
        """log|dx/dw| at w (see the class docstring)."""
        log_det_factor = jnp.sum(jnp.log(jnp.abs(jnp.diag(self.factor))))
        return self.bounded.log_abs_det_jacobian(self.unwhiten(w)) + log_det_factor
