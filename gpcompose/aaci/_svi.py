from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from .._validation import check_inputs, check_targets, require_finite
from ..kernels import AbstractKernel
from ..likelihoods import AbstractSuperGaussianLikelihood
from ..means import AbstractMean, Zero
from ._natural_step import initial_state, natural_step
from ._state import AACIInfo, AACIState
from ._validation import check_model


def decaying_step_size(num_steps: Int[Array, ""]) -> Float[Array, ""]:
    """ρ_t = (t + 100)^−0.51, the Robbins–Monro schedule of AugmentedGaussianProcesses.jl
    (`InverseDecay(τ=100, κ=0.51)`; the paper only requires a Robbins–Monro schedule)."""
    return (jnp.asarray(num_steps, jnp.result_type(float)) + 100.0) ** -0.51


def _as_step_size(value):
    return value if callable(value) else jnp.asarray(value)


class SVI(eqx.Module):
    """Sparse, minibatched natural-gradient SVI for super-Gaussian likelihoods (Galy-Fajou, Wenzel &
    Opper 2020, Alg. 3, corrected: the printed algorithm omits the N/|B| scaling of minibatch sums,
    steps in (m, S) rather than in natural parameters, and leaves out the Titsias variance term and
    a non-zero prior mean).

    With inducing inputs Z (fixed), a minibatch B of the N data points and ρ_t = `step_size`:

        c_i² = E_q h_i² with Var f_i = k_ii − ‖A_i‖² + A_i S A_iᵀ (the Titsias term),
        ω̄_i = −φ′(c_i²)/φ(c_i²),
        η̂₁ = (N/|B|) Aᵀ(g + ω̄ β − 2γ ω̄ μ₀(X_B)),   η̂₂ = −½ I − (N/|B|) Aᵀ diag(γ ω̄) A,
        η ← (1 − ρ_t) η + ρ_t η̂,

    in whitened coordinates u = μ₀(Z) + L v, A = K_BZ L⁻ᵀ (the unwhitened K_Z⁻¹ μ₀(Z) and
    −½ K_Z⁻¹ prior terms become 0 and −½ I). With an `optimizer`, one optax step on the
    minibatch augmented ELBO updates the hyperparameters after each natural step (§5.3).
    With Z = X, |B| = N and ρ = 1 a step is exactly a `CAVI` step.

    **Fields:** `kernel`, `likelihood`, `mean` (default `Zero()`), `optimizer` (optax or `None`),
    `batch_size` (`None`: all data at every step), `step_size` (a number or a schedule
    `num_steps -> ρ`; default `decaying_step_size`) and `batch_sharding` (`None`, or a
    `jax.sharding.Sharding` of the (mini)batch rows such as `NamedSharding(mesh, PartitionSpec("data"))`:
    the batch drawn inside `step` is laid out with `jax.lax.with_sharding_constraint`, so that its
    per-point local updates and sums run data-parallel over the mesh; results equal the unsharded step
    up to the order of the sums, see examples/sharding.py).
    """

    kernel: AbstractKernel
    likelihood: AbstractSuperGaussianLikelihood
    mean: AbstractMean = eqx.field(default_factory=Zero)
    optimizer: optax.GradientTransformation | None = None
    batch_size: int | None = eqx.field(default=None, static=True)
    step_size: Callable[[Int[Array, ""]], Float[Array, ""]] | Float[Array, ""] = eqx.field(
        default=decaying_step_size, converter=_as_step_size
    )
    batch_sharding: jax.sharding.Sharding | None = eqx.field(default=None, static=True)

    def __check_init__(self):
        check_model(self.kernel, self.likelihood, self.mean, self.optimizer)
        if self.batch_size is not None and (not isinstance(self.batch_size, int) or self.batch_size < 1):
            raise ValueError(f"`batch_size` must be a positive int or None, got {self.batch_size!r}.")
        if self.batch_sharding is not None and not isinstance(self.batch_sharding, jax.sharding.Sharding):
            raise ValueError(f"`batch_sharding` must be a jax.sharding.Sharding or None, got {self.batch_sharding!r}.")

    def init(self, inducing_inputs: Float[ArrayLike, "M D"]) -> AACIState:
        """q(u) = p(u) at the inducing inputs."""
        Z = require_finite(check_inputs(inducing_inputs, "inducing_inputs"), "inducing_inputs")
        return initial_state(self.kernel, self.likelihood, self.mean, Z, self.optimizer)

    def step(
        self, state: AACIState, key: PRNGKeyArray, X: Float[ArrayLike, "N D"], y: Float[ArrayLike, " N"]
    ) -> tuple[AACIState, AACIInfo]:
        """One natural-gradient step on a minibatch of (`X`, `y`), or on all of it when `batch_size`
        is None.

        The minibatch is `batch_size` indices drawn with `key` independently and uniformly from
        0 … N − 1 (with replacement, as Hoffman et al. 2013 and the Stein GP's minibatches), so that
        (N/|B|) Σ_B is an unbiased estimate of the sum over all data at O(|B|) cost per step. (Drawing
        without replacement by `jax.random.choice` permutes all N indices, an O(N) cost that would
        dominate the step on large data.)"""
        X = check_inputs(X, "X", dimension=state.inducing_inputs.shape[1])
        y = state.likelihood.targets(require_finite(check_targets(y, "y", X.shape[0]), "y"))
        num_data = X.shape[0]
        if self.batch_size is not None:
            if self.batch_size > num_data:
                raise ValueError(f"`batch_size` ({self.batch_size}) exceeds the number of data points ({num_data}).")
            batch = jax.random.randint(key, (self.batch_size,), 0, num_data)
            X, y = X[batch], y[batch]
        if self.batch_sharding is not None:
            X, y = jax.lax.with_sharding_constraint((X, y), self.batch_sharding)
        scale = jnp.asarray(num_data / X.shape[0], X.dtype)
        step_size = self.step_size(state.num_steps) if callable(self.step_size) else self.step_size
        return natural_step(state, X, y, scale, jnp.asarray(step_size, X.dtype), self.optimizer)
