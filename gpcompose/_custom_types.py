"""Shared jaxtyping aliases used in public signatures."""

from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

Scalar = Float[Array, ""]
ScalarLike = Float[ArrayLike, ""]
Inputs = Float[Array, "N D"]
InputsLike = Float[ArrayLike, "N D"]
Point = Float[Array, " D"]
Vector = Float[Array, " N"]
Mask = Bool[Array, " N"]
Index = Int[Array, ""]
Key = PRNGKeyArray

__all__ = [
    "Array",
    "ArrayLike",
    "Bool",
    "Float",
    "Index",
    "Inputs",
    "InputsLike",
    "Int",
    "Key",
    "Mask",
    "Point",
    "Scalar",
    "ScalarLike",
    "Vector",
]
