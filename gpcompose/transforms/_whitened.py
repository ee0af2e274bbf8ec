import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from ._bounded import BoundedTransform


def _leading(vector: Float[Array, " D"], like: Array) -> Array:
    """`vector` with a leading axis of size 1 per batch axis of `like` (explicit broadcasting)."""
    return vector.reshape((1,) * (like.ndim - 1) + vector.shape)


class WhitenedTransform(eqx.Module):
    """A `BoundedTransform` followed by an affine whitening ("rotoscaling"): with
    u = bounded.to_unbounded(x) the coordinates of inference are

        w = diag(1/s) Vᵀ (u − c),        u = c + V diag(s) w,

    for a centre c, an orthogonal V and positive scales s (VBMC's `WarpRotoScaling`,
    Acerbi 2020 Supp. B.2: the eigenvectors and square-rooted eigenvalues of a
    covariance of the posterior). In w a correlated posterior has axis-aligned,
    unit-scale level sets, which a squared-exponential ARD kernel, a negative-quadratic
    mean and a mixture of diagonal Gaussians can all represent.

    log|dx/dw| = log|dx/du|(u(w)) + Σ_d log s_d.

    Same interface as `BoundedTransform` (`to_unbounded`, `from_unbounded`,
    `log_abs_det_jacobian`, `lower`, `upper`, `dimension`), so `TransformedMixture`
    pushes a mixture on w forward to the original space.
    """

    bounded: BoundedTransform
    centre: Float[Array, " D"]
    rotation: Float[Array, "D D"]
    scales: Float[Array, " D"]

    @property
    def lower(self) -> Float[Array, " D"]:
        return self.bounded.lower

    @property
    def upper(self) -> Float[Array, " D"]:
        return self.bounded.upper

    @property
    def dimension(self) -> int:
        return self.bounded.dimension

    @property
    def is_affine(self) -> bool:
        """True when no coordinate is bounded, so x = c + V diag(s) w exactly."""
        return self.bounded.is_identity

    def whiten(self, u: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """w = diag(1/s) Vᵀ (u − c)."""
        u = jnp.asarray(u)
        return ((u - _leading(self.centre, u)) @ self.rotation) / _leading(self.scales, u)

    def unwhiten(self, w: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """u = c + V diag(s) w."""
        w = jnp.asarray(w)
        return _leading(self.centre, w) + (w * _leading(self.scales, w)) @ self.rotation.T

    def to_unbounded(self, x: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """w(x)."""
        return self.whiten(self.bounded.to_unbounded(x))

    def from_unbounded(self, w: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """x(w)."""
        return self.bounded.from_unbounded(self.unwhiten(w))

    def log_abs_det_jacobian(self, w: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch"]:
        """log|dx/dw| at w."""
        return self.bounded.log_abs_det_jacobian(self.unwhiten(w)) + jnp.sum(jnp.log(self.scales))


def whitening_from_points(
    bounded: BoundedTransform,
    points: Float[Array, "N D"],
    mask: Bool[Array, " N"],
    *,
    max_condition: float = 1e4,
) -> WhitenedTransform:
    """The whitening of the points marked by `mask` (given in the unbounded space of
    `bounded`): c their mean, V diag(s²) Vᵀ the eigendecomposition of their covariance.

    Eigenvalues below max(s²)/`max_condition` are raised to it, so a set of points that is
    flat in some direction (fewer than D + 1 of them, or all on a line) stretches that
    direction by at most √max_condition instead of dividing by zero.
    """
    weights = mask.astype(points.dtype)
    count = jnp.maximum(jnp.sum(weights), 1.0)
    centre = weights @ points / count
    centred = (points - centre[None, :]) * weights[:, None]
    covariance = centred.T @ centred / jnp.maximum(count - 1.0, 1.0)
    eigenvalues, rotation = jnp.linalg.eigh(covariance)
    largest = jnp.maximum(eigenvalues[-1], jnp.finfo(points.dtype).tiny)
    scales = jnp.sqrt(jnp.maximum(eigenvalues, largest / max_condition))
    return WhitenedTransform(bounded, centre, rotation, scales)
