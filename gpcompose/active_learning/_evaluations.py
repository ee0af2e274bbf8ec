"""The fixed-capacity buffer of a run's evaluations, shared by every active learner."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from .._validation import raise_if


class Evaluations(eqx.Module):
    """Every evaluation of an active-learning run, in buffers of a fixed capacity.

    Rows `0 … num_initial − 1` hold the evaluations given to `init`; each evaluation told
    afterwards takes the next row, a failed one included (`succeeded` False), so that no
    evaluation is ever lost and `ask`/`tell` compile once for the whole run. The capacity is
    `num_initial + budget`. `inputs` and `values` are in the learner's own space (e.g. an
    unbounded or unit-cube space); a failed row holds placeholder values that no fit uses.
    """

    inputs: Float[Array, "C D"]
    values: Float[Array, " C"]
    noise_variance: Float[Array, " C"]
    evaluated: Bool[Array, " C"]
    succeeded: Bool[Array, " C"]
    num_initial: int = eqx.field(static=True)

    def __check_init__(self):
        if not 0 <= self.num_initial <= self.values.shape[-1]:
            raise ValueError(f"`num_initial` ({self.num_initial}) must lie in [0, capacity {self.values.shape[-1]}].")

    @classmethod
    def start(
        cls,
        X: Float[Array, "N D"],
        y: Float[Array, " N"],
        noise_variance: Float[Array, " N"],
        usable: Bool[Array, " N"],
        budget: int,
    ) -> "Evaluations":
        """A buffer of `N + budget` rows holding the initial evaluations (`usable` marks
        those that may be fitted) and `budget` free rows."""
        num_initial = X.shape[0]
        usable = jnp.asarray(usable, bool)
        given = cls(
            inputs=jnp.where(usable[:, None], X, 0.0),
            values=jnp.where(usable, y, 0.0),
            noise_variance=jnp.where(usable, noise_variance, 1.0),
            evaluated=jnp.ones((num_initial,), bool),
            succeeded=usable,
            num_initial=num_initial,
        )
        return given.with_budget(budget)

    @property
    def capacity(self) -> int:
        """C = `num_initial + budget`, the number of rows."""
        return self.values.shape[-1]

    @property
    def budget(self) -> int:
        """The number of evaluations the run makes after `init`."""
        return self.capacity - self.num_initial

    @property
    def dimension(self) -> int:
        """D, the number of input coordinates."""
        return self.inputs.shape[-1]

    @property
    def num_evaluations(self) -> Int[Array, ""]:
        """How many evaluations were told since `init` (failed ones included)."""
        return jnp.sum(self.evaluated, axis=-1, dtype=jnp.int32) - self.num_initial

    @property
    def num_failed(self) -> Int[Array, ""]:
        """How many evaluations told since `init` failed (NaN, ±inf, or the target raised)."""
        told = jnp.arange(self.capacity) >= self.num_initial
        return jnp.sum(self.evaluated & ~self.succeeded & told, axis=-1, dtype=jnp.int32)

    @property
    def finished(self) -> Bool[Array, ""]:
        """Whether the whole budget is spent."""
        return self.num_evaluations >= self.budget

    def with_budget(self, budget: int) -> "Evaluations":
        """The buffer of a run with `budget` evaluations after `init` in all: free rows added
        (or dropped) at the end, every evaluation kept. A budget below the evaluations
        already told raises (a `ValueError` at once when the buffer is concrete)."""
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise ValueError(f"`budget` must be a non-negative int, got {budget!r}.")
        message = f"`budget` ({budget}) is below the evaluations already told."
        evaluated = raise_if(self.evaluated, budget < self.num_evaluations, message)
        padding = budget - self.budget

        def resize(values, fill):
            if padding < 0:
                return values[: self.num_initial + budget]
            return jnp.concatenate([values, jnp.full((padding,) + values.shape[1:], fill, values.dtype)])

        return Evaluations(
            resize(self.inputs, 0.0),
            resize(self.values, 0.0),
            resize(self.noise_variance, 1.0),
            resize(evaluated, False),
            resize(self.succeeded, False),
            self.num_initial,
        )

    def record(
        self,
        x: Float[Array, " D"],
        value: Float[Array, ""],
        noise_variance: Float[Array, ""],
        succeeded: Bool[Array, ""],
    ) -> "Evaluations":
        """The buffer with one more evaluation in the next free row. `x`, `value` and
        `noise_variance` must already be placeholders where `succeeded` is False; a full
        buffer raises at run time."""
        slot = self.num_initial + self.num_evaluations
        slot = eqx.error_if(slot, slot >= self.capacity, "tell: the evaluation budget is exhausted.")
        return Evaluations(
            self.inputs.at[slot].set(x),
            self.values.at[slot].set(value),
            self.noise_variance.at[slot].set(noise_variance),
            self.evaluated.at[slot].set(True),
            self.succeeded.at[slot].set(succeeded),
            self.num_initial,
        )

    def last_row(self) -> tuple[Float[Array, " D"], Float[Array, ""]]:
        """The input and value of the newest row (the last evaluation told, or the last
        initial one)."""
        slot = jnp.maximum(self.num_initial + self.num_evaluations - 1, 0)
        return self.inputs[slot], self.values[slot]
