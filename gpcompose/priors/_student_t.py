import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ._base import AbstractPrior, sample_dtype


class StudentT(AbstractPrior):
    """Student-t prior with `df` degrees of freedom, location `loc` and `scale`.

    log p(x) = log Γ((ν+1)/2) − log Γ(ν/2) − ½ log(νπ) − log s − (ν+1)/2 · log(1 + z²/ν),
    z = (x − loc)/s. VBMC puts a Student-t (ν = 3) on log-lengthscales: use
    `LogScale(StudentT(3.0, loc, scale))`. `sample` draws loc + s · T, T a standard
    Student-t with ν degrees of freedom (`jax.random.t`).
    """

    df: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)
    loc: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)
    scale: Float[Array, "*shape"] = eqx.field(converter=jnp.asarray)

    def log_prob(self, value: Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
        z = (jnp.asarray(value) - self.loc) / self.scale
        return (
            gammaln(0.5 * (self.df + 1))
            - gammaln(0.5 * self.df)
            - 0.5 * jnp.log(self.df * jnp.pi)
            - jnp.log(self.scale)
            - 0.5 * (self.df + 1) * jnp.log1p(z**2 / self.df)
        )

    def sample(self, key: PRNGKeyArray, shape: tuple[int, ...]) -> Float[Array, "*shape"]:
        df, loc, scale = (jnp.broadcast_to(parameter, shape) for parameter in (self.df, self.loc, self.scale))
        return loc + scale * jax.random.t(key, df, shape, sample_dtype(scale))
