from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from ..priors import AbstractPrior
from ._parameter import AbstractParameter, _as_float_array, _spec


def _inverse_softplus(value):
    """log(eˣ − 1) computed as x + log(−expm1(−x)) so that large x does not overflow."""
    return value + jnp.log(-jnp.expm1(-value))


class Positive(AbstractParameter):
    """A hyperparameter constrained to `value > minimum`.

    `transform="softplus"` (default): value = minimum + log(1 + eᵘ), log-Jacobian
    log σ(u). `transform="exp"`: value = minimum + eᵘ, log-Jacobian u.

    **Arguments:**

    - `value`: initial constrained value(s); must exceed `minimum`.
    - `transform`: `"softplus"` or `"exp"`.
    - `minimum`: lower bound (the Stein GP document uses softplus + 1e-6).
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
        if self.transform == "exp":
            return self.minimum + jnp.exp(self.unconstrained)
        return self.minimum + jax.nn.softplus(self.unconstrained)

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
