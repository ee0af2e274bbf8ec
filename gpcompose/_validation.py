"""Argument checks shared by the public functions.

Shape mistakes raise `ValueError` at trace time naming the argument and the shapes;
value mistakes (non-finite data, non-positive noise) go through `eqx.error_if` (as
`_errors.error_if`, which prefixes the name of the public function called), which works
inside `jit` and names the offending batch element under `vmap`.
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ._errors import error_if


def check_inputs(X: Float[ArrayLike, "N D"], name: str, dimension: int | None = None) -> Float[Array, "N D"]:
    """`X` as a 2-D floating array, optionally with `dimension` columns."""
    X = jnp.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"`{name}` must have shape (num_points, dimension), got shape {X.shape}.")
    if dimension is not None and X.shape[1] != dimension:
        raise ValueError(f"`{name}` has {X.shape[1]} columns (shape {X.shape}) but {dimension} were expected.")
    return X


def check_point(x: Float[ArrayLike, " D"], name: str, dimension: int) -> Float[Array, " D"]:
    """`x` as one input point of shape `(dimension,)`."""
    x = jnp.asarray(x)
    if x.shape != (dimension,):
        raise ValueError(f"`{name}` must have shape ({dimension},), got shape {x.shape}.")
    return x


def check_targets(y: Float[ArrayLike, " N"], name: str, num_points: int) -> Float[Array, " N"]:
    """`y` as a vector with one entry per input row."""
    y = jnp.asarray(y)
    if y.shape != (num_points,):
        raise ValueError(f"`{name}` must have shape ({num_points},) to match the inputs, got shape {y.shape}.")
    return y


def broadcast_per_row(value: Float[ArrayLike, "*N"], name: str, num_points: int, dtype) -> Float[Array, " N"]:
    """A scalar or a per-row vector as a vector of length `num_points`."""
    value = jnp.asarray(value, dtype=dtype)
    if value.ndim == 0:
        return jnp.full((num_points,), value)
    if value.shape != (num_points,):
        raise ValueError(f"`{name}` must be a scalar or have shape ({num_points},), got shape {value.shape}.")
    return value


def require_finite(array: Array, name: str) -> Array:
    """`array`, with a runtime error if it contains NaN or ±inf."""
    return error_if(array, ~jnp.all(jnp.isfinite(array)), f"`{name}` contains NaN or infinite values.")


def require_positive(array: Array, name: str) -> Array:
    """`array`, with a runtime error unless every entry is finite and > 0."""
    bad = ~jnp.all(jnp.isfinite(array) & (array > 0))
    return error_if(array, bad, f"`{name}` must be finite and strictly positive.")


def check_box(lower: Float[ArrayLike, " D"], upper: Float[ArrayLike, " D"]) -> tuple[Array, Array]:
    """`lower`, `upper` as floating `(D,)` arrays of one dtype, with lower < upper in every
    coordinate: a `ValueError` when the values are concrete, `eqx.error_if` under jit."""
    lower = jnp.asarray(lower)
    dtype = lower.dtype if jnp.issubdtype(lower.dtype, jnp.floating) else jnp.result_type(float)
    lower = lower.astype(dtype)
    if lower.ndim != 1:
        raise ValueError(f"`lower` must have shape (dimension,), got shape {lower.shape}.")
    upper = check_point(jnp.asarray(upper, dtype), "upper", lower.shape[0])
    ordered = jnp.all(lower < upper)
    if not isinstance(ordered, jax.core.Tracer) and not bool(ordered):
        raise ValueError(f"`lower` must be < `upper` in every coordinate, got lower={lower}, upper={upper}.")
    lower = error_if(lower, ~ordered, "`lower` must be < `upper` in every coordinate.")
    return lower, upper
