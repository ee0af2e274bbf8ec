import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr, ndtri
from jaxtyping import Array, ArrayLike, Float

from .._errors import error_if


def _as_bounds(bounds: Float[ArrayLike, " D"], name: str) -> Array:
    bounds = jnp.asarray(bounds)
    if bounds.ndim != 1:
        raise ValueError(f"`{name}` must have shape (dimension,), got shape {bounds.shape}.")
    if not jnp.issubdtype(bounds.dtype, jnp.floating):
        bounds = bounds.astype(jax.dtypes.canonicalize_dtype(float))
    return bounds


class BoundedTransform(eqx.Module):
    """Coordinate-wise bijection between a box with possibly infinite sides and R^D
    (inference runs in the unbounded space, as in VBMC, Acerbi 2018, and SVBMC, Li, Clarté &
    Acerbi 2023, App. A.5).

    Per coordinate, with bounds (a, b), width w = b − a and z = (x − a)/w:
        a, b finite, "logit":   u = log z − log(1 − z),   x = a + w σ(u),
                                log|dx/du| = log w + log σ(u) + log σ(−u);
        a, b finite, "probit":  u = Φ⁻¹(z),               x = a + w Φ(u),
                                log|dx/du| = log w − u²/2 − ½ log 2π;
        only a finite:          u = log(x − a),           x = a + eᵘ,   log|dx/du| = u;
        only b finite:          u = log(b − x),           x = b − eᵘ,   log|dx/du| = u;
        both infinite:          u = x,                                   log|dx/du| = 0.
    For the two-sided maps the half nearer each bound is computed from that bound
    (x = b − w σ(−u) for u > 0, u = −Φ⁻¹((b − x)/w) for z > ½), which keeps full relative
    precision near both ends. A density p(x) becomes p(x(u)) |dx/du| in u: add
    `log_abs_det_jacobian(u)` to a log density to move it to the unbounded space.

    **Arguments:** `lower_bounds` and `upper_bounds` of shape (D,) (entries may be ∓inf),
    and `kind` ("probit", the PyVBMC default, or "logit", the paper's) for two-sided
    coordinates. Points outside the box map to NaN.
    """

    lower: Float[Array, " D"]
    upper: Float[Array, " D"]
    kind: Literal["logit", "probit"] = eqx.field(static=True)

    def __init__(
        self,
        lower_bounds: Float[ArrayLike, " D"],
        upper_bounds: Float[ArrayLike, " D"],
        kind: Literal["logit", "probit"] = "probit",
    ):
        if kind not in ("logit", "probit"):
            raise ValueError(f"`kind` must be 'logit' or 'probit', got {kind!r}.")
        lower = _as_bounds(lower_bounds, "lower_bounds")
        upper = _as_bounds(upper_bounds, "upper_bounds")
        if lower.shape != upper.shape:
            raise ValueError(
                f"`lower_bounds` and `upper_bounds` must have the same shape, got {lower.shape} and {upper.shape}."
            )
        dtype = np.promote_types(lower.dtype, upper.dtype)
        lower, upper = lower.astype(dtype), upper.astype(dtype)
        ordered = lower < upper
        message = "`lower_bounds` must be strictly smaller than `upper_bounds` in every coordinate."
        if isinstance(lower, jax.core.Tracer) or isinstance(upper, jax.core.Tracer):
            lower = error_if(lower, ~jnp.all(ordered), message)
        elif not bool(jnp.all(ordered)):
            bad = np.flatnonzero(~np.asarray(ordered))
            raise ValueError(
                f"{message} Violated at coordinates {bad.tolist()}: "
                f"lower {np.asarray(lower)[bad]}, upper {np.asarray(upper)[bad]}."
            )
        self.lower = lower
        self.upper = upper
        self.kind = kind

    @property
    def dimension(self) -> int:
        """The dimension D."""
        return self.lower.shape[0]

    def _check(self, values: Float[ArrayLike, "*batch D"], name: str) -> Array:
        values = jnp.asarray(values)
        if values.shape[-1:] != (self.dimension,):
            raise ValueError(f"`{name}` must have a last axis of size {self.dimension}, got shape {values.shape}.")
        if not jnp.issubdtype(values.dtype, jnp.floating):
            values = values.astype(self.lower.dtype)
        return values

    def _bounds(self, values: Array) -> tuple[Array, Array, Array, Array, Array, Array]:
        """In the dtype and shape of `values`: the bounds with infinite entries replaced by
        0, the width of two-sided coordinates (1 elsewhere), and the masks of the
        two-sided, lower-only and upper-only coordinates."""
        has_lower = jnp.isfinite(self.lower)
        has_upper = jnp.isfinite(self.upper)
        lower = jnp.where(has_lower, self.lower, 0.0).astype(values.dtype)
        upper = jnp.where(has_upper, self.upper, 0.0).astype(values.dtype)
        two_sided = has_lower & has_upper
        width = jnp.where(two_sided, upper - lower, 1.0)
        parts = (lower, upper, width, two_sided, has_lower & ~has_upper, has_upper & ~has_lower)
        return tuple(jnp.broadcast_to(part, values.shape) for part in parts)

    def to_unbounded(self, x: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """u(x), coordinate-wise (see the class docstring)."""
        x = self._check(x, "x")
        lower, upper, width, two_sided, lower_only, upper_only = self._bounds(x)
        from_lower = jnp.where(two_sided, (x - lower) / width, 0.5)
        from_upper = jnp.where(two_sided, (upper - x) / width, 0.5)
        if self.kind == "logit":
            two_sided_value = jnp.log(from_lower) - jnp.log(from_upper)
        else:
            two_sided_value = jnp.where(from_lower < 0.5, ndtri(from_lower), -ndtri(from_upper))
        one_sided_distance = jnp.where(lower_only, x - lower, jnp.where(upper_only, upper - x, 1.0))
        one_sided_value = jnp.log(one_sided_distance)
        return jnp.where(two_sided, two_sided_value, jnp.where(lower_only | upper_only, one_sided_value, x))

    def from_unbounded(self, u: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch D"]:
        """x(u), coordinate-wise (see the class docstring)."""
        u = self._check(u, "u")
        lower, upper, width, two_sided, lower_only, upper_only = self._bounds(u)
        cumulative = jax.nn.sigmoid if self.kind == "logit" else ndtr
        two_sided_value = jnp.where(u < 0, lower + width * cumulative(u), upper - width * cumulative(-u))
        offset = jnp.exp(jnp.where(lower_only | upper_only, u, 0.0))
        one_sided_value = jnp.where(lower_only, lower + offset, upper - offset)
        return jnp.where(two_sided, two_sided_value, jnp.where(lower_only | upper_only, one_sided_value, u))

    def unbounded_limits(self) -> tuple[Float[Array, " D"], Float[Array, " D"]]:
        """(u_min, u_max): per coordinate, the images of the points 64 ulps inside each
        finite bound (and at least √(smallest normal number) times the width away), ∓inf
        where u is free [ours].

        Beyond them x(u) rounds onto the bound, where u(x) is ±inf and a target defined
        on the open box is −inf: an acquisition search kept inside [u_min, u_max] cannot
        propose a point that would be lost as a failed evaluation. Two-sided coordinates
        get both limits (probit on (0.01, 0.5): u ∈ [−8.1, 7.6]); one-sided ones, where
        u = log of the distance to the bound, only u_min.
        """
        lower, upper, width, two_sided, lower_only, upper_only = self._bounds(self.lower)
        tiny = jnp.sqrt(jnp.finfo(self.lower.dtype).tiny)  # 1.5e-154 in float64: ndtr(ndtri(·)) stays normal
        margin_lower = jnp.maximum(64 * jnp.spacing(jnp.abs(lower)), tiny * width)
        margin_upper = jnp.maximum(64 * jnp.spacing(jnp.abs(upper)), tiny * width)
        # an interior point of every coordinate, so that the unused entries below stay finite
        inside = jnp.where(
            two_sided, lower + width / 2, jnp.where(lower_only, lower + 1, jnp.where(upper_only, upper - 1, 0.0))
        )
        two_sided_min = self.to_unbounded(jnp.where(two_sided, lower + margin_lower, inside))
        two_sided_max = self.to_unbounded(jnp.where(two_sided, upper - margin_upper, inside))
        one_sided_min = jnp.log(jnp.where(lower_only, margin_lower, margin_upper))
        u_min = jnp.where(two_sided, two_sided_min, jnp.where(lower_only | upper_only, one_sided_min, -jnp.inf))
        return u_min, jnp.where(two_sided, two_sided_max, jnp.inf)

    def log_abs_det_jacobian(self, u: Float[ArrayLike, "*batch D"]) -> Float[Array, "*batch"]:
        """Σ_d log|dx_d/du_d| at u (see the class docstring)."""
        u = self._check(u, "u")
        _, _, width, two_sided, lower_only, upper_only = self._bounds(u)
        if self.kind == "logit":
            log_density = jax.nn.log_sigmoid(u) + jax.nn.log_sigmoid(-u)
        else:
            log_density = -0.5 * u**2 - 0.5 * math.log(2 * math.pi)
        two_sided_value = jnp.log(width) + log_density
        terms = jnp.where(two_sided, two_sided_value, jnp.where(lower_only | upper_only, u, 0.0))
        return jnp.sum(terms, axis=-1)
