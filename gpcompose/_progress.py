"""The progress display of the long loops (the active-learning drivers, `steingp.fit`,
`aaci.fit`): a tqdm bar for a loop run from Python, and reports from inside a compiled loop
through `jax.debug.callback`, which move such a bar or print a line every few steps.

A display only reads values. The host loops, and the scans of `run_with_progress`, run the
same programs with it on or off, so their results are identical."""

import functools
import itertools
import sys
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Int, PRNGKeyArray, PyTree
from tqdm import tqdm

from ._run import run

Quantities = Mapping[str, ArrayLike | tuple[ArrayLike, ArrayLike]]
"""A method's key quantities for its display: names to scalars, or to (value, sd) pairs shown
as "value ± sd"."""


def show_progress(progress: bool | None) -> bool:
    """Whether a loop run from Python shows its display: `progress`, or where it is None,
    whether stderr is a terminal, so that logs, pipes and captured runs stay clean."""
    if progress is None:
        return sys.stderr is not None and sys.stderr.isatty()
    if not isinstance(progress, bool):
        raise ValueError(f"`progress` must be True, False or None, got {progress!r}.")
    return progress


def report_interval(progress: bool | int) -> int:
    """Steps between two reports of a traced loop: 0 (no display) for False, 1 for True,
    else the int `progress` itself."""
    if isinstance(progress, bool):
        return int(progress)
    if not isinstance(progress, int) or progress < 0:
        raise ValueError(f"`progress` must be a bool or a non-negative int (steps between reports), got {progress!r}.")
    return progress


def format_quantities(quantities: Quantities) -> str:
    """The quantities as "name=value" pairs with 4 significant digits; a (value, sd) pair as
    "value ± sd"."""

    def number(value) -> str:
        value = np.asarray(value)
        if np.issubdtype(value.dtype, np.integer):
            return str(int(value))
        return f"{float(value):.4g}"

    return ", ".join(
        f"{name}={' ± '.join(map(number, value)) if isinstance(value, tuple) else number(value)}"
        for name, value in quantities.items()
    )


_open_bars: dict[int, "ProgressBar"] = {}  # the bars that reports from a compiled loop can reach, by token
_tokens = itertools.count()


class ProgressBar:
    """A tqdm bar on stderr: steps done / total, the elapsed time and rate (tqdm's own), and
    the method's quantities. A disabled bar (`enabled=False`) prints nothing.

    While open, its `token` (−1 for a disabled bar) lets `report` reach it from inside a
    compiled loop: the token is an array there, so that neither a new bar nor turning the
    display off changes the compiled loop."""

    def __init__(self, description: str, total: int, *, done: int = 0, unit: str = "it", enabled: bool = True):
        self.enabled = enabled
        self.token = next(_tokens) if enabled else -1
        self._bar = tqdm(total=total, initial=done, desc=description, unit=unit, file=sys.stderr, disable=not enabled)
        if enabled:
            _open_bars[self.token] = self

    def show(self, done: int, quantities: Quantities) -> None:
        """Move the bar to `done` (never back: reports of a compiled loop may come late) and
        show `quantities`."""
        bar = self._bar
        bar.set_postfix_str(format_quantities(quantities), refresh=False)
        if done > bar.n:
            bar.update(done - bar.n)
        else:  # no new step (the state a run starts from): show its quantities all the same
            bar.refresh()

    def close(self) -> None:
        """Print the bar's final state and release its token."""
        _open_bars.pop(self.token, None)
        self._bar.close()

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _due(before, after, total, every: int):
    """Whether a loop that went from `before` to `after` steps (of `total`) reports: when it
    passed a multiple of `every`, or finished. For ints and for traced arrays alike."""
    return (after > before) & ((after // every > before // every) | (after == total))


def _host_report(description: str, every: int, before, after, total, quantities, token) -> None:
    before, after, total = int(before), int(after), int(total)
    # checked here too: under `vmap` the `cond` of `report` runs this for every run at every step
    if not _due(before, after, total, every):
        return
    if token is None:
        tqdm.write(f"{description} {after}/{total}: {format_quantities(quantities)}", file=sys.stderr)
    elif (bar := _open_bars.get(int(token))) is not None:
        bar.show(after, quantities)


def report(
    description: str,
    before: Int[ArrayLike, ""],
    after: Int[ArrayLike, ""],
    total: int | Int[ArrayLike, ""],
    every: int,
    quantities: Callable[[], Quantities],
    token: Int[ArrayLike, ""] | None = None,
) -> None:
    """From inside a traced loop, report that it went from `before` to `after` steps of
    `total`, when it passed a multiple of `every` or finished: print a line
    "description after/total: quantities", or with a `token`, move the open `ProgressBar` of
    that token (none for a negative one).

    `quantities()` is evaluated only where a report is due. A `jax.debug.callback` under
    `lax.cond`: without `vmap` only the predicate runs between reports. Under `vmap` the
    callback runs for every run of the batch (its `cond` becomes a `select`, whose branches
    both run) and each run due prints its own line."""
    due = _due(before, after, total, every)
    if token is not None:
        due = due & (token >= 0)
    callback = functools.partial(_host_report, description, every)
    jax.lax.cond(due, lambda: jax.debug.callback(callback, before, after, total, quantities(), token), lambda: None)


class _ReportingSteps(eqx.Module):
    """`algorithm.step` on a carry `(state, steps done)`, reporting to the bar of `token`
    (none for −1)."""

    algorithm: eqx.Module
    quantities: Callable[[PyTree], Quantities] = eqx.field(static=True)
    total: int = eqx.field(static=True)
    every: int = eqx.field(static=True)
    token: Int[Array, ""]

    def step(self, carry, key: PRNGKeyArray, *args: Any):
        state, done = carry
        state, info = self.algorithm.step(state, key, *args)
        name = type(self.algorithm).__name__
        report(name, done, done + 1, self.total, self.every, lambda: self.quantities(info), self.token)
        return (state, done + 1), info


def run_with_progress(
    algorithm: eqx.Module,
    state: PyTree,
    key: PRNGKeyArray,
    num_steps: int,
    *args: Any,
    quantities: Callable[[PyTree], Quantities],
    progress: bool | None,
) -> tuple[PyTree, PyTree]:
    """`gpcompose.run(algorithm, state, key, num_steps, *args)`, with a bar of the steps done
    where `show_progress(progress)`: a callback inside the scan moves it about every 1 % of
    the steps and shows `quantities(info)` of the step's `Info`. `quantities` must be one
    function from call to call (a module-level one), as the compiled scan is cached on it.
    The same program runs with the display on or off, so the results are identical."""
    enabled = show_progress(progress)
    with ProgressBar(type(algorithm).__name__, num_steps, unit="step", enabled=enabled) as bar:
        # one compiled scan with the display on or off (a disabled bar's token is −1), so that
        # turning it on cannot change how XLA compiles the steps, nor their results
        token = jnp.asarray(bar.token, jnp.int32)
        steps = _ReportingSteps(algorithm, quantities, num_steps, max(1, num_steps // 100), token)
        (state, _), infos = run(steps, (state, jnp.zeros((), jnp.int32)), key, num_steps, *args)
        if enabled:
            jax.effects_barrier()  # every report has reached the bar before it closes
    return state, infos
