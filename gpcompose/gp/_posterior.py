import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._errors import RESULTS
from .._jit import public_jit
from .._linalg import CholeskyFactor, cholesky, cholesky_solve
from .._observations import Observations, centred_targets, check_prior, make_observations, padded_gram
from ..kernels import AbstractKernel
from ..means import AbstractMean
from ..parameters import AbstractParameter, value_of


class ExactPosterior(eqx.Module):
    """A GP conditioned on Gaussian observations, with its factorisation cached.

    With K = k(X, X) and D = diag(σ²_n):
        factor  = chol(K + D)                      (identity on unused buffer slots)
        weights = (K + D)⁻¹ (y − m(X))              (zero on unused slots)
    so that the posterior mean is m(x) + k(x, X) weights (Rasmussen & Williams eq. 2.25).
    """

    kernel: AbstractKernel
    mean: AbstractMean
    observations: Observations
    factor: CholeskyFactor
    weights: Float[Array, " C"]

    @property
    def result(self) -> RESULTS:
        """`RESULTS.successful`, or `RESULTS.cholesky_failed` when the factorisation of K + D failed
        even at the largest jitter (the state then holds finite placeholders)."""
        return self.factor.result


def noisy_gram(kernel: AbstractKernel, observations: Observations) -> Float[Array, "C C"]:
    """K + D on used rows, the identity on unused ones."""
    noise = jnp.where(observations.mask, observations.noise_variance, 0.0)
    return padded_gram(kernel, observations.inputs, observations.mask) + jnp.diag(noise)


@public_jit(static_argnames=("capacity",))
def condition(
    kernel: AbstractKernel,
    mean: AbstractMean,
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    noise_variance: Float[ArrayLike, "*N"] | AbstractParameter,
    *,
    mask: Bool[ArrayLike, " N"] | None = None,
    capacity: int | None = None,
) -> ExactPosterior:
    """Condition a GP prior (`kernel`, `mean`) on observations y = f(X) + ε, ε ~ N(0, σ²).

    **Arguments:**

    - `kernel`, `mean`: the prior.
    - `X`: inputs `(N, D)`; `y`: targets `(N,)`.
    - `noise_variance`: σ², a scalar, one value per row, or a parameter (for fitting).
    - `mask`: optional boolean `(N,)`; rows marked False are ignored.
    - `capacity`: total number of rows to allocate (≥ N) so that `update` can append
      observations without changing shapes.

    **Returns:** an `ExactPosterior`; check `posterior.result` for a failed factorisation.
    """
    check_prior(kernel, mean)
    observations = make_observations(X, y, value_of(noise_variance), mask, capacity)
    factor = cholesky(noisy_gram(kernel, observations))
    weights = cholesky_solve(factor.lower, centred_targets(mean, observations))
    return ExactPosterior(kernel, mean, observations, factor, weights)
