"""GP sampling with approximate upper and lower bounds (Nguyen, Deisenroth & Osborne
2021): bounds with looseness, log weights and acceptance of samples by their extrema,
the weighted estimate, and the square-root GP f = c − ½h² with c = f⁺ + 2η₊."""

from ._bounds import Bounds as Bounds
from ._bounds import accepted as accepted
from ._bounds import log_weights as log_weights
from ._square_root import RootPriorMean as RootPriorMean
from ._square_root import SquareRootPosterior as SquareRootPosterior
from ._square_root import SquareRootSamples as SquareRootSamples
from ._square_root import check_root_center as check_root_center
from ._square_root import condition_square_root as condition_square_root
from ._square_root import predict_linearized as predict_linearized
from ._square_root import predict_moment_matched as predict_moment_matched
from ._square_root import root_prior_mean as root_prior_mean
from ._square_root import square_root_lookahead_variance as square_root_lookahead_variance
from ._square_root import square_root_offset as square_root_offset
from ._square_root import square_root_pathwise as square_root_pathwise
from ._square_root import square_root_targets as square_root_targets
from ._weighted import weighted_mean as weighted_mean
