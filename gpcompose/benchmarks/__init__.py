"""Benchmark problems, initial-set generators and metrics shared by examples, tests and benchmark scripts."""

from . import metrics as metrics
from ._cma_es import cma_es_evaluations as cma_es_evaluations
from ._rosenbrock_gaussian import RosenbrockGaussian as RosenbrockGaussian
from ._slice_sampling import slice_sampling_evaluations as slice_sampling_evaluations
from ._two_moons import TwoMoons as TwoMoons
from ._two_moons import load_two_moons_reference_samples as load_two_moons_reference_samples
