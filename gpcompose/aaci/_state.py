import equinox as eqx
import optax
from jaxtyping import Array, Float, Int

from .._errors import RESULTS
from ..kernels import AbstractKernel
from ..likelihoods import AbstractSuperGaussianLikelihood
from ..means import AbstractMean
from ._variational import NaturalGaussian


class AACIState(eqx.Module):
    """State of `CAVI` and `SVI`: the variational posterior q(v) over whitened inducing values, the
    model (its hyperparameters change when an optimiser trains them), the inducing inputs (the
    training inputs for `CAVI`), the optimiser state (`None` without an optimiser) and the step count."""

    variational: NaturalGaussian
    kernel: AbstractKernel
    likelihood: AbstractSuperGaussianLikelihood
    mean: AbstractMean
    inducing_inputs: Float[Array, "M D"]
    optimizer_state: optax.OptState | None
    num_steps: Int[Array, ""]


class AACIInfo(eqx.Module):
    """Diagnostics of one CAVI/SVI step.

    - `elbo`: the collapsed augmented ELBO at the new q and the incoming hyperparameters (a
      minibatch estimate, scaled by N/|B|, when `SVI` minibatches).
    - `step_size`: the interpolation weight ρ_t used.
    - `result`: `RESULTS.successful` unless a Cholesky factorisation needed more than the
      largest jitter.
    """

    elbo: Float[Array, ""]
    step_size: Float[Array, ""]
    result: RESULTS
