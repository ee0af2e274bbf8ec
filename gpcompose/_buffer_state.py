import equinox as eqx
import jax
from jaxtyping import Array, Float, PRNGKeyArray, UInt32


class AbstractBufferState(eqx.Module):
    """The shared part of the active-learning workflow states (`svbmc`, `bvbmc`): evaluations
    in fixed-capacity buffers and the run's key, stored as raw key data so that states
    serialise with `eqx.tree_serialise_leaves`."""

    inputs: eqx.AbstractVar[Float[Array, "C D"]]
    log_densities: eqx.AbstractVar[Float[Array, " C"]]
    key_data: eqx.AbstractVar[UInt32[Array, "..."]]

    @property
    def key(self) -> PRNGKeyArray:
        """The run's PRNG key, rebuilt from `key_data`."""
        return jax.random.wrap_key_data(self.key_data)

    @property
    def capacity(self) -> int:
        """C, the number of rows of the evaluation buffers."""
        return self.log_densities.shape[0]

    @property
    def dimension(self) -> int:
        """The input dimension D of the log density."""
        return self.inputs.shape[1]
