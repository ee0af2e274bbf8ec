"""gpcompose: composable, pure-JAX transforms for Gaussian-process inference."""

from . import gp as gp, kernels as kernels, means as means, parameters as parameters, priors as priors, sparse as sparse
from ._errors import RESULTS as RESULTS
from ._maximise import maximise as maximise, MaximiseResult as MaximiseResult

__version__ = "0.1.0"
