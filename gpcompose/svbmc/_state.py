import equinox as eqx
from jaxtyping import Array, Bool, Float, Int

from ..active_learning import AbstractLearnerState, Evaluations
from ..mixtures import VBMCMixture
from ..sparse import SparsePosterior
from ..transforms import WhitenedTransform
from ._report import RoundHistory


class SVBMCState(AbstractLearnerState):
    """Everything an SVBMC run carries between `ask`/`tell` calls, in fixed-capacity buffers.

    `evaluations` holds `N₀ + buffer_rows(budget)` rows in the inference space w (unbounded, whitened
    once `transform` holds a whitening): the initial evaluations first, then one row per
    told evaluation, failed ones included (`succeeded` False). Its `values` are
    log p(x(w)) + log|dx/dw| in that space and its `noise_variance` the observation
    variance σ²_obs of each value.
    """

    evaluations: Evaluations
    surrogate: SparsePosterior  # the sparse GP of the log density in w
    posterior: VBMCMixture  # the variational mixture q(w)
    # the mixture the last retraining started from (at `init`, `posterior`): a stuck round keeps
    # whichever of the two has the higher ELBO (`_training.retrain`)
    earlier_posterior: VBMCMixture
    elbo: Float[Array, ""]
    elbo_sd: Float[Array, ""]
    center: Float[Array, " D"]
    width: Float[Array, " D"]
    transform: WhitenedTransform
    # the whitening pass `init` kept (`_whitening.fit_and_whiten`): 0 the start space, 1 … P a
    # space whitened by a fitted q; −1 without whitening
    whitening_pass: Int[Array, ""]
    # points in w for the round's first `ask`s when `stuck`: the tops of the surrogate
    # mountains that the last retraining's rejected mixtures found (`_training.retrain`)
    probes: Float[Array, "2 D"]
    stuck: Bool[Array, ""]
    # where the last retraining's hyperparameters came from: `_training.FITTED` (0),
    # `UNFITTED_START` (1: every SGPR fit peaked), `LAST_ROUND` (2: the new mixture found a mountain) or
    # `KEPT` (3: a round between refits of `SVBMC.refit_schedule`)
    hyperparameter_source: Int[Array, ""]
    # the last rounds' mixtures and ELBOs, from which `result` picks the round to report (`_report.py`).
    # Its newest slot repeats `posterior`, `elbo` and `elbo_sd`. Those stay fields, not properties that
    # index the ring: on a batch of states (after `vmap`) each run's newest slot differs.
    history: RoundHistory
    noisy: bool = eqx.field(static=True)  # whether `init` was given `noise_sd` (the IMIQR acquisition)
