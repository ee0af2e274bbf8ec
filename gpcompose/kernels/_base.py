import abc
import numbers

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._validation import check_inputs


def as_active_dims(active_dims: int | tuple[int, ...] | None) -> tuple[int, ...] | None:
    """Field converter: `active_dims` as a tuple of distinct column indices ≥ 0 (one int
    becomes a 1-tuple), or None for all columns; a `ValueError` otherwise. Whether the
    indices exist is checked against the inputs (`select_dims`)."""
    if active_dims is None:
        return None
    dims = (active_dims,) if isinstance(active_dims, numbers.Integral) else active_dims
    try:
        dims = tuple(dims)
    except TypeError:
        dims = ()
    integers = all(isinstance(index, numbers.Integral) and not isinstance(index, bool) for index in dims)
    if not dims or not integers or min(dims) < 0 or len(set(dims)) != len(dims):
        raise ValueError(
            f"`active_dims` must be None (all columns) or distinct column indices ≥ 0, got {active_dims!r}."
        )
    return tuple(int(index) for index in dims)


def select_dims(active_dims: tuple[int, ...] | None, x: Float[Array, "*N D"]) -> Float[Array, "*N d"]:
    """The coordinates (last axis) of a point or rows of points that a kernel acts on (all
    of them when `active_dims` is None); a `ValueError` if an index is not a column of `x`."""
    if active_dims is None:
        return x
    if max(active_dims) >= x.shape[-1]:
        raise ValueError(
            f"`active_dims` {active_dims} refers to column {max(active_dims)}, but the inputs have "
            f"{x.shape[-1]} columns (last axis of shape {x.shape}); accepted: indices 0 to {x.shape[-1] - 1}."
        )
    return x[..., jnp.asarray(active_dims)]


def check_per_dimension(kernel, name: str, value: Float[Array, "*d"], num_active: int) -> Float[Array, "*d"]:
    """`value`, a parameter of `kernel` that is shared or given per active input column (an
    ARD lengthscale), with a `ValueError` naming it unless its shape is (), (1,) or
    (`num_active`,)."""
    if value.shape not in ((), (1,), (num_active,)):
        raise ValueError(
            f"`{name}` of {type(kernel).__name__} has shape {value.shape}, but the kernel acts on "
            f"{num_active} input columns: pass a scalar or one value per active column, shape ({num_active},)."
        )
    return value


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
