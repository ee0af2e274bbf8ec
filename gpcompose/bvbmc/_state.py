import equinox as eqx
from jaxtyping import Array, Bool, Float, Int, UInt32

from .._buffer_state import AbstractBufferState
from ..boosting import Boosting, BoostingState
from ._options import BVBMCOptions


class BVBMCState(AbstractBufferState):
    """Everything a BVBMC run carries between `ask`/`tell` calls, in fixed-capacity buffers.

    The buffers hold `capacity = N₀ + budget` rows: the initial evaluations, then one row
    per told evaluation, failed ones included (`succeeded` False), so no evaluation is
    lost. `log_densities` are raw values of log ḡ. `boosting` holds the mixture and the
    GP in raw units (`shift`, `scale` map them to the normalised units of the fit and
    the acquisitions); `noise_variance` is the GP's fixed jitter noise in raw units.
    """

    inputs: Float[Array, "C D"]
    log_densities: Float[Array, " C"]
    evaluated: Bool[Array, " C"]
    succeeded: Bool[Array, " C"]
    num_initial: Int[Array, ""]
    num_evaluations: Int[Array, ""]
    boosting: BoostingState
    algorithm: Boosting
    shift: Float[Array, ""]
    scale: Float[Array, ""]
    noise_variance: Float[Array, ""]
    key_data: UInt32[Array, "..."]  # raw key data, so that states serialise
    options: BVBMCOptions = eqx.field(static=True)
