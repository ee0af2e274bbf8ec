import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._errors import RESULTS
from .._jit import public_jit
from .._linalg import CholeskyFactor, cholesky, cholesky_solve, solve_triangular
from .._observations import Observations, centred_targets, make_observations, padded_gram, with_capacity
from .._posterior_interface import AbstractGaussianPosterior
from ..kernels import AbstractKernel
from ..means import AbstractMean
from ..parameters import AbstractParameter, value_of

FIT_CHANGE_LEVEL = 1.0
"""The change, in nats, of the log marginal likelihood's data-fit term that the jitter of
the factorisation may cause before `ExactPosterior.result` reports
`RESULTS.jitter_changed_fit`.

With A = K + D, r = y − m(X) and the jitter j of the factor, the data-fit term uses
Q(j) = rᵀ(A + jI)⁻¹r = Σᵢ cᵢ²/(λᵢ + j) (λᵢ, cᵢ: the eigenvalues of A and r's coordinates in
its eigenvectors), which is convex and decreasing in j. Its tangent at j therefore bounds
the change from the model asked for (j = 0) from below: Q(0) − Q(j) ≥ −j Q′(j) = j‖w‖², w =
(A + jI)⁻¹r the posterior's `weights`. The reported −½Q(j) thus exceeds the model's by at
least ½ j‖w‖², and by an unbounded amount when r has a component along a null direction of
A (duplicate inputs with different targets and noise variance 0). A change above 1 nat (a
likelihood ratio of e) alters model comparison and ML-II. The jitter policy alone cannot tell
this case from a harmless one: duplicate inputs with equal targets need the same jitter but
leave r orthogonal to the null direction, ½ j‖w‖² ≈ 0 and the posterior `successful`."""


class ExactPosterior(AbstractGaussianPosterior):
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
        """The outcome, first match in this order: the factor's code when it is not
        `successful` (`RESULTS.cholesky_failed`: finite placeholders; `RESULTS.update_failed`;
        `RESULTS.jitter_above_level`: a jitter above `JITTER_LEVEL`); `RESULTS.jitter_changed_fit`
        when the jitter changed the data-fit term of the log marginal likelihood by more than
        `FIT_CHANGE_LEVEL` (1 nat, bounded below by ½ jitter ‖weights‖²); `RESULTS.zero_noise_variance`
        when a used row has noise variance 0; otherwise `RESULTS.successful`. Computed from
        the state (O(C)), so it holds after `update` and `with_capacity` too, and, on a
        `vmap`ped batch of states, per member."""
        fit_change = 0.5 * self.factor.jitter * jnp.sum(self.weights**2, axis=-1)
        zero_noise = jnp.any(self.observations.mask & (self.observations.noise_variance == 0), axis=-1)
        result = RESULTS.where(zero_noise, RESULTS.zero_noise_variance, RESULTS.successful)
        result = RESULTS.where(fit_change > FIT_CHANGE_LEVEL, RESULTS.jitter_changed_fit, result)
        return RESULTS.where(self.factor.result == RESULTS.successful, result, self.factor.result)

    # The methods of `AbstractPosterior` are the module's functions (`gp.predict`, …),
    # imported on call: those modules import this one.
    def predict(self, X):
        """`gp.predict(self, X)`."""
        from ._predict import predict

        return predict(self, X)

    def lookahead_variance(self, X_query, x, noise_variance):
        """`gp.lookahead_variance(self, X_query, x, noise_variance)`."""
        from ._predict import lookahead_variance

        return lookahead_variance(self, X_query, x, noise_variance)

    def update(self, x, y, noise_variance):
        """`gp.update(self, x, y, noise_variance)`."""
        from ._update import update

        return update(self, x, y, noise_variance)

    def with_capacity(self, capacity: int) -> "ExactPosterior":
        """The same posterior with a buffer of `capacity` rows (`update` fills free rows):
        free rows are added or dropped at the end, the factor and weights extended as
        `condition` would build them (identity rows of K + D + jitter·I, zero weights)."""
        observations = with_capacity(self.observations, capacity)
        padding = capacity - self.observations.capacity
        if padding >= 0:
            free_diagonal = jnp.full((padding,), jnp.sqrt(1.0 + self.factor.jitter), self.factor.lower.dtype)
            lower = jax.scipy.linalg.block_diag(self.factor.lower, jnp.diag(free_diagonal))
            weights = jnp.pad(self.weights, (0, padding))
        else:
            lower, weights = self.factor.lower[:capacity, :capacity], self.weights[:capacity]
        factor = CholeskyFactor(lower, self.factor.jitter, self.factor.result)
        return ExactPosterior(self.kernel, self.mean, observations, factor, weights)

    @property
    def support(self):
        """The training inputs and the mask of the used buffer rows."""
        return self.observations.inputs, self.observations.mask

    def functional_moments(self, cross):
        """(c (K + D)⁻¹ (y − m(X)), c (K + D)⁻¹ cᵀ) for cross-covariances c with f(X)
        (Rasmussen & Williams 2006, eqs. 2.25–2.26 applied to linear functionals)."""
        projected = solve_triangular(self.factor.lower, cross.T)
        return cross @ self.weights, projected.T @ projected


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
    - `noise_variance`: σ² ≥ 0, a scalar, one value per row, or a parameter (for fitting).
      0 is a noise-free (interpolating) GP: it is conditioned as any other, and its `result`
      says `RESULTS.zero_noise_variance` (one member of a `vmap`ped batch does not stop the
      others). A negative or non-finite value raises at run time (`eqx.error_if`); under
      `vmap` that stops the whole batch, and the message names the first such member.
    - `mask`: optional boolean `(N,)`; rows marked False are ignored.
    - `capacity`: total number of rows to allocate (≥ N) so that `update` can append
      observations without changing shapes.

    **Returns:** an `ExactPosterior`; check `posterior.result` for a failed factorisation,
    a material jitter or a zero noise variance.
    """
    observations = make_observations(
        kernel, mean, X, y, value_of(noise_variance), mask, capacity, zero_noise_allowed=True
    )
    factor = cholesky(noisy_gram(kernel, observations))
    weights = cholesky_solve(factor.lower, centred_targets(mean, observations))
    return ExactPosterior(kernel, mean, observations, factor, weights)
