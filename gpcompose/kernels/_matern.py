import abc
import math

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._stationary import AbstractSpectralKernel, safe_sqrt, scale_frequencies


def matern_correlation(smoothness: float, distance: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
    """The Matérn correlation ρ_ν(r) for `smoothness` ν ∈ {0.5, 1.5, 2.5} (a Python float) at
    scaled distances r = ‖x − x′‖/ℓ ≥ 0 (`distance`, any shape), elementwise:

    ν = 1/2: e^{−r};  ν = 3/2: (1 + √3 r) e^{−√3 r};  ν = 5/2: (1 + √5 r + 5r²/3) e^{−√5 r}
    (Rasmussen & Williams 2006, eq. 4.17). Another ν raises `ValueError`.
    """
    if smoothness == 0.5:
        return jnp.exp(-distance)
    if smoothness == 1.5:
        scaled = math.sqrt(3.0) * distance
        return (1.0 + scaled) * jnp.exp(-scaled)
    if smoothness == 2.5:
        scaled = math.sqrt(5.0) * distance
        return (1.0 + scaled + scaled**2 / 3.0) * jnp.exp(-scaled)
    raise ValueError(f"`smoothness` must be 0.5, 1.5 or 2.5, got {smoothness}.")


def student_t_frequencies(
    key: PRNGKeyArray, smoothness: float, shape: tuple[int, ...], dtype
) -> Float[Array, "*shape"]:
    """Standard multivariate-t draws with 2ν degrees of freedom over the last axis.

    The spectral density of the Matérn-ν kernel with unit lengthscale is a multivariate
    t with 2ν degrees of freedom: ω = g / √(χ²_{2ν} / 2ν), g ~ N(0, I).
    """
    normal_key, gamma_key = jax.random.split(key)
    gaussian = jax.random.normal(normal_key, shape, dtype)
    chi_squared = 2.0 * jax.random.gamma(gamma_key, smoothness, shape[:-1] + (1,), dtype)
    return gaussian / jnp.sqrt(chi_squared / (2.0 * smoothness))


class AbstractMatern(AbstractSpectralKernel):
    """Matérn-ν on the ARD-scaled Euclidean distance r: k = σ² ρ_ν(r)."""

    @property
    @abc.abstractmethod
    def smoothness(self) -> float:
        """ν."""

    def correlation(self, squared_distance: Float[Array, "*shape"]) -> Float[Array, "*shape"]:
        return matern_correlation(self.smoothness, safe_sqrt(squared_distance))

    def spectral_frequencies(self, key: PRNGKeyArray, num_features: int, dimension: int) -> Float[Array, "F d"]:
        dtype = self.lengthscale.value.dtype
        standard = student_t_frequencies(key, self.smoothness, (num_features, dimension), dtype)
        return scale_frequencies(standard, self.checked_lengthscale(dimension))


class Matern12(AbstractMatern):
    """Matérn-1/2 (exponential) kernel σ² e^{−r}."""

    @property
    def smoothness(self) -> float:
        return 0.5


class Matern32(AbstractMatern):
    """Matérn-3/2 kernel σ² (1 + √3 r) e^{−√3 r}."""

    @property
    def smoothness(self) -> float:
        return 1.5


class Matern52(AbstractMatern):
    """Matérn-5/2 kernel σ² (1 + √5 r + 5r²/3) e^{−√5 r}."""

    @property
    def smoothness(self) -> float:
        return 2.5
