from jaxtyping import Array, ArrayLike, Float

from ._base import AbstractKernel


class Sum(AbstractKernel):
    """k(x, x′) = k₁(x, x′) + k₂(x, x′); matrices are sums of the parts' matrices, so each
    part keeps its own (possibly vectorised) `cross` and `gram`."""

    left: AbstractKernel
    right: AbstractKernel

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        return self.left.evaluate(x1, x2) + self.right.evaluate(x1, x2)

    def cross(self, X1: Float[ArrayLike, "N D"], X2: Float[ArrayLike, "M D"]) -> Float[Array, "N M"]:
        return self.left.cross(X1, X2) + self.right.cross(X1, X2)

    def gram(self, X: Float[ArrayLike, "N D"]) -> Float[Array, "N N"]:
        return self.left.gram(X) + self.right.gram(X)


class Product(AbstractKernel):
    """k(x, x′) = k₁(x, x′) · k₂(x, x′); `c * k` is `Product(Constant(c), k)`. Matrices are
    elementwise products of the parts' matrices."""

    left: AbstractKernel
    right: AbstractKernel

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        return self.left.evaluate(x1, x2) * self.right.evaluate(x1, x2)

    def cross(self, X1: Float[ArrayLike, "N D"], X2: Float[ArrayLike, "M D"]) -> Float[Array, "N M"]:
        return self.left.cross(X1, X2) * self.right.cross(X1, X2)

    def gram(self, X: Float[ArrayLike, "N D"]) -> Float[Array, "N N"]:
        return self.left.gram(X) * self.right.gram(X)
