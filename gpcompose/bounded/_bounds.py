import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._errors import error_if
from ..sampling import SampleExtrema


def _optional_scalar(value, name: str) -> Float[Array, ""] | None:
    if value is None:
        return None
    value = jnp.asarray(value)
    if value.shape != ():
        raise ValueError(f"`{name}` must be a scalar, got shape {value.shape}.")
    return value if jnp.issubdtype(value.dtype, jnp.floating) else value.astype(jnp.result_type(float))


def _is_concrete(*values) -> bool:
    return not any(isinstance(value, jax.core.Tracer) for value in values)


class Bounds(eqx.Module):
    """Approximate bounds on a function (Nguyen et al. 2021, Def. 1):
    f⁺ ~ N(max f, η₊²) and f⁻ ~ N(min f, η₋²); either or both may be given.

    **Arguments:** `f_plus` (f⁺) with its looseness `eta_plus` (η₊ > 0, a standard
    deviation) and/or `f_minus` (f⁻) with `eta_minus`. `ValueError` when a bound lacks its
    η, an η is not positive, or f⁻ ≥ f⁺ (for concrete values; `eqx.error_if` under jit in
    the functions that use them).
    """

    f_plus: Float[Array, ""] | None
    f_minus: Float[Array, ""] | None
    eta_plus: Float[Array, ""] | None
    eta_minus: Float[Array, ""] | None

    def __init__(
        self,
        f_plus: Float[ArrayLike, ""] | None = None,
        f_minus: Float[ArrayLike, ""] | None = None,
        eta_plus: Float[ArrayLike, ""] | None = None,
        eta_minus: Float[ArrayLike, ""] | None = None,
    ):
        self.f_plus = _optional_scalar(f_plus, "f_plus")
        self.f_minus = _optional_scalar(f_minus, "f_minus")
        self.eta_plus = _optional_scalar(eta_plus, "eta_plus")
        self.eta_minus = _optional_scalar(eta_minus, "eta_minus")

    def __check_init__(self):
        if self.f_plus is None and self.f_minus is None:
            raise ValueError("`Bounds` needs `f_plus`, `f_minus` or both.")
        for bound, eta, name in ((self.f_plus, self.eta_plus, "plus"), (self.f_minus, self.eta_minus, "minus")):
            if bound is not None and eta is None:
                raise ValueError(f"`f_{name}` is given without its looseness `eta_{name}`.")
            if eta is not None and _is_concrete(eta) and not bool(eta > 0):
                raise ValueError(f"`eta_{name}` must be strictly positive, got {eta}.")
        if self.f_plus is not None and self.f_minus is not None and _is_concrete(self.f_plus, self.f_minus):
            if not bool(self.f_minus < self.f_plus):
                raise ValueError(f"`f_minus` ({self.f_minus}) must be smaller than `f_plus` ({self.f_plus}).")

    def _coordinates(self, extrema: SampleExtrema):
        """(sample extremum, bound, η) for each bound that is given."""
        pairs = []
        if self.f_plus is not None:
            pairs.append((extrema.value_max, self.f_plus, self.eta_plus))
        if self.f_minus is not None:
            pairs.append((extrema.value_min, self.f_minus, self.eta_minus))
        return pairs


def _checked(bounds: Bounds) -> Bounds:
    """`bounds` with run-time checks (η > 0, f⁻ < f⁺) when its values are traced."""
    bad = jnp.zeros((), bool)
    for eta in (bounds.eta_plus, bounds.eta_minus):
        if eta is not None:
            bad = bad | ~(eta > 0)
    if bounds.f_plus is not None and bounds.f_minus is not None:
        bad = bad | ~(bounds.f_minus < bounds.f_plus)
    return error_if(bounds, bad, "Bounds need η > 0 and f_minus < f_plus.")


def log_weights(bounds: Bounds, extrema: SampleExtrema) -> Float[Array, " M"]:
    """log π(g_m) = log N([g_m⁻, g_m⁺] | [f⁻, f⁺], diag(η₋², η₊²)) (Nguyen et al. 2021, eq. 4),
    the univariate density of the one coordinate given when only one bound is.

    Raw π underflows for tight η, so use these through `softmax` (`weighted_mean`).
    """
    bounds = _checked(bounds)
    total = jnp.zeros_like(extrema.value_max)
    for value, bound, eta in bounds._coordinates(extrema):
        total = total - 0.5 * ((value - bound) / eta) ** 2 - jnp.log(eta) - 0.5 * math.log(2 * math.pi)
    return total


def accepted(
    bounds: Bounds,
    extrema: SampleExtrema,
    *,
    rule: Literal["coordinate", "mahalanobis"] = "coordinate",
    num_sd: float = 2.0,
) -> Bool[Array, " M"]:
    """Samples whose extrema lie within `num_sd` standard deviations of the bounds (§3.2).

    `rule="coordinate"` (default): |g_m⁺ − f⁺| ≤ num_sd·η₊ and |g_m⁻ − f⁻| ≤ num_sd·η₋;
    `rule="mahalanobis"`: √(Σ ((g − f)/η)²) ≤ num_sd. The paper does not say which it
    means; they agree when one bound is given.
    """
    if rule not in ("coordinate", "mahalanobis"):
        raise ValueError(f"`rule` must be 'coordinate' or 'mahalanobis', got {rule!r}.")
    bounds = _checked(bounds)
    standardised = [(value - bound) / eta for value, bound, eta in bounds._coordinates(extrema)]
    if rule == "coordinate":
        inside = jnp.ones(extrema.value_max.shape, bool)
        for distance in standardised:
            inside = inside & (jnp.abs(distance) <= num_sd)
        return inside
    squared = sum(distance**2 for distance in standardised)
    return squared <= num_sd**2
