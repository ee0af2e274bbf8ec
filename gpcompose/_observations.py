"""Fixed-capacity observation buffers shared by the exact and sparse GP states, and the
helpers both states apply to them (prior check, centred targets, padded Gram matrix).

A buffer holds `capacity` rows; `mask` marks the rows in use. New observations go into
the slot after the last used one, so appending never changes an array shape and
`update` compiles once. Unused rows hold zeros and are excluded from every computation.
"""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._errors import error_if
from ._validation import (
    as_floating,
    broadcast_per_row,
    check_inputs,
    check_mask,
    check_point,
    check_targets,
    common_dtype,
    raise_if,
    require_finite,
    require_nonnegative,
    require_positive,
)
from .kernels import AbstractKernel
from .means import AbstractMean


class Observations(eqx.Module):
    """Inputs, targets and per-row observation-noise variances with a mask of used rows."""

    inputs: Float[Array, "C D"]
    targets: Float[Array, " C"]
    noise_variance: Float[Array, " C"]
    mask: Bool[Array, " C"]

    @property
    def capacity(self) -> int:
        return self.targets.shape[0]

    @property
    def num_used(self) -> Int[Array, ""]:
        return jnp.sum(self.mask)


def input_span(X: Float[Array, "C D"], mask: Bool[Array, " C"]) -> tuple[Float[Array, " D"], Float[Array, " D"]]:
    """Per-coordinate minimum and maximum of the rows of `X` marked by `mask` (the box of
    the used inputs of a buffer)."""
    lower = jnp.min(jnp.where(mask[:, None], X, jnp.inf), axis=0)
    upper = jnp.max(jnp.where(mask[:, None], X, -jnp.inf), axis=0)
    return lower, upper


def observed_box(observations: Observations) -> tuple[Float[Array, " D"], Float[Array, " D"]]:
    """The box of the used inputs of `observations` (`input_span`), or the whole space
    (−∞, ∞) when no slot is used, so that a GP with no data bounds nothing."""
    lower, upper = input_span(observations.inputs, observations.mask)
    no_data = ~jnp.any(observations.mask)
    return jnp.where(no_data, -jnp.inf, lower), jnp.where(no_data, jnp.inf, upper)


def make_observations(
    kernel: AbstractKernel,
    mean: AbstractMean,
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    noise_variance: Float[ArrayLike, "*N"],
    mask: Bool[ArrayLike, " N"] | None = None,
    capacity: int | None = None,
    *,
    zero_noise_allowed: bool = False,
) -> Observations:
    """Validate the prior (`check_prior`) and the data, and place the data in a buffer of
    `capacity` rows (default: N).

    The buffer's dtype is the widest floating dtype of `X`, `y` and the prior's parameters
    (`common_dtype`; integer data are promoted, complex data refused); `noise_variance` is
    cast to it. Raises `ValueError` for shape mismatches and an empty buffer; non-finite
    `X`/`y` or a noise variance that is not > 0 (not ≥ 0 with `zero_noise_allowed`, for a
    state that can represent a noise-free GP) raise at run time through `eqx.error_if`.
    """
    check_prior(kernel, mean)
    X = check_inputs(X, "X")
    num_points = X.shape[0]
    y = check_targets(y, "y", num_points)
    dtype = common_dtype(X, y, kernel, mean)
    X, y = X.astype(dtype), y.astype(dtype)
    noise_variance = broadcast_per_row(noise_variance, "noise_variance", num_points, dtype)
    if max(num_points, capacity or 0) == 0:
        raise ValueError(
            f"`X` has no rows (shape {X.shape}): condition on at least one observation, or pass "
            "`capacity` ≥ 1 to start an empty buffer that `update` fills."
        )
    mask = check_mask(mask, num_points)
    X = require_finite(jnp.where(mask[:, None], X, 0.0), "X")
    y = require_finite(jnp.where(mask, y, 0.0), "y")
    require_noise = require_nonnegative if zero_noise_allowed else require_positive
    noise_variance = require_noise(jnp.where(mask, noise_variance, 1.0), "noise_variance")
    if capacity is not None:
        if capacity < num_points:
            raise ValueError(f"`capacity` ({capacity}) is smaller than the number of rows of X ({num_points}).")
        padding = capacity - num_points
        X = jnp.pad(X, ((0, padding), (0, 0)))
        y = jnp.pad(y, (0, padding))
        noise_variance = jnp.pad(noise_variance, (0, padding), constant_values=1.0)
        mask = jnp.pad(mask, (0, padding))
    return Observations(X, y, noise_variance, mask)


