"""Bayesian optimisation with approximate bounds (Nguyen, Deisenroth & Osborne 2021):
bounded entropy search on the square-root GP with an EI fallback, the baselines EI, UCB,
MES, Thompson sampling and ERM, as ask/tell steps and `maximize`/`minimize` drivers."""

from ._options import BOOptions as BOOptions
from ._state import BOState as BOState
from ._surrogate import Surrogate as Surrogate
from ._surrogate import fit_surrogate as fit_surrogate
from ._workflow import BOResult as BOResult
from ._workflow import ask as ask
from ._workflow import init as init
from ._workflow import maximize as maximize
from ._workflow import minimize as minimize
from ._workflow import result as result
from ._workflow import run as run
from ._workflow import tell as tell
