import equinox as eqx
import jax
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from ._options import BOOptions


class BOState(eqx.Module):
    """A Bayesian-optimisation run (maximisation) in fixed-capacity buffers.

    `inputs` are scaled to the unit cube [0, 1]^D (document Sec. 5); `targets` are the raw
    values. One row per told evaluation, failed ones included (`succeeded` False), so
    `ask`/`tell` compile once. The bounds are in raw units; an η of None means the
    document's default in standardised units (`BOOptions`).
    """

    inputs: Float[Array, "C D"]
    targets: Float[Array, " C"]
    evaluated: Bool[Array, " C"]
    succeeded: Bool[Array, " C"]
    num_evaluations: Int[Array, ""]
    num_initial: Int[Array, ""]
    lower: Float[Array, " D"]
    upper: Float[Array, " D"]
    f_plus: Float[Array, ""] | None
    f_minus: Float[Array, ""] | None
    eta_plus: Float[Array, ""] | None
    eta_minus: Float[Array, ""] | None
    options: BOOptions = eqx.field(static=True)

    @property
    def capacity(self) -> int:
        """C, the number of rows of the evaluation buffers: the total budget, initial design included."""
        return self.targets.shape[0]

    @property
    def dimension(self) -> int:
        """The input dimension D."""
        return self.inputs.shape[1]

    def scale_to_unit(self, x: Float[Array, " D"]) -> Float[Array, " D"]:
        """Map raw inputs to the unit cube: u = (x − lower)/(upper − lower)."""
        return (x - self.lower) / (self.upper - self.lower)

    def scale_from_unit(self, u: Float[Array, " D"]) -> Float[Array, " D"]:
        """Map unit-cube inputs back to raw units: x = lower + (upper − lower) u."""
        return self.lower + (self.upper - self.lower) * u


def split_key(key: PRNGKeyArray, num: int):
    """`jax.random.split`, accepting raw uint32 keys too."""
    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    return jax.random.split(key, num)
