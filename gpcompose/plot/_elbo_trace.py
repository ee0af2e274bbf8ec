"""`elbo_trace`: the ELBO and its sd round by round, of an SVBMC or BVBMC run."""

from collections.abc import Sequence

import numpy as np
from jaxtyping import ArrayLike, Float, Int
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ._figure import new_axes, root_figure


def _trace_arrays(trace, elbo_sd, rounds) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(rounds, ELBOs, sds or None) of the kinds of `trace` that `elbo_trace` takes."""
    history = getattr(trace, "history", trace)
    if all(hasattr(history, name) for name in ("rounds", "elbos", "elbo_sds")):  # SVBMC's ring buffer
        held = np.asarray(history.rounds)
        if held.ndim != 1:
            raise ValueError(
                f"`trace` must be the state of one run, got a batch of {held.shape[:-1]} runs "
                "(`gpcompose.unstack` splits it)."
            )
        order = np.argsort(held)
        order = order[held[order] >= 0]
        return held[order], np.asarray(history.elbos)[order], np.asarray(history.elbo_sds)[order]
    if isinstance(trace, Sequence) and trace and hasattr(trace[0], "elbo"):  # records collected per round
        elbos = np.array([float(record.elbo) for record in trace])
        elbo_sd = np.array([float(record.elbo_sd) for record in trace])
    else:
        elbos = np.asarray(trace, dtype=float)
    if elbos.ndim != 1 or elbos.size == 0:
        raise ValueError(f"`trace` must hold one ELBO per round, got shape {elbos.shape}.")
    if elbo_sd is not None:
        elbo_sd = np.asarray(elbo_sd, dtype=float)
        if elbo_sd.shape != elbos.shape:
            raise ValueError(f"`elbo_sd` must have the shape of the ELBOs {elbos.shape}, got {elbo_sd.shape}.")
    rounds = np.arange(1, elbos.size + 1) if rounds is None else np.asarray(rounds)
    if rounds.shape != elbos.shape:
        raise ValueError(f"`rounds` must have the shape of the ELBOs {elbos.shape}, got {rounds.shape}.")
    return rounds, elbos, elbo_sd


def elbo_trace(
    trace,
    elbo_sd: Float[ArrayLike, " R"] | None = None,
    *,
    rounds: Int[ArrayLike, " R"] | None = None,
    log_normalizer: float | None = None,
    label: str = "ELBO ± sd",
    ax: Axes | None = None,
) -> Figure:
    """The ELBO (the estimate of log Z) of an SVBMC or BVBMC run against the round, with error
    bars of ± its Bayesian-quadrature sd, and the true log Z as a dashed line when it is known.

    **Arguments:**

    - `trace`, one of:
        - an `svbmc.SVBMCState` (or its `history`): the rounds SVBMC still holds. Its ring
          buffer keeps the last ⌈f·R⌉ + 1 rounds of the R of a whole run
          (f = `report_window_fraction`), from which `result` picks the round to report;
          round 0 is `init`'s fit.
        - a sequence of records with `elbo` and `elbo_sd`, one per round, collected by the
          `callback` of `svbmc.fit`, `bvbmc.fit` or `gpcompose.run_black_box` — for the whole
          of a run. For SVBMC, the `SVBMCUpdateInfo` of each round: append
          `progress.tell_info.update` whenever `progress.tell_info.updated`. BVBMC keeps no
          per-round ELBO (each evaluation is a round, one boosting step), so append
          `learner.result(progress.state)` after every evaluation.
        - an array of ELBOs, one per round, with their sds as `elbo_sd` (or None).
    - `rounds`: the round of each ELBO of a sequence or an array (default 1, 2, …).
    - `log_normalizer`: the true log Z, drawn as a dashed line, or None.
    - `label`: the legend's name of this trace (to draw several runs on one `ax`).
    - `ax`: the axes to draw in (default: a new pyplot figure).

    **Returns:** the matplotlib `Figure`.
    """
    rounds, elbos, elbo_sd = _trace_arrays(trace, elbo_sd, rounds)
    ax = new_axes(ax, (6.0, 4.0))
    ax.errorbar(rounds, elbos, yerr=elbo_sd, fmt="o-", markersize=4, capsize=3, label=label)
    if log_normalizer is not None:
        ax.axhline(log_normalizer, color="k", linestyle="--", linewidth=1, label="log Z")
    ax.set_xlabel("round")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.set_ylabel("ELBO")
    ax.legend(fontsize="small")
    return root_figure(ax)
