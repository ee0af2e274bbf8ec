"""Exact GP posterior: condition, predict, log marginal likelihood, rank-1 update and
look-ahead variance, all pure functions of an `ExactPosterior` state."""

from .._posterior_interface import predict_y as predict_y
from ._objectives import log_marginal_likelihood as log_marginal_likelihood
from ._posterior import ExactPosterior as ExactPosterior
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
from ._update import update as update
