import abc

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from ..priors import AbstractPrior


class AbstractParameter(eqx.Module):
    """A hyperparameter stored in an unconstrained coordinate `u`, exposed as `value`.

    Optimisers, SVGD and samplers move `u` freely on ℝ; models read `value = T(u)`.
    A prior is a density on `value`; in the coordinate `u` it becomes

        log p_u(u) = log p(T(u)) + log |T'(u)|,

    which is what `log_prior` returns (the log-Jacobian is summed over elements).
    """

    prior: eqx.AbstractVar[AbstractPrior | None]

    @property
    @abc.abstractmethod
    def value(self) -> Float[Array, "*shape"]:
        """The constrained value used by models."""

    @abc.abstractmethod
    def log_jacobian(self) -> Float[Array, ""]:
        """Σ log |dT/du| over the elements (zero for identity transforms)."""

    @abc.abstractmethod
    def trainable_spec(self) -> "AbstractParameter":
        """A copy of `self` with `True` at trainable leaves and `False` elsewhere."""

    def satisfies_constraint(self) -> Bool[Array, ""]:
        """Whether every element of `value` is finite (a subclass with a constraint checks it
        too), so that a model can use it."""
        return jnp.all(jnp.isfinite(self.value))

    def log_prior(self) -> Float[Array, ""]:
        """Log prior density of the unconstrained coordinate (0 when there is no prior)."""
        if self.prior is None:
            return jnp.zeros((), self.value.dtype)
        return jnp.sum(self.prior.log_prob(self.value)) + self.log_jacobian()


def _as_float_array(value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
    value = jnp.asarray(value)
    if not jnp.issubdtype(value.dtype, jnp.floating):
        value = value.astype(jnp.result_type(float))
    return value


def _spec(module: eqx.Module, trainable_field: str | None) -> eqx.Module:
    """Filter spec: True at `trainable_field`, False at every other leaf."""
    spec = jax.tree_util.tree_map(lambda _: False, module)
    if trainable_field is None:
        return spec
    return eqx.tree_at(lambda m: getattr(m, trainable_field), spec, True)
