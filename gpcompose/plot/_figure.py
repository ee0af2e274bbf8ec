"""Where a plot draws: the caller's axes or figure, or a new pyplot figure."""

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure


def root_figure(container: Axes | Figure | SubFigure) -> Figure:
    """The top-level figure that holds `container` (an axes, a subfigure or a figure)."""
    figure = container.figure
    while figure.figure is not figure:
        figure = figure.figure
    return figure


def new_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    """`ax`, or else the single axes of a new pyplot figure of size `figsize` (inches)."""
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def new_figure(fig: Figure | SubFigure | None, figsize: tuple[float, float]) -> Figure | SubFigure:
    """`fig`, or else a new pyplot figure of size `figsize` (inches)."""
    if fig is not None:
        return fig
    return plt.figure(figsize=figsize, layout="constrained")
