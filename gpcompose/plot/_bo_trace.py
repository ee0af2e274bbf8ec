"""`bo_trace`: the progress of a Bayesian-optimization run and, in 2-D, where it evaluated."""

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure, SubFigure
from matplotlib.ticker import MaxNLocator

from ..bo import BO, BOResult
from ._figure import new_figure, root_figure


def _log_scale_floor(values: np.ndarray) -> float:
    """A tenth of the smallest positive value (1 if none): where zeros sit on a log axis."""
    positive = values[values > 0]
    return float(positive.min()) / 10 if positive.size else 1.0


def bo_trace(
    result: BOResult,
    *,
    optimum: float | None = None,
    num_initial: int | None = None,
    fig: Figure | SubFigure | None = None,
) -> Figure:
    """The trace of a BO run (`bo.maximize`, `bo.minimize` or `BO.result`): each evaluation's
    value and the best value so far against the number of evaluations. With `optimum` (the
    known max f of a maximization or min f of a minimization) it shows the simple regret
    |best so far − optimum| and each evaluation's |f(xₙ) − optimum| on a log scale instead. A
    dotted line ends the initial design.

    For a 2-D problem a second panel shows the evaluated points, colored by their order,
    the initial design as squares, the points the model chose as circles, and the best point
    as a star.

    **Arguments:**

    - `result`: a `bo.BOResult`; whether the run minimized or maximized is read from it
      (`y_best` is the smallest or the largest of `y`).
    - `optimum`: the known optimum of the function, or None.
    - `num_initial`: how many of the first evaluations were the initial design (given
      evaluations included); default `BO().design_size(D)`, the default learner's max(D, 2).
    - `fig`: the figure or subfigure to draw in (default: a new pyplot figure).

    **Returns:** the matplotlib `Figure`.
    """
    X, y = np.asarray(result.X), np.asarray(result.y)
    if y.size == 0:
        raise ValueError("`result` holds no successful evaluation to plot.")
    num_evaluations, dimension = X.shape
    minimizing = float(result.y_best) == y.min() and y.min() != y.max()
    best = np.minimum.accumulate(y) if minimizing else np.maximum.accumulate(y)
    if num_initial is None:
        num_initial = BO().design_size(dimension)
    num_initial = min(num_initial, num_evaluations)
    evaluations = np.arange(1, num_evaluations + 1)

    show_points = dimension == 2
    figure = new_figure(fig, (10.5, 4.2) if show_points else (5.5, 4.2))
    axes = figure.subplots(1, 2 if show_points else 1, squeeze=False)[0]
    trace = axes[0]
    if optimum is None:
        trace.plot(evaluations, y, ".", color="0.6", label="evaluation")
        trace.plot(evaluations, best, color="C0", drawstyle="steps-post", label="best so far")
        trace.set_ylabel("f(x)")
        trace.set_title(f"best value so far ({'minimum' if minimizing else 'maximum'})")
    else:
        gaps, regret = np.abs(y - optimum), np.abs(best - optimum)
        floor = _log_scale_floor(gaps)
        trace.semilogy(evaluations, np.maximum(gaps, floor), ".", color="0.6", label="|f(xₙ) − optimum|")
        trace.semilogy(evaluations, np.maximum(regret, floor), color="C0", drawstyle="steps-post", label="regret")
        trace.set_ylabel("|best so far − optimum|")
        trace.set_title("simple regret")
    if num_initial < num_evaluations:
        trace.axvline(num_initial + 0.5, color="0.4", linestyle=":", label="end of initial design")
    trace.set_xlabel("evaluation")
    trace.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    trace.legend(fontsize="small")

    if show_points:
        points = axes[1]
        norm = Normalize(1, max(num_evaluations, 2))
        for rows, marker, label in (
            (slice(None, num_initial), "s", "initial design"),
            (slice(num_initial, None), "o", "chosen by the model"),
        ):
            points.scatter(
                X[rows, 0], X[rows, 1], c=evaluations[rows], cmap="viridis", norm=norm, marker=marker,
                edgecolors="k", linewidths=0.4, label=label,
            )  # fmt: skip
        x_best = np.asarray(result.x_best)
        points.plot(x_best[0], x_best[1], "*", color="C3", markeredgecolor="k", markersize=14, label="best")
        points.set_xlabel("$x_1$")
        points.set_ylabel("$x_2$")
        points.set_title("evaluated points")
        points.legend(fontsize="small")
        figure.colorbar(ScalarMappable(norm=norm, cmap="viridis"), ax=points, label="evaluation")
    return root_figure(figure)
