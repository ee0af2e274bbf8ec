from jaxtyping import Array, Float

from ._base import AbstractKernel


class Sum(AbstractKernel):
    """k(x, x′) = k₁(x, x′) + k₂(x, x′)."""

    left: AbstractKernel
    right: AbstractKernel

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        return self.left.evaluate(x1, x2) + self.right.evaluate(x1, x2)


class Product(AbstractKernel):
    """k(x, x′) = k₁(x, x′) · k₂(x, x′); `c * k` is `Product(Constant(c), k)`."""

    left: AbstractKernel
    right: AbstractKernel

    def evaluate(self, x1: Float[Array, " D"], x2: Float[Array, " D"]) -> Float[Array, ""]:
        return self.left.evaluate(x1, x2) * self.right.evaluate(x1, x2)
