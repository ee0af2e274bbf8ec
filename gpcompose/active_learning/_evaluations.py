"""The fixed-capacity buffer of a run's evaluations, shared by every active learner."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from .._validation import raise_if


def buffer_rows(budget: int) -> int:
    """The free rows a buffer holds for `budget` evaluations: the smallest of 8, 10, 12, 14,
    16, 20, 24, … (m·2ᵏ with m ∈ {4, 5, 6, 7}) that is ≥ `budget`, at most 25 % more than
    asked from a budget of 8 on. The budget is an array in the state, so that runs whose
    budgets share these rows share every compiled program. `ValueError` unless `budget` is a
    non-negative int."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"`budget` must be a non-negative int, got {budget!r}.")
    if budget <= 8:
        return 8
    step = 1 << (budget.bit_length() - 3)
    return -(-budget // step) * step


class Evaluations(eqx.Module):
    """Every evaluation of an active-learning run, in buffers of a fixed capacity.

    Rows `0 … num_initial − 1` hold the evaluations given to `init`; each evaluation told
    afterwards takes the next row, a failed one included (`succeeded` False), so that no
    evaluation is ever lost and `ask`/`tell` compile once for the whole run. The capacity is
    `num_initial + buffer_rows(budget)`: `budget` is an array, and the rows past
    `num_initial + budget` stay free, so that another budget with the same `buffer_rows`
    compiles nothing new. `inputs` and `values` are in the learner's own space (e.g. an
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
    budget: Int[Array, ""]
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
        budget: int | Int[ArrayLike, ""],
        *,
        free_rows: int | None = None,
    ) -> "Evaluations":
        """A buffer holding the initial evaluations (`usable` marks the successful ones; the
        others are failed rows, censored where their input is finite, as in `record`) and
        `free_rows` free rows, by default `buffer_rows(budget)`. Inside a compiled function
        `budget` may be an array, given with its `free_rows` (≥ `budget`)."""
        if free_rows is None:
            free_rows = buffer_rows(budget)
        num_initial = X.shape[0]
        usable = jnp.asarray(usable, bool)
        located = jnp.all(jnp.isfinite(X), axis=-1)
        given = cls(
            inputs=jnp.where(located[:, None], X, 0.0),
            values=jnp.where(usable, y, 0.0),
            noise_variance=jnp.where(located, noise_variance, jnp.inf),
            evaluated=jnp.ones((num_initial,), bool),
            succeeded=usable,
            budget=jnp.asarray(budget, jnp.int32),
            num_initial=num_initial,
        )
        return given.with_rows(free_rows)

    @property
    def capacity(self) -> int:
        """C = `num_initial + free_rows`, the number of rows."""
        return self.values.shape[-1]

    @property
    def free_rows(self) -> int:
        """The rows after the initial ones: `buffer_rows` of the budget the buffer was made for."""
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
        """The buffer of a run with `budget` evaluations after `init` in all: `buffer_rows(budget)`
        free rows (rows added or dropped at the end), every evaluation kept. A budget below
        the evaluations already told raises (a `ValueError` at once when the buffer is
        concrete)."""
        free_rows = buffer_rows(budget)
        message = f"`budget` ({budget}) is below the evaluations already told."
        evaluated = raise_if(self.evaluated, budget < self.num_evaluations, message)
        resized = eqx.tree_at(lambda e: (e.evaluated, e.budget), self, (evaluated, jnp.asarray(budget, jnp.int32)))
        return resized.with_rows(free_rows)

    def with_rows(self, free_rows: int) -> "Evaluations":
        """The same buffer with `free_rows` rows after the initial ones (added, free, or
        dropped at the end); the caller keeps `free_rows` ≥ the budget."""
        padding = free_rows - self.free_rows

        def resize(values, fill):
            if padding < 0:
                return values[: self.num_initial + free_rows]
            return jnp.concatenate([values, jnp.full((padding,) + values.shape[1:], fill, values.dtype)])

        return Evaluations(
            resize(self.inputs, 0.0),
            resize(self.values, 0.0),
            resize(self.noise_variance, 1.0),
            resize(self.evaluated, False),
            resize(self.succeeded, False),
            self.budget,
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
        slot = eqx.error_if(slot, self.num_evaluations >= self.budget, "tell: the evaluation budget is exhausted.")
        located = jnp.all(jnp.isfinite(x))
        return Evaluations(
            self.inputs.at[slot].set(jnp.where(located, x, 0.0)),
            self.values.at[slot].set(jnp.where(succeeded, value, 0.0)),
            self.noise_variance.at[slot].set(jnp.where(located, noise_variance, jnp.inf)),
            self.evaluated.at[slot].set(True),
            self.succeeded.at[slot].set(succeeded),
            self.budget,
            self.num_initial,
        )

    def last_row(self) -> tuple[Float[Array, " D"], Float[Array, ""]]:
        """The input and value of the newest row (the last evaluation told, or the last
        initial one)."""
        slot = jnp.maximum(self.num_initial + self.num_evaluations - 1, 0)
        return self.inputs[slot], self.values[slot]

    def succeeded_rows(self, *rows: Array) -> tuple[Array, ...]:
        """The rows of each array of `rows` (one row per buffer row, e.g. `inputs` or a map of
        them) where an evaluation succeeded, for a result; outside a compiled function only.
        They are selected in NumPy and put on the device with `jax.device_put`: their count
        changes with every evaluation, and JAX would compile each operation on them
        (`jnp.asarray` included) again for each count."""
        succeeded = np.asarray(self.succeeded)
        return tuple(jax.device_put(np.asarray(array)[succeeded]) for array in rows)
