"""The prior means of the BVBMC surrogate as modules: the choices of `BVBMC.mean`. Each
builds the starting `gpcompose.means` mean of ML-II in scaled units ỹ = (y − shift)/scale
(Naiff 2019, thesis §6.1.1.2) and re-expresses the fitted one on the raw outputs y."""

import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from ..means import AbstractMean, Constant, NegativeQuadratic
from ..parameters import Fixed, Positive


def _offset_constant(scaled: Float[Array, " C"], mask: Bool[Array, " C"], offset: float) -> Float[Array, ""]:
    """C = ỹ_min − K_C (ỹ_max − ỹ_min) over the used rows (thesis eq. 6.11)."""
    high = jnp.max(jnp.where(mask, scaled, -jnp.inf))
    low = jnp.min(jnp.where(mask, scaled, jnp.inf))
    return low - offset * (high - low)


class AbstractPriorMean(eqx.Module):
    """A prior mean of the BVBMC surrogate: its starting mean in scaled units, the constant C
    that starts the default kernel's outputscale, and the fitted mean on the raw outputs."""

    @abc.abstractmethod
    def constant(self, scaled: Float[Array, " C"], mask: Bool[Array, " C"]) -> Float[Array, ""]:
        """C in scaled units; the default kernel starts at outputscale −C/2 when C < 0, else 1."""

    @abc.abstractmethod
    def initial(
        self, X: Float[Array, "C D"], scaled: Float[Array, " C"], mask: Bool[Array, " C"], spread: Float[Array, " D"]
    ) -> AbstractMean:
        """The starting mean of ML-II on the scaled outputs of the used rows of (`X`, `scaled`);
        `spread` is the sd of the used inputs."""

    @abc.abstractmethod
    def raw_units(self, mean: AbstractMean, shift: Float[Array, ""], scale: Float[Array, ""]) -> AbstractMean:
        """The (fitted) scaled-units `mean` m on y itself: scale · m + shift (thesis eqs. 6.7–6.9)."""


class ConstantPriorMean(AbstractPriorMean):
    """A fixed constant C = ỹ_min − K_C (ỹ_max − ỹ_min) (thesis eq. 6.11, §6.1.2), below the data so
    that the surrogate decays away from it; not fitted by ML-II.

    `offset` is K_C; `value`, if given, fixes C in scaled units instead (e.g. −20 with
    `ZeroMax`, as the thesis's code allows).
    """

    offset: float = eqx.field(static=True, default=1.0)
    value: float | None = eqx.field(static=True, default=None)

    def constant(self, scaled, mask):
        if self.value is not None:
            return jnp.asarray(self.value, scaled.dtype)
        return _offset_constant(scaled, mask, self.offset)

    def initial(self, X, scaled, mask, spread):
        return Constant(Fixed(self.constant(scaled, mask)))

    def raw_units(self, mean, shift, scale):
        return Constant(Fixed(scale * mean.constant.value + shift))


class NegativeQuadraticPriorMean(AbstractPriorMean):
    """A negative quadratic (`gpcompose.means.NegativeQuadratic`) fitted by ML-II with the kernel,
    started at maximum ỹ_max, centre the best input and scales the sd of the inputs [ours].

    Its C, which only starts the default kernel's outputscale, is eq. 6.11's with K_C = 1.
    """

    def constant(self, scaled, mask):
        return _offset_constant(scaled, mask, 1.0)

    def initial(self, X, scaled, mask, spread):
        best = X[jnp.argmax(jnp.where(mask, scaled, -jnp.inf))]
        return NegativeQuadratic(jnp.max(jnp.where(mask, scaled, -jnp.inf)), best, Positive(spread))

    def raw_units(self, mean, shift, scale):
        return NegativeQuadratic(
            scale * mean.maximum.value + shift, mean.location.value, Positive(mean.scale.value / jnp.sqrt(scale))
        )
