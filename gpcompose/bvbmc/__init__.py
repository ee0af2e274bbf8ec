"""Boosted Variational Bayesian Monte Carlo (Naiff 2019): a GP surrogate of an expensive
log density, a mixture built by boosting against its Bayesian-quadrature ELBO, and
active learning of new evaluation points, as ask/tell steps on fixed-capacity buffers."""

from ._options import BVBMCOptions as BVBMCOptions
from ._state import BVBMCState as BVBMCState
from ._workflow import BVBMCResult as BVBMCResult
from ._workflow import acquisition as acquisition
from ._workflow import ask as ask
from ._workflow import fit as fit
from ._workflow import init as init
from ._workflow import result as result
from ._workflow import run as run
from ._workflow import tell as tell
