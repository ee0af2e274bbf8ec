import math
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import check_inputs
from ._base import AbstractKernel, select_dims


class RandomFourierFeatures(eqx.Module):
    """Random Fourier features φ(x) = √(2σ²/F) cos(Ωx + b) (Rahimi & Recht 2007).

    With ω_f drawn from the kernel's spectral density and b_f ~ U[0, 2π),
    E[φ(x)ᵀφ(x′)] = k(x, x′) and the Monte-Carlo error of φ(X)φ(X)ᵀ falls like 1/√F.
    `cosine` computes cos: `jnp.cos`, or a faster approximation where only a search depends
    on the values (`sampling.sample_extrema` swaps in a polynomial).
    """

    frequencies: Float[Array, "F d"]
    phases: Float[Array, " F"]
    variance: Float[Array, ""]
    active_dims: tuple[int, ...] | None = eqx.field(static=True)
    cosine: Callable[[Array], Array] = eqx.field(static=True, default=jnp.cos)

    @property
    def num_features(self) -> int:
        """F, the number of random features."""
        return self.phases.shape[0]

    def __call__(self, X: Float[ArrayLike, "N D"]) -> Float[Array, "N F"]:
        X = check_inputs(X, "X")
        projected = jax.vmap(lambda x: self.frequencies @ select_dims(self.active_dims, x))(X)
        amplitude = jnp.sqrt(2.0 * self.variance / self.num_features)
        return amplitude * self.cosine(projected + self.phases[None, :])


def random_features(
    kernel: AbstractKernel, key: PRNGKeyArray, num_features: int, dimension: int
) -> RandomFourierFeatures:
    """Draw `num_features` random Fourier features of a spectral kernel on `dimension` inputs.

    Works for `SquaredExponential`, the Matérn kernels and `ProductMatern`.
    """
    if not hasattr(kernel, "spectral_frequencies"):
        raise ValueError(
            f"`kernel` ({type(kernel).__name__}) has no spectral density; random features "
            "need SquaredExponential, Matern12/32/52 or ProductMatern."
        )
    active = dimension if kernel.active_dims is None else len(kernel.active_dims)
    frequency_key, phase_key = jax.random.split(key)
    frequencies = kernel.spectral_frequencies(frequency_key, num_features, active)
    dtype = frequencies.dtype
    phases = jax.random.uniform(phase_key, (num_features,), dtype, 0.0, 2 * math.pi)
    return RandomFourierFeatures(frequencies, phases, kernel.variance.value, kernel.active_dims)
