"""Plots of gpcompose's results, each returned as a matplotlib `Figure`: `corner` (the
marginals and pairwise densities of a variational posterior, against reference samples),
`bo_trace` (a Bayesian-optimization run's best value or regret, and its evaluated points),
`gp_fit_1d` (a 1-D GP fit with its bands) and `elbo_trace` (the ELBO per round of SVBMC or BVBMC).

Needs matplotlib (`pip install 'gpcompose[plot]'`). `import gpcompose` does not import this
module: import it with `from gpcompose import plot`.
"""

try:
    import matplotlib  # noqa: F401
except ImportError as error:
    raise ImportError(
        "gpcompose.plot needs matplotlib: install it with `pip install 'gpcompose[plot]'` "
        "(or `pip install matplotlib`)."
    ) from error

from ._bo_trace import bo_trace as bo_trace
from ._corner import corner as corner
from ._elbo_trace import elbo_trace as elbo_trace
from ._gp_fit import gp_fit_1d as gp_fit_1d
