import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from ..priors import AbstractPrior
from ._parameter import AbstractParameter, _as_float_array, _spec


def _inverse_softplus(value):
    """log(eˣ − 1) computed as x + log(−expm1(−x)) so that large x does not overflow."""
    return value + jnp.log(-jnp.expm1(-value))


def lowest_above(minimum: float, dtype) -> Float[Array, ""]:
    """minimum · (1 + ε) + tiny (ε, tiny: the machine epsilon and the smallest normal number
    of `dtype`): about the first representable number above `minimum` ≥ 0, and a normal
    number, never a subnormal one, above 0."""
    info = jnp.finfo(dtype)
    minimum, eps, tiny = (jnp.asarray(number, dtype) for number in (minimum, info.eps, info.tiny))
    return minimum * (1 + eps) + tiny


class Positive(AbstractParameter):
    """A hyperparameter constrained to `value > minimum`.

    `transform="softplus"` (default): value = minimum + log(1 + eᵘ), log-Jacobian
    log σ(u). `transform="exp"`: value = minimum + eᵘ, log-Jacobian u.

    Every finite u gives a finite value above `minimum`, also in floating point [ours]. In
    float64 softplus(u) and eᵘ are 0 for u below about −745 (−104 in float32), where the
    formula would return `minimum` itself (a noise variance of 0, which `sparse.condition`
    rejects and `gp.condition` flags as a noise-free model, and a lengthscale of 0): the
    value is raised to `lowest_above(minimum)` = minimum·(1 + ε) + tiny (ε, tiny: the dtype's
    machine epsilon and smallest normal number; 2.2·10⁻³⁰⁸ for minimum 0 in float64). For
    `"exp"`, u is capped at log(largest float) − 1, above which eᵘ overflows.
    Values between these two limits are unchanged, and the gradient beyond them is zero, so
    an optimiser step that overshoots (BFGS on the log marginal likelihood of noise-free data
    drives the noise's u towards −∞) evaluates a valid parameter instead of raising. This
    is not a modelling floor; to bound a noise variance away from 0, as GPflow's Gaussian
    likelihood does (variance ≥ 10⁻⁶), pass `minimum=1e-6`.

    **Arguments:**

    - `value`: initial constrained value(s); must exceed `minimum`.
    - `transform`: `"softplus"` or `"exp"`.
    - `minimum`: lower bound (Pinder, Nemeth & Leslie 2020 use softplus + 1e-6).
    - `prior`: optional prior on the constrained value.
    """

    unconstrained: Float[Array, "*shape"]
    prior: AbstractPrior | None
    transform: Literal["softplus", "exp"] = eqx.field(static=True)
    minimum: float = eqx.field(static=True)

    def __init__(
        self,
        value: Float[ArrayLike, "*shape"],
        *,
        transform: Literal["softplus", "exp"] = "softplus",
        minimum: float = 0.0,
        prior: AbstractPrior | None = None,
    ):
        if transform not in ("softplus", "exp"):
            raise ValueError(f"`transform` must be 'softplus' or 'exp', got {transform!r}.")
        value = _as_float_array(value)
        if not isinstance(value, jax.core.Tracer) and not bool(jnp.all(value > minimum)):
            raise ValueError(f"`value` must be > {minimum} for a Positive parameter, got {value}.")
        self.transform = transform
        self.minimum = float(minimum)
        self.unconstrained = self.inverse(value)
        self.prior = prior

    @property
    def value(self) -> Float[Array, "*shape"]:
        u = self.unconstrained
        if self.transform == "exp":
            shifted = jnp.exp(jnp.minimum(u, math.log(jnp.finfo(u.dtype).max) - 1))
        else:
            shifted = jax.nn.softplus(u)
        return jnp.maximum(self.minimum + shifted, lowest_above(self.minimum, u.dtype))

    def satisfies_constraint(self) -> Bool[Array, ""]:
        """Whether every element of `value` is finite and > `minimum` (true for every finite u;
        false for a NaN or infinite u)."""
        value = self.value
        return jnp.all(jnp.isfinite(value) & (value > self.minimum))

    def inverse(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        """The unconstrained coordinate u = T⁻¹(value): log(value − minimum) for `"exp"`,
        log(e^(value − minimum) − 1) for `"softplus"` (−∞ or NaN at or below `minimum`)."""
        shifted = jnp.asarray(value) - self.minimum
        return jnp.log(shifted) if self.transform == "exp" else _inverse_softplus(shifted)

    def log_jacobian(self) -> Float[Array, ""]:
        if self.transform == "exp":
            return jnp.sum(self.unconstrained)
        return jnp.sum(jax.nn.log_sigmoid(self.unconstrained))

    def trainable_spec(self) -> "Positive":
        return _spec(self, "unconstrained")
