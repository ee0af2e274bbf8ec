"""Bayesian optimisation with approximate bounds (Nguyen, Deisenroth & Osborne 2021): the
active learner `BO` with bounded entropy search on the square-root GP (EI fallback; needs
f⁺ or f⁻) or the baselines EI (the default), UCB, MES, Thompson sampling, ERM and random
search as its `acquisition`, driven by `gpcompose.run_black_box`/`run_traceable`, and
`maximize`/`minimize`."""

from ._acquisitions import AbstractAcquisition as AbstractAcquisition
from ._acquisitions import BoundedEntropySearch as BoundedEntropySearch
from ._acquisitions import ExpectedImprovement as ExpectedImprovement
from ._acquisitions import ExpectedRegretMinimization as ExpectedRegretMinimization
from ._acquisitions import MaxValueEntropySearch as MaxValueEntropySearch
from ._acquisitions import RandomSearch as RandomSearch
from ._acquisitions import ThompsonSampling as ThompsonSampling
from ._acquisitions import UpperConfidenceBound as UpperConfidenceBound
from ._context import Proposal as Proposal
from ._context import ProposalContext as ProposalContext
from ._learner import BO as BO
from ._optimise import maximize as maximize
from ._optimise import minimize as minimize
from ._state import BOAskInfo as BOAskInfo
from ._state import BOResult as BOResult
from ._state import BOState as BOState
from ._state import BOUpdateInfo as BOUpdateInfo
from ._surrogate import Surrogate as Surrogate
from ._surrogate import fit_surrogate as fit_surrogate
