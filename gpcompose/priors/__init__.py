"""Priors on hyperparameters; each is a density on the parameter's constrained value."""

from ._base import AbstractPrior as AbstractPrior
from ._gamma import Gamma as Gamma
from ._log_scale import LogScale as LogScale
from ._normal import LogNormal as LogNormal
from ._normal import Normal as Normal
from ._student_t import StudentT as StudentT
