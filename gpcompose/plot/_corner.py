"""`corner`: the marginals and pairwise densities of a posterior, from samples."""

from collections.abc import Sequence

import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ._figure import new_figure, root_figure

# 1 − exp(−k²/2) for k = 1, 2, 3: the mass inside the k-sd ellipse of a 2-D Gaussian, so that a
# Gaussian posterior's contours are its 1-, 2- and 3-sd ellipses.
MASS_LEVELS = (0.393, 0.865, 0.989)


def _as_samples(posterior, key: PRNGKeyArray | None, num_samples: int) -> np.ndarray:
    """(S, D) finite rows: `posterior.sample(key, num_samples)`, or `posterior` itself as an array."""
    if hasattr(posterior, "sample"):
        if key is None:
            raise ValueError("`key` is needed to draw `num_samples` samples from `posterior`.")
        samples = np.asarray(posterior.sample(key, num_samples))
    else:
        samples = np.asarray(posterior)
    if samples.ndim != 2:
        raise ValueError(
            f"`posterior` must have a `.sample(key, n)` method or be an array of shape (num_samples, D), "
            f"got shape {samples.shape}."
        )
    return samples[np.all(np.isfinite(samples), axis=1)]


def _limits(columns: list[np.ndarray]) -> tuple[float, float]:
    """The 0.1 % to 99.9 % quantiles of the values of every sample set, widened by 5 % each side."""
    values = np.concatenate(columns)
    low, high = np.quantile(values, [0.001, 0.999])
    margin = 0.05 * (high - low) if high > low else 1.0
    return float(low - margin), float(high + margin)


def _smoothed_histogram(first: np.ndarray, second: np.ndarray, first_edges, second_edges) -> np.ndarray:
    """Counts on the grid of `first_edges` × `second_edges`, smoothed by the binomial kernel
    (1, 4, 6, 4, 1)/16 along each axis; rows along `second`, as `contour` takes them."""
    counts, _, _ = np.histogram2d(first, second, bins=(first_edges, second_edges))
    kernel = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16
    for axis in (0, 1):
        counts = np.apply_along_axis(np.convolve, axis, counts, kernel, mode="same")
    return counts.T


def _density_levels(density: np.ndarray) -> np.ndarray:
    """The increasing density values t whose regions {density ≥ t} hold the `MASS_LEVELS` of the total."""
    ordered = np.sort(density.ravel())[::-1]
    cumulative = np.cumsum(ordered) / ordered.sum()
    indices = np.minimum(np.searchsorted(cumulative, MASS_LEVELS), ordered.size - 1)
    levels = np.unique(ordered[indices])
    return levels[levels > 0]


def _pair_panel(axis, columns, limits, reference_columns, bins: int, color: str) -> None:
    """Filled contours of the samples' density in the (x, y) plane, the reference's as black lines."""
    edges = [np.linspace(*limit, bins + 1) for limit in limits]
    centers = [(edge[1:] + edge[:-1]) / 2 for edge in edges]
    density = _smoothed_histogram(*columns, *edges)
    levels = _density_levels(density)
    if levels.size:
        shades = [to_rgba(color, alpha) for alpha in np.linspace(0.25, 0.75, levels.size)]
        axis.contourf(*centers, density, levels=[*levels, density.max() * (1 + 1e-9)], colors=shades)
        axis.contour(*centers, density, levels=levels, colors=color, linewidths=0.8)
    if reference_columns is not None:
        reference = _smoothed_histogram(*reference_columns, *edges)
        reference_levels = _density_levels(reference)
        if reference_levels.size:
            axis.contour(*centers, reference, levels=reference_levels, colors="k", linewidths=0.9)


def _checked_reference_and_labels(samples, reference_samples, labels):
    """`reference_samples` as finite rows of an (R, D) array (or None) and the D labels
    (default x₁, …, x_D), each checked against the D columns of `samples`."""
    dimension = samples.shape[1]
    reference = None
    if reference_samples is not None:
        reference = np.asarray(reference_samples)
        if reference.ndim != 2 or reference.shape[1] != dimension:
            raise ValueError(
                f"`reference_samples` must have shape (num_samples, {dimension}) to match `posterior`, "
                f"got shape {reference.shape}."
            )
        reference = reference[np.all(np.isfinite(reference), axis=1)]
    if labels is None:
        labels = [f"$x_{{{index + 1}}}$" for index in range(dimension)]
    elif len(labels) != dimension:
        raise ValueError(f"`labels` must hold {dimension} names, one per coordinate, got {len(labels)}.")
    if samples.shape[0] < 2:
        raise ValueError(f"`posterior` must give at least 2 finite samples, got {samples.shape[0]}.")
    return reference, labels


