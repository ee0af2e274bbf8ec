"""What the benchmark scripts need beyond `gpcompose.problems`: the real-model problems of the SVBMC and
BVBMC papers (Lotka–Volterra, Bayesian timing, contamination source) with the loaders of their data
files, and the initial-set generators of SVBMC (a CMA-ES and a slice sampler that record every
evaluation).

Not installed with gpcompose. The scripts run as `python benchmarks/<name>.py`, so this folder's parent
is `sys.path[0]` and they import it as `benchmark_problems`; `tests/conftest.py` puts `benchmarks/` on
the path of the tests.
"""

from ._cma_es import cma_es_evaluations as cma_es_evaluations
from ._contamination_source import OBSERVATION_TIMES as OBSERVATION_TIMES
from ._contamination_source import TRUE_PARAMETERS as TRUE_PARAMETERS
from ._contamination_source import ContaminationSource as ContaminationSource
from ._contamination_source import heat_observations as heat_observations
from ._contamination_source import simulate_observations as simulate_observations
from ._lotka_volterra import LotkaVolterra as LotkaVolterra
from ._lotka_volterra import LotkaVolterraReference as LotkaVolterraReference
from ._lotka_volterra import load_lotka_volterra as load_lotka_volterra
from ._lotka_volterra import load_lotka_volterra_reference as load_lotka_volterra_reference
from ._slice_sampling import slice_sampling_evaluations as slice_sampling_evaluations
from ._timing import Timing as Timing
from ._timing import TimingReference as TimingReference
from ._timing import load_timing as load_timing
from ._timing import load_timing_reference as load_timing_reference
from ._two_moons_reference import load_two_moons_reference_samples as load_two_moons_reference_samples
