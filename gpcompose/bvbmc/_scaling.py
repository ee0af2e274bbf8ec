"""The output scalings of BVBMC as modules (Naiff 2019, thesis §6.1.1.2): the choices of
`BVBMC.scaling`, each giving the (shift, scale) with which the GP is fitted to
ỹ = (y − shift)/scale."""

import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from .._standardise import location_and_scale


class AbstractOutputScaling(eqx.Module):
    """An output scaling (thesis §6.1.1.2): `scaling(y, mask)` is the (shift, scale) of
    ỹ = (y − shift)/scale, computed over the rows of `y` that `mask` marks as used."""

    @abc.abstractmethod
    def __call__(self, y: Float[Array, " C"], mask: Bool[Array, " C"]) -> tuple[Float[Array, ""], Float[Array, ""]]:
        """(shift, scale) over the used rows."""


class Normalize(AbstractOutputScaling):
    """normalize: shift the mean and scale the unbiased sd of the used values (thesis
    §6.1.1.2); the scale is 1 when they are fewer than 3 or all equal."""

    def __call__(self, y, mask):
        return location_and_scale(y, mask, ddof=1)


class ZeroMax(AbstractOutputScaling):
    """zeromax: shift the largest used value to 0 and leave the scale at 1 (thesis §6.1.1.2)."""

    def __call__(self, y, mask):
        return jnp.max(jnp.where(mask, y, -jnp.inf)), jnp.ones((), y.dtype)
