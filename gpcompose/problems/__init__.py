"""Test problems with closed-form densities or known extrema, their initial designs, and the metrics that
compare a posterior approximation with a reference, for examples, tests and experiments.

An optional part of gpcompose: `import gpcompose` does not import it, it needs nothing beyond the core
dependencies and it reads no files. Problems that need data files or solvers (the SVBMC and BVBMC
real-model problems) and the initial-set generators of the paper benchmarks live with the benchmark
scripts in the repository's `benchmarks/` folder, outside the installed package.
"""

from . import metrics as metrics
from ._cigar import Cigar as Cigar
from ._lumpy import Lumpy as Lumpy
from ._optimization_functions import OptimizationFunction as OptimizationFunction
from ._optimization_functions import optimization_functions as optimization_functions
from ._rosenbrock_gaussian import RosenbrockGaussian as RosenbrockGaussian
from ._student_t import StudentT as StudentT
from ._two_moons import TwoMoons as TwoMoons
from ._vbmc_toy import VBMC_TOY_PROBLEMS as VBMC_TOY_PROBLEMS
from ._vbmc_toy import vbmc_toy_initial_points as vbmc_toy_initial_points
