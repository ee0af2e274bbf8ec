"""gpcompose: composable, pure-JAX transforms for Gaussian-process inference."""

from . import aaci as aaci
from . import acquisition as acquisition
from . import active_learning as active_learning
from . import bo as bo
from . import boosting as boosting
from . import bounded as bounded
from . import bvbmc as bvbmc
from . import gp as gp
from . import kernels as kernels
from . import likelihoods as likelihoods
from . import means as means
from . import mixtures as mixtures
from . import parameters as parameters
from . import priors as priors
from . import quadrature as quadrature
from . import sampling as sampling
from . import sparse as sparse
from . import steingp as steingp
from . import svbmc as svbmc
from . import svgd as svgd
from . import transforms as transforms
from ._errors import RESULTS as RESULTS
from ._maximize import MaximizeResult as MaximizeResult
from ._maximize import maximize as maximize
from ._posterior_interface import AbstractGaussianPosterior as AbstractGaussianPosterior
from ._posterior_interface import AbstractPosterior as AbstractPosterior
from ._posterior_interface import predict_y as predict_y
from ._run import run as run
from ._unstack import unstack as unstack
from .active_learning import Checkpoint as Checkpoint
from .active_learning import load_checkpoint as load_checkpoint
from .active_learning import run_black_box as run_black_box
from .active_learning import run_traceable as run_traceable
from .quadrature import elbo as elbo

__version__ = "0.1.0"
