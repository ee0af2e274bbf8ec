"""Automated augmented conjugate inference (AACI; Galy-Fajou, Wenzel & Opper 2020) for GP models
with super-Gaussian likelihoods: CAVI (full GP), natural-gradient SVI (sparse, minibatched),
the Gibbs sampler, their objectives and predictions, and the `fit` driver."""

from ._cavi import CAVI as CAVI
from ._fit import AACIResult as AACIResult
from ._fit import fit as fit
from ._gibbs import Gibbs as Gibbs
from ._gibbs import GibbsInfo as GibbsInfo
from ._gibbs import GibbsState as GibbsState
from ._objectives import augmented_elbo as augmented_elbo
from ._objectives import standard_elbo as standard_elbo
from ._predict import class_probability as class_probability
from ._predict import log_predictive_density as log_predictive_density
from ._predict import predict as predict
from ._predict import predict_y as predict_y
from ._state import AACIInfo as AACIInfo
from ._state import AACIState as AACIState
from ._svi import SVI as SVI
from ._svi import decaying_step_size as decaying_step_size
from ._variational import NaturalGaussian as NaturalGaussian
