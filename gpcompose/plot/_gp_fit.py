"""`gp_fit_1d`: a GP posterior on one input dimension, its bands and its data."""

import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._posterior_interface import predict_y
from ..gp import ExactPosterior
from ..parameters import AbstractParameter
from ..sparse import SparsePosterior
from ._figure import new_axes, root_figure


def gp_fit_1d(
    posterior: ExactPosterior | SparsePosterior,
    noise_variance: Float[ArrayLike, ""] | AbstractParameter | None = None,
    *,
    grid: Float[ArrayLike, " Q"] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """A GP posterior on a 1-D input: the posterior mean μ(x), the band μ(x) ± 2 s(x) of the
    latent function f (Rasmussen & Williams 2006, eqs. 2.25–2.26), and the data (x_n, y_n).
    With `noise_variance` σ², a wider and lighter band μ(x) ± 2 √(s²(x) + σ²) shows where new
    observations y = f(x) + ε fall (`gpcompose.predict_y`). A sparse posterior's inducing inputs
    are marked by triangles along the bottom.

    **Arguments:**

    - `posterior`: an exact (`gp.condition`) or sparse (`sparse.condition`) posterior whose
      inputs have one dimension.
    - `noise_variance`: σ² of new observations (a scalar, or the fitted parameter passed to
      `condition`), or None for the latent band only.
    - `grid`: the inputs (Q,) to draw the curves at; default 400 points over the data's range
      widened by 10 % each side.
    - `ax`: the axes to draw in (default: a new pyplot figure).

    **Returns:** the matplotlib `Figure`.
    """
    if not isinstance(posterior, ExactPosterior | SparsePosterior):
        raise ValueError(
            f"`posterior` must be a gp.ExactPosterior or a sparse.SparsePosterior, got {type(posterior).__name__}."
        )
    observations = posterior.observations
    if observations.inputs.shape[-1] != 1:
        raise ValueError(f"`posterior` must have 1-D inputs, got inputs of shape {observations.inputs.shape}.")
    used = np.asarray(observations.mask)
    inputs = np.asarray(observations.inputs)[used, 0]
    targets = np.asarray(observations.targets)[used]
    if grid is None:
        low, high = inputs.min(), inputs.max()
        margin = 0.1 * (high - low) if high > low else 1.0
        grid = np.linspace(low - margin, high + margin, 400)
    grid = np.asarray(grid)
    if grid.ndim != 1:
        raise ValueError(f"`grid` must have shape (num_points,), got shape {grid.shape}.")
    X_grid = jnp.asarray(grid[:, None], observations.inputs.dtype)
    mean, variance = (np.asarray(moment) for moment in posterior.predict(X_grid))
    latent_sd = np.sqrt(variance)

    ax = new_axes(ax, (6.5, 4.0))
    if noise_variance is not None:
        _, predictive_variance = predict_y(posterior, X_grid, noise_variance)
        predictive_sd = np.sqrt(np.asarray(predictive_variance))
        ax.fill_between(
            grid, mean - 2 * predictive_sd, mean + 2 * predictive_sd, color="C0", alpha=0.12,
            label="±2 sd of new observations",
        )  # fmt: skip
    ax.fill_between(grid, mean - 2 * latent_sd, mean + 2 * latent_sd, color="C0", alpha=0.3, label="±2 sd of f")
    ax.plot(grid, mean, color="C0", label="posterior mean")
    ax.plot(inputs, targets, "o", color="k", markersize=3, label="data")
    if isinstance(posterior, SparsePosterior):
        inducing = np.asarray(posterior.inducing_inputs)[np.asarray(posterior.inducing_mask), 0]
        ax.plot(
            inducing, np.full(inducing.shape, 0.02), "^", color="C3", transform=ax.get_xaxis_transform(),
            label="inducing inputs",
        )  # fmt: skip
    ax.set_xlabel("x")
    ax.set_ylabel("f(x), y")
    ax.legend(fontsize="small")
    return root_figure(ax)
