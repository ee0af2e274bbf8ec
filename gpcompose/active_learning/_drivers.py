"""The two drivers of every active learner: a host loop around a Python black-box target,
and one compiled program for a JAX-traceable target."""

import os
import warnings
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from .._progress import ProgressBar, report, report_interval, show_progress
from .._validation import as_floating, check_key
from ._black_box import call_black_box
from ._checkpoint import save_checkpoint
from ._learner import AbstractActiveLearner, State, TellInfo


class Checkpoint(eqx.Module):
    """Where and how often `run_black_box` saves the run: to `path` after every `every`
    evaluations, at the end, and when the run is interrupted (`save_checkpoint`)."""

    path: str | os.PathLike = eqx.field(static=True)
    every: int = eqx.field(static=True, default=1)

    def __check_init__(self):
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
            raise ValueError(f"`every` must be a positive int, got {self.every!r}.")


class Progress(eqx.Module):
    """One evaluation of `run_black_box`, as passed to its `callback`: the point `x`, the
    target's `value` (NaN when it failed) and `noise_sd` (None for exact targets), the
    diagnostics of `ask` and `tell`, and the state after `tell`."""

    x: Float[Array, " D"]
    value: float
    noise_sd: float | None
    ask_info: PyTree
    tell_info: TellInfo
    state: PyTree


def _point_key(key: PRNGKeyArray, index) -> PRNGKeyArray:
    """The key of the `index`-th `ask` of a run: the same in both drivers, so that a run
    resumed from any evaluation, or traced, repeats the host loop's choices."""
    return jax.random.fold_in(key, index)


def run_black_box(
    learner: AbstractActiveLearner[State],
    target: Callable[[np.ndarray], float | tuple[float, float]],
    state: State,
    key: PRNGKeyArray,
    *,
    callback: Callable[[Progress], None] | None = None,
    checkpoint: Checkpoint | None = None,
    progress: bool | None = None,
) -> State:
    """Spend the rest of the budget of `state` on a black-box `target`, called from Python.

    The loop is `x, _ = learner.ask(state, fold_in(key, n))`, `target(x)`,
    `learner.tell(state, x, y)` for the n-th evaluation after `init`; `ask` and `tell` are
    compiled once. `target(x)` takes a NumPy array of shape (D,) and returns a float, or
    `(value, sd)` for a noisy evaluation. An exception, NaN or ±inf is recorded as a failed
    evaluation (with a `RuntimeWarning`) and the run goes on.

    - `callback(progress)` is called after every evaluation with a `Progress`.
    - `checkpoint`: a `Checkpoint(path, every)`; the file holds the learner, the state and
      `key`, so that `load_checkpoint` and another `run_black_box` continue the run exactly
      as if it had not stopped.
    - `progress`: a tqdm bar on stderr of the evaluations done / budget, the elapsed time and
      `learner.progress_summary` (e.g. the ELBO ± sd, the best value); None shows it only
      where stderr is a terminal, True or False force it on or off.
    - `KeyboardInterrupt` (Ctrl-C, or raised by the target) ends the loop: the state so far
      is saved to the checkpoint file, if any, and returned, with a `RuntimeWarning`.

    **Returns:** the final state; `learner.result(state)` reads it.
    """
    check_key(key)
    ask = eqx.filter_jit(learner.ask)
    tell = eqx.filter_jit(learner.tell)
    summary = eqx.filter_jit(learner.progress_summary)
    done, budget = int(state.evaluations.num_evaluations), int(state.evaluations.budget)
    enabled = show_progress(progress)
    try:
        # inside the `try`, so that an interrupted run's bar is closed before its warning
        with ProgressBar(type(learner).__name__, budget, done=done, unit="eval", enabled=enabled) as bar:
            if bar.enabled:
                bar.show(done, summary(state))
            while not bool(state.evaluations.finished):
                index = int(state.evaluations.num_evaluations)
                x, ask_info = ask(state, _point_key(key, index))
                value, noise_sd = call_black_box(target, np.asarray(x))
                dtype = state.evaluations.values.dtype
                noise = None if noise_sd is None else jnp.asarray(noise_sd, dtype)
                state, tell_info = tell(state, x, jnp.asarray(value, dtype), noise)
                if callback is not None:
                    callback(Progress(x, value, noise_sd, ask_info, tell_info, state))
                if checkpoint is not None and (index + 1) % checkpoint.every == 0:
                    save_checkpoint(checkpoint.path, learner, state, key)
                if bar.enabled:
                    bar.show(index + 1, summary(state))
    except KeyboardInterrupt:
        where = "" if checkpoint is None else f"; saved to {os.fspath(checkpoint.path)!r}"
        warnings.warn(
            f"run_black_box interrupted after {int(state.evaluations.num_evaluations)} evaluations{where}.",
            RuntimeWarning,
            stacklevel=2,
        )
    if checkpoint is not None:
        save_checkpoint(checkpoint.path, learner, state, key)
    return state


def _evaluate(target: Callable, x, dtype) -> tuple[Float[Array, ""], Float[Array, ""] | None]:
    """`target(x)` as (value, sd or None) of `dtype`; a complex output raises `ValueError`."""
    outcome = target(x)
    value, sd = outcome if isinstance(outcome, tuple) else (outcome, None)
    value = as_floating(value, "target(x)").astype(dtype)
    return value, None if sd is None else as_floating(sd, "the sd of target(x)").astype(dtype)


@eqx.filter_jit
def run_traceable(
    learner: AbstractActiveLearner[State],
    target: Callable[[Float[Array, " D"]], Float[Array, ""] | tuple[Float[Array, ""], Float[Array, ""]]],
    state: State,
    key: PRNGKeyArray,
    *,
    progress: bool | int = False,
) -> State:
    """Spend the rest of the budget on a JAX-traceable `target` in one compiled program.

    The same run as `run_black_box` with the same `key` (to rounding: here the target is
    traced): round after round, ask/evaluate/record steps until `learner.round_complete`
    (at most `round_size` of them), then the model update that `tell` makes at the end of a
    round. It is a JAX function of `state`
    and `key`, so `jax.vmap` runs many seeds at once:
    `jax.vmap(lambda k: run_traceable(learner, f, learner.init(X, y, key=k), k))(keys)`;
    `gpcompose.unstack` then gives each seed's state.

    `progress`: True, or an int k, prints a line "Learner n/budget: progress_summary" from
    inside the loop (a host callback) at the first round end past every k-th evaluation
    (True: every round); under `vmap`, one line per seed. It is compiled in only when on
    (off by default), so the run with it is the same to rounding.
    """
    check_key(key)
    every = report_interval(progress)
    round_size = learner.round_size
    dtype = state.evaluations.values.dtype
    budget = state.evaluations.budget

    def one_round(state):
        before = state.evaluations.num_evaluations

        def one_evaluation(index, carry):
            state, ended = carry
            x, _ = learner.ask(state, _point_key(key, state.evaluations.num_evaluations))
            value, noise_sd = _evaluate(target, x, dtype)
            active = ~ended & ~state.evaluations.finished
            state = jax.lax.cond(active, lambda s: learner.record(s, x, value, noise_sd)[0], lambda s: s, state)
            return state, ended | (active & learner.round_complete(state))

        state, _ = jax.lax.fori_loop(0, round_size, one_evaluation, (state, jnp.zeros((), bool)))
        state = learner.update_now(state)[0]
        if every:
            after = state.evaluations.num_evaluations
            report(type(learner).__name__, before, after, budget, every, lambda: learner.progress_summary(state))
        return state

    return jax.lax.while_loop(lambda s: ~s.evaluations.finished, one_round, state)
