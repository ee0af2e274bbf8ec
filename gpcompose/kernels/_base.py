import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._validation import check_inputs


def select_dims(active_dims: tuple[int, ...] | None, x: Float[Array, "*N D"]) -> Float[Array, "*N d"]:
    """The coordinates (last axis) of a point or rows of points that a kernel acts on (all
    of them when `active_dims` is None)."""
    if active_dims is None:
        return x
    return x[..., jnp.asarray(active_dims)]


class AbstractKernel(eqx.Module):
    """A positive-definite covariance function k(x, x′).

    Subclasses implement `evaluate` on two single points; `gram`, `cross` (also
    `kernel(X1, X2)`) and `diagonal` vmap it unless a subclass has a faster matrix form
    (stationary kernels: one matrix product for all squared distances). `k1 + k2`,
    `k1 * k2` and `c * k` build `Sum`, `Product` and `Product(Constant(c), k)` modules.
    """

    @abc.abstractmethod
    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        """k(x1, x2) for two single points of shape `(D,)`."""

    def cross(self, X1: Float[ArrayLike, "N D"], X2: Float[ArrayLike, "M D"]) -> Float[Array, "N M"]:
        """Cross-covariance matrix K[i, j] = k(X1[i], X2[j])."""
        X1 = check_inputs(X1, "X1")
        X2 = check_inputs(X2, "X2", dimension=X1.shape[1])
        return jax.vmap(lambda a: jax.vmap(lambda b: self.evaluate(a, b))(X2))(X1)

    def gram(self, X: Float[ArrayLike, "N D"]) -> Float[Array, "N N"]:
        """Gram matrix K[i, j] = k(X[i], X[j])."""
        X = check_inputs(X, "X")
        return self.cross(X, X)

    def diagonal(self, X: Float[ArrayLike, "N D"]) -> Float[Array, " N"]:
        """Diagonal k(X[i], X[i]) without forming the Gram matrix."""
        X = check_inputs(X, "X")
        return jax.vmap(lambda x: self.evaluate(x, x))(X)

    def __call__(self, X1: Float[ArrayLike, "N D"], X2: Float[ArrayLike, "M D"]) -> Float[Array, "N M"]:
        return self.cross(X1, X2)

    def __add__(self, other: "AbstractKernel") -> "AbstractKernel":
        from ._algebra import Sum

        if not isinstance(other, AbstractKernel):
            return NotImplemented
        return Sum(self, other)

    def __mul__(self, other) -> "AbstractKernel":
        from ._algebra import Product
        from ._constant import Constant

        if isinstance(other, AbstractKernel):
            return Product(self, other)
        return Product(Constant(other), self)

    __rmul__ = __mul__
