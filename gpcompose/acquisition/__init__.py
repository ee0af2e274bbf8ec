"""Acquisition functions for active learning and Bayesian optimisation, and a vmapped
multi-start maximiser."""

from .._multistart import MultistartResult as MultistartResult
from .._multistart import maximize_from_candidates as maximize_from_candidates
from .._multistart import maximize_multistart as maximize_multistart
from .._multistart import maximize_on_box as maximize_on_box
from ._bounded_entropy_search import BoundedEntropySearchCache as BoundedEntropySearchCache
from ._bounded_entropy_search import bounded_entropy_search as bounded_entropy_search
from ._confidence_bound import upper_confidence_bound as upper_confidence_bound
from ._expected_improvement import log_expected_improvement as log_expected_improvement
from ._expected_improvement import log_expected_regret as log_expected_regret
from ._expected_improvement import log_improvement_factor as log_improvement_factor
from ._interquantile_range import log_expected_interquantile_range as log_expected_interquantile_range
from ._interquantile_range import log_sinh as log_sinh
from ._log_bmc import LOG_BMC_ACQUISITIONS as LOG_BMC_ACQUISITIONS
from ._log_bmc import log_moment_matched_log_transform as log_moment_matched_log_transform
from ._log_bmc import log_prospective as log_prospective
from ._log_bmc import (
    log_prospective_moment_matched_log_transform as log_prospective_moment_matched_log_transform,
)
from ._log_bmc import log_soft_prospective as log_soft_prospective
from ._log_bmc import log_uncertainty_sampling as log_uncertainty_sampling
from ._log_bmc import log_variance_regularizer as log_variance_regularizer
from ._max_value_entropy import max_value_entropy_search as max_value_entropy_search
from ._uncertainty_sampling import log_prospective_uncertainty as log_prospective_uncertainty
