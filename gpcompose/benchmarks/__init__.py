"""Benchmark problems, initial-set generators and metrics shared by examples, tests and benchmark scripts."""

from . import metrics as metrics
from ._cigar import Cigar as Cigar
from ._cma_es import cma_es_evaluations as cma_es_evaluations
from ._contamination_source import TRUE_PARAMETERS as TRUE_PARAMETERS
from ._contamination_source import ContaminationSource as ContaminationSource
from ._contamination_source import heat_observations as heat_observations
from ._contamination_source import simulate_observations as simulate_observations
from ._lotka_volterra import LotkaVolterra as LotkaVolterra
from ._lotka_volterra import LotkaVolterraReference as LotkaVolterraReference
from ._lotka_volterra import load_lotka_volterra as load_lotka_volterra
from ._lotka_volterra import load_lotka_volterra_reference as load_lotka_volterra_reference
from ._lumpy import Lumpy as Lumpy
from ._optimisation_functions import OptimisationFunction as OptimisationFunction
from ._optimisation_functions import optimisation_functions as optimisation_functions
from ._rosenbrock_gaussian import RosenbrockGaussian as RosenbrockGaussian
from ._slice_sampling import slice_sampling_evaluations as slice_sampling_evaluations
from ._student_t import StudentT as StudentT
from ._timing import Timing as Timing
from ._timing import TimingReference as TimingReference
from ._timing import load_timing as load_timing
from ._timing import load_timing_reference as load_timing_reference
from ._two_moons import TwoMoons as TwoMoons
from ._two_moons import load_two_moons_reference_samples as load_two_moons_reference_samples
from ._vbmc_toy import VBMC_TOY_PROBLEMS as VBMC_TOY_PROBLEMS
from ._vbmc_toy import vbmc_toy_initial_points as vbmc_toy_initial_points
