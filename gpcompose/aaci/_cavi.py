import equinox as eqx
import jax.numpy as jnp
import optax
from jaxtyping import ArrayLike, Float, PRNGKeyArray

from .._validation import check_inputs, check_targets, require_finite
from ..kernels import AbstractKernel
from ..likelihoods import AbstractSuperGaussianLikelihood
from ..means import AbstractMean, Zero
from ._natural_step import initial_state, natural_step
from ._state import AACIInfo, AACIState
from ._validation import check_model


class CAVI(eqx.Module):
    """Coordinate-ascent VI for a full GP with a super-Gaussian likelihood (Galy-Fajou et al. 2020, Alg. 1).

    Each step sets c_i² = E_q h_i², ω̄_i = −φ′(c_i²)/φ(c_i²) and then

        S = (K⁻¹ + diag(2 ω̄ ∘ γ))⁻¹,   m = S (K⁻¹ μ₀ + g + ω̄ ∘ β),

    the closed-form optimum of the augmented ELBO, which therefore never decreases (with fixed
    hyperparameters). q(f) is stored by the natural parameters of v = L⁻¹(f − μ₀), K = L Lᵀ,
    so no K⁻¹ is formed. With an `optimizer`, one optax step on the hyperparameters of the
    kernel, likelihood and mean follows each update (the "optional ADAM step" of Alg. 1).

    **Fields:** `kernel`, `likelihood` (an `AbstractSuperGaussianLikelihood`), `mean`
    (default `Zero()`) and `optimizer` (an optax transformation or `None`).

    !!! Example
        ```python
        cavi = gpcompose.aaci.CAVI(kernel, gpcompose.likelihoods.Logistic())
        state = cavi.init(X)
        state, info = gpcompose.run(cavi, state, key, 50, X, y)
        ```
    """

    kernel: AbstractKernel
    likelihood: AbstractSuperGaussianLikelihood
    mean: AbstractMean = eqx.field(default_factory=Zero)
    optimizer: optax.GradientTransformation | None = None

    def __check_init__(self):
        check_model(self.kernel, self.likelihood, self.mean, self.optimizer)

    def init(self, X: Float[ArrayLike, "N D"]) -> AACIState:
        """q(f) = p(f), the prior at the training inputs `X`."""
        X = require_finite(check_inputs(X, "X"), "X")
        return initial_state(self.kernel, self.likelihood, self.mean, X, self.optimizer)

    def step(
        self, state: AACIState, key: PRNGKeyArray, X: Float[ArrayLike, "N D"], y: Float[ArrayLike, " N"]
    ) -> tuple[AACIState, AACIInfo]:
        """One CAVI update on all data. `key` is not used (the update is deterministic); it is taken
        so that every algorithm has the same step signature."""
        del key
        X = check_inputs(X, "X", dimension=state.inducing_inputs.shape[1])
        if X.shape[0] != state.inducing_inputs.shape[0]:
            raise ValueError(
                f"`X` must be the {state.inducing_inputs.shape[0]} training inputs of `init`, got shape {X.shape}."
            )
        y = state.likelihood.targets(require_finite(check_targets(y, "y", X.shape[0]), "y"))
        one = jnp.ones((), X.dtype)
        return natural_step(state, X, y, one, one, self.optimizer)
