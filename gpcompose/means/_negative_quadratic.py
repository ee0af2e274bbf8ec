import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from ..parameters import AbstractParameter, as_real, positive_converter
from ._base import AbstractMean


class NegativeQuadratic(AbstractMean):
    """m(x) = m₀ − ½ Σ_d (x_d − μ_d)² / ω_d², the VBMC/SVBMC mean (Li et al. 2023, eq. S4).

    It makes exp(GP) integrable: the surrogate log density decays quadratically far from
    the data. `maximum` is m₀, `location` μ, `scale` ω (positive).
    """

    maximum: AbstractParameter = eqx.field(converter=as_real, default=0.0)
    location: AbstractParameter = eqx.field(converter=as_real, default=0.0)
    scale: AbstractParameter = eqx.field(converter=positive_converter("scale"), default=1.0)

    def evaluate(self, x: Float[Array, " D"]) -> Float[Array, ""]:
        standardised = (x - self.location.value) / self.scale.value
        return self.maximum.value - 0.5 * jnp.sum(standardised**2)