def _marginal_panel(axis, values, limits, reference_values, bins, color):
    """A diagonal panel: the density histogram of one coordinate, and the reference's outline."""
    edges = np.linspace(*limits, bins + 1)
    axis.hist(values, bins=edges, density=True, histtype="stepfilled", color=color, alpha=0.4)
    axis.hist(values, bins=edges, density=True, histtype="step", color=color)
    if reference_values is not None:
        axis.hist(reference_values, bins=edges, density=True, histtype="step", color="k")
    axis.set_yticks([])


def corner(
    posterior,
    *,
    key: PRNGKeyArray | None = None,
    num_samples: int = 10_000,
    reference_samples: Float[ArrayLike, "R D"] | None = None,
    labels: Sequence[str] | None = None,
    bins: int = 40,
    fig: Figure | SubFigure | None = None,
) -> Figure:
    """A corner plot of a D-dimensional posterior: on the diagonal the 1-D marginal of each
    coordinate (a density histogram), below it the joint density of each pair of coordinates
    (filled contours of a smoothed 2-D histogram around the regions of highest density that hold
    39.3 %, 86.5 % and 98.9 % of the samples: the 1-, 2- and 3-sd ellipses of a Gaussian).
    `reference_samples` (exact samples of the target, say) are drawn over it in black: histogram
    outlines and contour lines at the same mass levels.

    **Arguments:**

    - `posterior`: a distribution with `.sample(key, n)` — the `posterior` of an
      `svbmc.SVBMCResult` or a `bvbmc.BVBMCResult`, any mixture of `gpcompose.mixtures` — or an
      array of samples of shape (S, D).
    - `key`, `num_samples`: the key and the number of samples to draw from a distribution.
    - `reference_samples`: samples (R, D) to compare with, or None.
    - `labels`: the names of the D coordinates (default x₁, …, x_D).
    - `bins`: the number of bins per coordinate, of the histograms and of the contours' grid.
    - `fig`: the figure or subfigure to draw the D × D panels in (default: a new pyplot figure).

    Rows with a non-finite value are left out. The axes show the 0.1 % to 99.9 % quantiles of
    every sample set, widened by 5 %.

    **Returns:** the matplotlib `Figure`.
    """
    samples = _as_samples(posterior, key, num_samples)
    dimension = samples.shape[1]
    reference, labels = _checked_reference_and_labels(samples, reference_samples, labels)

    sets = [samples] if reference is None else [samples, reference]
    limits = [_limits([values[:, index] for values in sets]) for index in range(dimension)]
    figure = new_figure(fig, (2.2 * dimension + 0.6, 2.2 * dimension + 0.4))
    axes = np.asarray(figure.subplots(dimension, dimension, squeeze=False))
    color = "C0"
    for row in range(dimension):
        for column in range(dimension):
            axis = axes[row, column]
            if column > row:
                axis.set_axis_off()
                continue
            if row == column:
                reference_column = None if reference is None else reference[:, row]
                _marginal_panel(axis, samples[:, row], limits[row], reference_column, bins, color)
            else:
                reference_columns = None if reference is None else (reference[:, column], reference[:, row])
                pair = (samples[:, column], samples[:, row])
                _pair_panel(axis, pair, (limits[column], limits[row]), reference_columns, bins, color)
                axis.set_ylim(limits[row])
                if column == 0:
                    axis.set_ylabel(labels[row])
                else:
                    axis.tick_params(labelleft=False)
            axis.set_xlim(limits[column])
            if row == dimension - 1:
                axis.set_xlabel(labels[column])
            else:
                axis.tick_params(labelbottom=False)
    if reference is not None:
        handles = [Patch(color=color, alpha=0.5, label="posterior"), Line2D([], [], color="k", label="reference")]
        legend_axis = axes[0, -1] if dimension > 1 else axes[0, 0]
        legend_axis.legend(handles=handles, loc="upper right", fontsize="small")
    return root_figure(figure)
