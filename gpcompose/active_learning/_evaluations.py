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
    unbounded or unit-cube space). A failed row keeps its input and the learner's noise
    variance, with a placeholder value (0): the fits use it as a censored observation at their
    lowest successful value (`censored`, `censor_failures`). Only a failed row whose input is
    not finite holds a placeholder input (0) and noise variance +inf: no information.
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
        the successful ones; the others are failed rows, censored where their input is
        finite, as in `record`) and `budget` free rows."""
        num_initial = X.shape[0]
        usable = jnp.asarray(usable, bool)
        located = jnp.all(jnp.isfinite(X), axis=-1)
        given = cls(
            inputs=jnp.where(located[:, None], X, 0.0),
            values=jnp.where(usable, y, 0.0),
            noise_variance=jnp.where(located, noise_variance, jnp.inf),
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
    def censored(self) -> Bool[Array, " C"]:
        """The failed rows at a finite input, which the fits use as censored observations
        (`censor_failures`): evaluated, not succeeded, with a finite noise variance."""
        return self.evaluated & ~self.succeeded & jnp.isfinite(self.noise_variance)

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
        """The buffer with one more evaluation in the next free row; a full buffer raises at
        run time. A failed evaluation (`succeeded` False) keeps `x` and `noise_variance` (a
        finite one: the noise of its censored observation) and stores 0 for `value`; where `x`
        is not finite, its row holds 0 for `x` and +inf for `noise_variance` (see the class)."""
        slot = self.num_initial + self.num_evaluations
        slot = eqx.error_if(slot, slot >= self.capacity, "tell: the evaluation budget is exhausted.")
        located = jnp.all(jnp.isfinite(x))
        return Evaluations(
            self.inputs.at[slot].set(jnp.where(located, x, 0.0)),
            self.values.at[slot].set(jnp.where(succeeded, value, 0.0)),
            self.noise_variance.at[slot].set(jnp.where(located, noise_variance, jnp.inf)),
            self.evaluated.at[slot].set(True),
            self.succeeded.at[slot].set(succeeded),
            self.num_initial,
        )

    def last_row(self) -> tuple[Float[Array, " D"], Float[Array, ""]]:
        """The input and value of the newest row (the last evaluation told, or the last
        initial one)."""
        slot = jnp.maximum(self.num_initial + self.num_evaluations - 1, 0)
        return self.inputs[slot], self.values[slot]
