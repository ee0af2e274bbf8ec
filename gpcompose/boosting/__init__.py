"""Boosted variational inference with Bayesian Monte Carlo (BVBMC; Naiff 2019): add one
diagonal Gaussian component per step to a mixture approximation of a GP model of a log
density (RELBO f-step, concave weight step, pruning, periodic joint update)."""

from ._boosting import Boosting as Boosting
from ._boosting import BoostingInfo as BoostingInfo
from ._boosting import BoostingState as BoostingState
from ._relbo import fit_component as fit_component
from ._relbo import relbo as relbo
from ._reweight import add_and_prune as add_and_prune
from ._weight import WeightProblem as WeightProblem
from ._weight import solve_weight as solve_weight
from ._weight import weight_problem as weight_problem
