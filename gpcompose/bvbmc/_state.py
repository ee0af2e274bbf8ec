import equinox as eqx
from jaxtyping import Array, Float, Int

from ..active_learning import AbstractLearnerState, Evaluations
from ..boosting import BoostingState
from ..gp import ExactPosterior
from ..mixtures import GaussianMixture


class BVBMCState(AbstractLearnerState):
    """Everything a BVBMC run carries between `ask`/`tell` calls, in fixed-capacity buffers.

    - `evaluations`: every evaluation (initial ones first; failed ones kept with
      `succeeded` False); its `values` are raw values of log ḡ.
    - `boosting`: the mixture q (`boosting.mixture`) and the GP `boosting.surrogate` of log ḡ
      in raw units, and the number of boosting steps.
    - `shift`, `scale`: ỹ = (y − shift)/scale maps raw values to the normalised units of the
      fit and the acquisitions; `noise_variance` is the GP's fixed jitter noise in raw units.
    """

    evaluations: Evaluations
    boosting: BoostingState
    shift: Float[Array, ""]
    scale: Float[Array, ""]
    noise_variance: Float[Array, ""]


class BVBMCAskInfo(eqx.Module):
    """Diagnostics of one `ask`: which of the learner's `acquisitions` chose the point (its
    index) and the log acquisition value (regulariser included) at that point."""

    acquisition: Int[Array, ""]
    value: Float[Array, ""]


class BVBMCResult(eqx.Module):
    """Outcome of a BVBMC run.

    - `posterior`: the boosted `GaussianMixture` (`.sample(key, n)`, `.log_prob(x)`).
    - `elbo`, `elbo_sd`: the surrogate ELBO of the mixture (an estimate of log Z) in raw
      units, and the GP's posterior sd of its expected-log-density part (BMC variance).
    - `surrogate`: the final GP of the log density, in raw units.
    - `X`, `y`: every successful evaluation (initial and new); `num_failed`: evaluations
      after `init` that returned NaN/±inf or raised.
    """

    posterior: GaussianMixture
    elbo: Float[Array, ""]
    elbo_sd: Float[Array, ""]
    surrogate: ExactPosterior
    X: Float[Array, "N D"]
    y: Float[Array, " N"]
    num_failed: int = eqx.field(static=True)
