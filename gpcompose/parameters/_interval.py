import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from ..priors import AbstractPrior
from ._parameter import AbstractParameter, _as_float_array, _spec


class Interval(AbstractParameter):
    """A hyperparameter constrained to `lower < value < upper` (elementwise).

    value = lower + (upper − lower)·σ(u), σ the logistic function; log-Jacobian
    log(upper − lower) + log σ(u) + log σ(−u). The bounds are arrays (not static), so they
    may depend on data, e.g. the width of a box, without recompiling. Where the formula rounds
    onto a bound (σ(u) is 0 in float64 for u below about −745, and 1 above about 37), the
    value is moved inside it by max(ε·|bound|, tiny) (ε, tiny: the dtype's machine epsilon and
    smallest normal number), with zero gradient there [ours], so that every finite u gives a
    value strictly inside the interval (as for `Positive`).

    **Arguments:**

    - `value`: initial constrained value(s); must lie strictly inside the bounds.
    - `lower`, `upper`: bounds, broadcastable to `value`'s shape, `lower < upper`.
    - `prior`: optional prior on the constrained value (its density is then truncated
      to the interval, unnormalised: the MAP and gradients do not need the constant).
    """

    unconstrained: Float[Array, "*shape"]
    lower: Float[Array, "*shape"]
    upper: Float[Array, "*shape"]
    prior: AbstractPrior | None

    def __init__(
        self,
        value: Float[ArrayLike, "*shape"],
        *,
        lower: Float[ArrayLike, "*shape"] = 0.0,
        upper: Float[ArrayLike, "*shape"],
        prior: AbstractPrior | None = None,
    ):
        value = _as_float_array(value)
        lower = jnp.broadcast_to(jnp.asarray(lower, value.dtype), value.shape)
        upper = jnp.broadcast_to(jnp.asarray(upper, value.dtype), value.shape)
        concrete = not any(isinstance(x, jax.core.Tracer) for x in (value, lower, upper))
        if concrete and not bool(jnp.all(lower < upper)):
            raise ValueError(f"`lower` must be below `upper` for an Interval parameter, got {lower} and {upper}.")
        if concrete and not bool(jnp.all((value > lower) & (value < upper))):
            raise ValueError(f"`value` must lie strictly inside ({lower}, {upper}), got {value}.")
        self.lower = lower
        self.upper = upper
        self.unconstrained = self.inverse(value)
        self.prior = prior

    @property
    def value(self) -> Float[Array, "*shape"]:
        value = self.lower + (self.upper - self.lower) * jax.nn.sigmoid(self.unconstrained)
        info = jnp.finfo(value.dtype)
        inside_lower = self.lower + jnp.maximum(jnp.abs(self.lower) * info.eps, info.tiny)
        inside_upper = self.upper - jnp.maximum(jnp.abs(self.upper) * info.eps, info.tiny)
        return jnp.clip(value, inside_lower, inside_upper)

    def satisfies_constraint(self) -> Bool[Array, ""]:
        """Whether every element of `value` lies strictly inside (`lower`, `upper`) (true for
        every finite u; false for a NaN u)."""
        value = self.value
        return jnp.all((value > self.lower) & (value < self.upper))

    def inverse(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        """u = logit((value − lower)/(upper − lower)) (±∞ at the bounds)."""
        fraction = (jnp.asarray(value) - self.lower) / (self.upper - self.lower)
        return jnp.log(fraction) - jnp.log1p(-fraction)

    def log_jacobian(self) -> Float[Array, ""]:
        u = self.unconstrained
        return jnp.sum(jnp.log(self.upper - self.lower) + jax.nn.log_sigmoid(u) + jax.nn.log_sigmoid(-u))

    def trainable_spec(self) -> "Interval":
        return _spec(self, "unconstrained")
