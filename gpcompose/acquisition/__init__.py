"""Acquisition functions for active learning and Bayesian optimisation, and a vmapped
multi-start maximiser."""

from ._interquantile_range import log_expected_interquantile_range as log_expected_interquantile_range
from ._interquantile_range import log_sinh as log_sinh
from ._multistart import MultistartResult as MultistartResult
from ._multistart import maximise_multistart as maximise_multistart
from ._predict import latent_lookahead_variance as latent_lookahead_variance
from ._predict import latent_predict as latent_predict
from ._uncertainty_sampling import log_prospective_uncertainty as log_prospective_uncertainty
