"""The protocol every active learner on an expensive target implements (SVBMC, BVBMC, BO)."""

import abc
from typing import Any, Generic, TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, PRNGKeyArray, PyTree

from .._jit import public_jit
from .._placeholder import zeros_like_output
from .._validation import as_floating
from ._evaluations import Evaluations
from ._update_key import update_key

State = TypeVar("State", bound="AbstractLearnerState")
UpdateInfo = TypeVar("UpdateInfo")


class AbstractLearnerState(eqx.Module):
    """A learner's state: at least the buffer of its evaluations."""

    evaluations: eqx.AbstractVar[Evaluations]


class TellInfo(eqx.Module, Generic[UpdateInfo]):
    """What `tell` did: whether the evaluation could be used (`succeeded`: finite value and
    input), whether it ended a round so that the learner updated its model (`updated`), and
    the learner's own diagnostics of that update (`update`; zeros when `updated` is False)."""

    succeeded: Bool[Array, ""]
    updated: Bool[Array, ""]
    update: UpdateInfo


class AbstractActiveLearner(eqx.Module, Generic[State]):
    """An algorithm that chooses where to evaluate an expensive target.

    A learner is a module of its choices and constants; everything that changes during a
    run is in its state. Every learner has the same entry points:

    - `init(X, y, ...) -> state` from the evaluations made so far (possibly none);
    - `ask(state, key) -> (x, info)`: the next point to evaluate;
    - `tell(state, x, y, noise_sd=None) -> (state, TellInfo)`: record the evaluation
      y = f(x) — NaN or ±inf marks a failed evaluation, kept in the buffer with its input x
      and fitted as a censored observation at the lowest successful value the model fits
      (`censor_failures`), so that the learner does not ask there again — and, after every
      `round_size` evaluations, update the model;
    - `result(state)`: the method's answer from a finished or unfinished run;
    - `with_budget(state, budget)`: the same run with another budget (to go on after it ends).

    `gpcompose.run_black_box` and `gpcompose.run_traceable` drive any learner. A subclass
    implements `init`, `ask`, `result`, `record` (store one evaluation, with cheap updates
    such as a rank-1 extension of the GP) and `update` (the refit at the end of a round).
    """

    @property
    def round_size(self) -> int:
        """Evaluations between two updates of the model (1: an update after every one)."""
        return 1

    @abc.abstractmethod
    def init(self, X: Float[ArrayLike, "N D"], y: Float[ArrayLike, " N"], *args: Any, **kwargs: Any) -> State:
        """The state before the first `ask`."""

    @abc.abstractmethod
    def ask(self, state: State, key: PRNGKeyArray) -> tuple[Float[Array, " D"], PyTree]:
        """The next point to evaluate and the method's diagnostics of that choice."""

    @abc.abstractmethod
    def record(
        self, state: State, x: Float[ArrayLike, " D"], y: Float[ArrayLike, ""], noise_sd: Float[ArrayLike, ""] | None
    ) -> tuple[State, Bool[Array, ""]]:
        """The state with one more evaluation stored, and whether it can be used."""

    @abc.abstractmethod
    def update(self, state: State, key: PRNGKeyArray) -> tuple[State, UpdateInfo]:
        """The model updated at the end of a round (hyperparameters, variational fit)."""

    @abc.abstractmethod
    def result(self, state: State) -> Any:
        """The method's answer; for one run (see `gpcompose.unstack` for a batch)."""

    def round_complete(self, state: State) -> Bool[Array, ""]:
        """Whether the last evaluation told ends a round: every `round_size`-th one, and the
        last of the budget."""
        evaluations = state.evaluations
        count = evaluations.num_evaluations
        return (count % self.round_size == 0) | (count >= evaluations.budget)

    def progress_summary(self, state: State) -> dict[str, Array | tuple[Array, Array]]:
        """The method's key quantities in the progress display of `run_black_box` and
        `run_traceable`: scalars, or (value, sd) pairs shown as "value ± sd". Traceable, so
        that the traced driver reports them from inside its loop. By default the number of
        failed evaluations; a learner puts its own quantities (an ELBO, the best value) first."""
        return {"failed": state.evaluations.num_failed}

    def with_budget(self, state: State, budget: int) -> State:
        """The state of the same run with `budget` evaluations after `init` in all, e.g. to
        resume a finished or checkpointed run for more evaluations: every buffer of capacity
        `num_initial + buffer_rows(budget)` gets free rows (or loses free rows), every
        evaluation and fit is kept; a budget of the same rows changes no shape. This default
        resizes `state.evaluations`; a learner whose model holds other buffers of that
        capacity resizes them too."""
        return eqx.tree_at(lambda s: s.evaluations, state, state.evaluations.with_budget(budget))

    def update_now(self, state: State) -> tuple[State, UpdateInfo]:
        """`update` with its key (`update_key`): the model update that ends a round."""
        return self.update(state, update_key(state.evaluations))

    @public_jit()
    def tell(
        self,
        state: State,
        x: Float[ArrayLike, " D"],
        y: Float[ArrayLike, ""],
        noise_sd: Float[ArrayLike, ""] | None = None,
    ) -> tuple[State, TellInfo]:
        """Record the evaluation y = f(x) and, if it ends a round, update the model. Compiled
        once per learner and shapes, so that an eager loop of `tell`s does not retrace the
        update at every call. Complex `x`, `y` or `noise_sd` raise `ValueError`."""
        x, y = as_floating(x, "x"), as_floating(y, "y")
        noise_sd = None if noise_sd is None else as_floating(noise_sd, "noise_sd")
        state, succeeded = self.record(state, x, y, noise_sd)
        if self.round_size == 1:
            state, info = self.update_now(state)
            return state, TellInfo(succeeded, jnp.ones((), bool), info)
        skipped = zeros_like_output(self.update_now, state)[1]
        state, info = jax.lax.cond(self.round_complete(state), self.update_now, lambda s: (s, skipped), state)
        return state, TellInfo(succeeded, self.round_complete(state), info)


def require_single_run(state: AbstractLearnerState, method: str) -> None:
    """`ValueError` for a batch of states (from `jax.vmap`), which `result` cannot read."""
    values = state.evaluations.values
    if values.ndim != 1:
        raise ValueError(
            f"{method}.result reads one run, got a batch of {values.shape[0]} states: "
            f"use `[learner.result(s) for s in gpcompose.unstack(states)]`."
        )
