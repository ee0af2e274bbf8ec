"""Argument checks shared by the public functions.

Shape mistakes raise `ValueError` at trace time naming the argument and the shapes;
value mistakes (non-finite data, negative noise) go through `eqx.error_if` (as
`_errors.error_if`, which prefixes the name of the public function called), which works
inside `jit` and names the offending batch element under `vmap`.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, PRNGKeyArray, PyTree

from ._errors import error_if


def as_floating(value: ArrayLike, name: str) -> Array:
    """`value` as a real floating array: integers and booleans are promoted to the default
    floating dtype (float64 with `jax_enable_x64`, else float32), never the other way round,
    and complex values are refused with a `ValueError` (their imaginary part would be lost).
    A JAX array (or tracer) stays one; anything else becomes a NumPy array, so that concrete
    data stay concrete when this runs inside a `jit` or `vmap` trace."""
    value = value if isinstance(value, jax.Array) else np.asarray(value)
    if jnp.issubdtype(value.dtype, jnp.complexfloating):
        raise ValueError(
            f"`{name}` must be real, got complex dtype {value.dtype}; pass `jnp.real({name})` if its "
            "imaginary part is meant to be dropped."
        )
    if not jnp.issubdtype(value.dtype, jnp.floating):
        value = value.astype(jnp.result_type(float))
    return value


def common_dtype(*trees: PyTree) -> jnp.dtype:
    """The widest floating dtype of the floating arrays in `trees` (weakly typed ones, such
    as Python numbers turned into arrays, do not widen it): float32 data with float64
    parameters are computed in float64, so that every array of a solve has one dtype."""
    leaves = jax.tree_util.tree_leaves(eqx.filter(trees, eqx.is_inexact_array))
    strong = [leaf.dtype for leaf in leaves if not jax.typeof(leaf).weak_type]
    if strong:  # the widest, without relying on implicit promotion (which may be set to "strict")
        return max(strong, key=lambda dtype: jnp.finfo(dtype).bits)
    return jnp.result_type(*leaves) if leaves else jnp.result_type(float)


def check_key(key: PRNGKeyArray, name: str = "key") -> PRNGKeyArray:
    """`key`, with a `TypeError` unless it is a JAX PRNG key: a typed key (`jax.random.key`)
    or a raw uint32 key (`jax.random.PRNGKey`), one key or a batch of them."""
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return key
    if dtype == jnp.uint32 and getattr(key, "ndim", 0) >= 1:
        return key
    described = f"{type(key).__name__} {key!r}" if dtype is None else f"an array of dtype {dtype}"
    raise TypeError(
        f"`{name}` must be a JAX PRNG key, e.g. `jax.random.key(0)` (or a batch of keys from "
        f"`jax.random.split`), got {described}."
    )


def raise_if(x: PyTree, pred: Bool[ArrayLike, ""], message: str) -> PyTree:
    """`x`, with a `ValueError(message)` now when `pred` is concrete and True, or a run-time
    error (`_errors.error_if`) when it is traced (inside `jit` or `vmap`)."""
    pred = jnp.asarray(pred)
    if not isinstance(pred, jax.core.Tracer):
        if bool(jnp.any(pred)):
            raise ValueError(message)
        return x
    return error_if(x, pred, message)


def check_inputs(X: Float[ArrayLike, "N D"], name: str, dimension: int | None = None) -> Float[Array, "N D"]:
    """`X` as a 2-D floating array (integers promoted, complex refused: `as_floating`),
    optionally with `dimension` columns."""
    X = as_floating(X, name)
    if X.ndim != 2:
        raise ValueError(f"`{name}` must have shape (num_points, dimension), got shape {X.shape}.")
    if dimension is not None and X.shape[1] != dimension:
        raise ValueError(f"`{name}` has {X.shape[1]} columns (shape {X.shape}) but {dimension} were expected.")
    return X


def check_point(x: Float[ArrayLike, " D"], name: str, dimension: int) -> Float[Array, " D"]:
    """`x` as one floating input point of shape `(dimension,)` (`as_floating`)."""
    x = as_floating(x, name)
    if x.shape != (dimension,):
        raise ValueError(f"`{name}` must have shape ({dimension},), got shape {x.shape}.")
    return x


def check_targets(y: Float[ArrayLike, " N"], name: str, num_points: int) -> Float[Array, " N"]:
    """`y` as a floating vector with one entry per input row (`as_floating`)."""
    y = as_floating(y, name)
    if y.shape != (num_points,):
        raise ValueError(f"`{name}` must have shape ({num_points},) to match the inputs, got shape {y.shape}.")
    return y


def check_mask(mask: Bool[ArrayLike, " N"] | None, size: int, matching: str | None = None) -> Bool[Array, " N"]:
    """`mask` as a boolean `(size,)` array (all True when None); another shape raises
    `ValueError` naming it and, if given, the argument whose rows it marks (`matching`)."""
    if mask is None:
        return jnp.ones((size,), bool)
    mask = jnp.asarray(mask, bool)
    if mask.shape != (size,):
        to_match = "" if matching is None else f" to match `{matching}`"
        raise ValueError(f"`mask` must have shape ({size},){to_match}, got shape {mask.shape}.")
    return mask


def broadcast_per_row(value: Float[ArrayLike, "*N"], name: str, num_points: int, dtype) -> Float[Array, " N"]:
    """A real scalar or per-row vector (`as_floating`) as a vector of length `num_points`
    in `dtype`."""
    value = as_floating(value, name).astype(dtype)
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


def require_nonnegative(array: Array, name: str) -> Array:
    """`array`, with a runtime error unless every entry is finite and ≥ 0."""
    bad = ~jnp.all(jnp.isfinite(array) & (array >= 0))
    return error_if(array, bad, f"`{name}` must be finite and ≥ 0.")


def check_box(lower: Float[ArrayLike, " D"], upper: Float[ArrayLike, " D"]) -> tuple[Array, Array]:
    """`lower`, `upper` as real floating `(D,)` arrays of one dtype, finite (a box to search,
    sample or scale uniformly) and with lower < upper in every coordinate: a `ValueError` when
    the values are concrete, `eqx.error_if` under jit."""
    lower = as_floating(lower, "lower")
    if lower.ndim != 1:
        raise ValueError(f"`lower` must have shape (dimension,), got shape {lower.shape}.")
    upper = check_point(upper, "upper", lower.shape[0]).astype(lower.dtype)
    got = (
        ""
        if isinstance(lower, jax.core.Tracer) or isinstance(upper, jax.core.Tracer)
        else f", got lower={lower.tolist()}, upper={upper.tolist()}"
    )
    finite = jnp.all(jnp.isfinite(lower)) & jnp.all(jnp.isfinite(upper))
    lower = raise_if(lower, ~finite, f"`lower` and `upper` must be finite (a box sampled uniformly){got}.")
    ordered = jnp.all(lower < upper)
    lower = raise_if(lower, ~ordered, f"`lower` must be < `upper` in every coordinate{got}.")
    return lower, upper
