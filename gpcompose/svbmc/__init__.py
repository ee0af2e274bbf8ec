"""Sparse Variational Bayesian Monte Carlo (Li, Clarté & Acerbi 2023): post-process
Bayesian inference from thousands of existing log-density evaluations with a sparse GP
surrogate, noise shaping, sparse Bayesian quadrature and active learning, its acquisition a
module (`ProspectiveUncertainty`, `IMIQR`)."""

from .._noise_shaping import shaping_variance as shaping_variance
from .._noise_shaping import total_noise_variance as total_noise_variance
from ._acquisitions import IMIQR as IMIQR
from ._acquisitions import AbstractSVBMCAcquisition as AbstractSVBMCAcquisition
from ._acquisitions import ProspectiveUncertainty as ProspectiveUncertainty
from ._schedule import AbstractRefitSchedule as AbstractRefitSchedule
from ._schedule import DoublingRounds as DoublingRounds
from ._schedule import EveryRound as EveryRound
from ._state import SVBMCState as SVBMCState
from ._subset import stratified_kmeans_subset as stratified_kmeans_subset
from ._trimming import trim_mask as trim_mask
from ._workflow import SVBMC as SVBMC
from ._workflow import SVBMCAskInfo as SVBMCAskInfo
from ._workflow import SVBMCResult as SVBMCResult
from ._workflow import SVBMCUpdateInfo as SVBMCUpdateInfo
from ._workflow import fit as fit
