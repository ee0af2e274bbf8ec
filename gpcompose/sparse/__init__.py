"""Sparse (SGPR) posterior with heteroskedastic noise: condition, predict, collapsed
ELBO, rank-1 updates (new observation; new inducing point), look-ahead variance, and the
choice of inducing inputs (greedy variance selection, k-means)."""

from .._posterior_interface import predict_y as predict_y
from ._kmeans import kmeans as kmeans
from ._objectives import elbo as elbo
from ._posterior import INDUCING_JITTER as INDUCING_JITTER
from ._posterior import SparsePosterior as SparsePosterior
from ._posterior import condition as condition
from ._predict import (
    lookahead_variance as lookahead_variance,
)
from ._predict import (
    predict as predict,
)
from ._predict import (
    predict_covariance as predict_covariance,
)
from ._predict import (
    predict_mean as predict_mean,
)
from ._predict import (
    reducible_variance as reducible_variance,
)
from ._selection import select_inducing_points as select_inducing_points
from ._update import add_inducing_point as add_inducing_point
from ._update import update as update
