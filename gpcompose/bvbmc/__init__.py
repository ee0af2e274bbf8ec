"""Boosted Variational Bayesian Monte Carlo (Naiff 2019): a GP surrogate of an expensive
log density, a mixture built by boosting against its Bayesian-quadrature ELBO, and
active learning of new evaluation points, as the learner `BVBMC` of the active-learning
protocol (`init`/`ask`/`tell`/`result`; `gpcompose.run_black_box`, `gpcompose.run_traceable`)."""

from ._acquisitions import AbstractLogBMCAcquisition as AbstractLogBMCAcquisition
from ._acquisitions import MomentMatchedLogTransform as MomentMatchedLogTransform
from ._acquisitions import Prospective as Prospective
from ._acquisitions import ProspectiveMomentMatchedLogTransform as ProspectiveMomentMatchedLogTransform
from ._acquisitions import SoftProspective as SoftProspective
from ._acquisitions import UncertaintySampling as UncertaintySampling
from ._alternation import AbstractAlternation as AbstractAlternation
from ._alternation import CyclicAlternation as CyclicAlternation
from ._alternation import RandomAlternation as RandomAlternation
from ._fit import fit as fit
from ._learner import BVBMC as BVBMC
from ._prior_mean import AbstractPriorMean as AbstractPriorMean
from ._prior_mean import ConstantPriorMean as ConstantPriorMean
from ._prior_mean import NegativeQuadraticPriorMean as NegativeQuadraticPriorMean
from ._scaling import AbstractOutputScaling as AbstractOutputScaling
from ._scaling import Normalize as Normalize
from ._scaling import ZeroMax as ZeroMax
from ._state import BVBMCAskInfo as BVBMCAskInfo
from ._state import BVBMCResult as BVBMCResult
from ._state import BVBMCState as BVBMCState