def with_capacity(observations: Observations, capacity: int) -> Observations:
    """The buffer with `capacity` rows: free rows added at the end (zeros, unit noise
    variance, unused) or free rows dropped from the end. A capacity below the last used row
    raises `ValueError` (checked when the mask is concrete)."""
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"`capacity` must be a positive int, got {capacity!r}.")
    padding = capacity - observations.capacity
    if padding >= 0:
        return Observations(
            jnp.pad(observations.inputs, ((0, padding), (0, 0))),
            jnp.pad(observations.targets, (0, padding)),
            jnp.pad(observations.noise_variance, (0, padding), constant_values=1.0),
            jnp.pad(observations.mask, (0, padding)),
        )
    mask = raise_if(
        observations.mask, jnp.any(observations.mask[capacity:]), f"`capacity` ({capacity}) would drop used rows."
    )
    return Observations(
        observations.inputs[:capacity],
        observations.targets[:capacity],
        observations.noise_variance[:capacity],
        mask[:capacity],
    )


def check_new_inputs(observations: Observations, X_new: Float[ArrayLike, "Q D"], name: str) -> Float[Array, "Q D"]:
    """Query inputs with the buffer's number of columns, in the buffer's dtype."""
    inputs = observations.inputs
    return check_inputs(X_new, name, dimension=inputs.shape[1]).astype(inputs.dtype)


def with_observation_noise(variance: Float[Array, " Q"], noise_variance: Float[ArrayLike, "*Q"]) -> Float[Array, " Q"]:
    """The predictive variance of new observations y = f(x) + ε, ε ~ N(0, σ²), from the latent
    variance s² at the same rows: s² + σ², σ² a scalar or one value per row, finite and > 0."""
    noise_variance = broadcast_per_row(noise_variance, "noise_variance", variance.shape[0], variance.dtype)
    return variance + require_positive(noise_variance, "noise_variance")


def next_slot(mask: Bool[Array, " C"]) -> Int[Array, ""]:
    """Index after the last used slot (the capacity if the last slot is used)."""
    slots = jnp.arange(mask.shape[0])
    return jnp.max(jnp.where(mask, slots, -1)) + 1


def require_free_slot(
    slot: Int[Array, ""], capacity: int, name: str, when: Bool[ArrayLike, ""] = True
) -> Int[Array, ""]:
    """`slot`, with a run-time error if the buffer has no free slot after its last used one
    (checked only `when` the slot is to be written)."""
    return error_if(
        slot,
        jnp.asarray(when, bool) & (slot >= capacity),
        f"The {name} buffer is full: pass a larger `capacity` when conditioning.",
    )


def append_observation(
    observations: Observations,
    x: Float[ArrayLike, " D"],
    y: Float[ArrayLike, ""],
    noise_variance: Float[ArrayLike, ""],
    *,
    zero_noise_allowed: bool = False,
) -> tuple[Observations, Int[Array, ""]]:
    """Write one observation into the next free slot; returns the buffer and the slot.
    `noise_variance` must be > 0 (≥ 0 with `zero_noise_allowed`), as in `make_observations`."""
    dimension = observations.inputs.shape[1]
    dtype = observations.inputs.dtype
    x = require_finite(check_point(x, "x", dimension).astype(dtype), "x")
    y = as_floating(y, "y").astype(dtype)
    noise_variance = as_floating(noise_variance, "noise_variance").astype(dtype)
    if y.shape != () or noise_variance.shape != ():
        raise ValueError(f"`y` and `noise_variance` must be scalars, got shapes {y.shape} and {noise_variance.shape}.")
    y = require_finite(y, "y")
    noise_variance = (require_nonnegative if zero_noise_allowed else require_positive)(noise_variance, "noise_variance")
    slot = require_free_slot(next_slot(observations.mask), observations.capacity, "observation")
    updated = Observations(
        observations.inputs.at[slot].set(x),
        observations.targets.at[slot].set(y),
        observations.noise_variance.at[slot].set(noise_variance),
        observations.mask.at[slot].set(True),
    )
    return updated, slot


def check_prior(kernel: AbstractKernel, mean: AbstractMean) -> None:
    """Raise `ValueError` unless `kernel` and `mean` are a kernel and a mean function."""
    if not isinstance(kernel, AbstractKernel):
        raise ValueError(f"`kernel` must be an AbstractKernel, got {type(kernel).__name__}.")
    if not isinstance(mean, AbstractMean):
        raise ValueError(f"`mean` must be an AbstractMean, got {type(mean).__name__}.")


def centred_targets(mean: AbstractMean, observations: Observations) -> Float[Array, " C"]:
    """y − m(X) on used rows, zero elsewhere."""
    residual = observations.targets - mean(observations.inputs)
    return jnp.where(observations.mask, residual, 0.0)


def padded_gram(kernel, X: Float[Array, "C D"], mask: Bool[Array, " C"]) -> Float[Array, "C C"]:
    """K(X, X) on used rows, the identity on unused ones (keeps factors block-diagonal)."""
    both = mask[:, None] & mask[None, :]
    return jnp.where(both, kernel.gram(X), 0.0) + jnp.diag(jnp.where(mask, 0.0, 1.0))
