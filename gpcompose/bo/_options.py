from typing import Literal

import equinox as eqx

from ..bounded import RootPriorMean
from ..bounded._square_root import check_root_centre

ACQUISITIONS = ("bes", "ei", "ucb", "mes", "ts", "erm", "random")

Acquisition = Literal["bes", "ei", "ucb", "mes", "ts", "erm", "random"]


class BOOptions(eqx.Module):
    """Constants of bounded Bayesian optimisation. Defaults are the document's (Sec. 5)
    where it gives them; the others are marked [ours] and chosen for CPU runs.

    Static: changing an option recompiles; the state's arrays do not.
    """

    acquisition: Acquisition = eqx.field(static=True, default="bes")
    square_root: bool = eqx.field(static=True, default=True)  # BES/ERM on the SRGP when f⁺ is given
    # [ours] the SRGP's prior centre: "data" (f prior mean 0) or "bound" (f prior mean c); bounded.root_prior_mean
    square_root_centre: RootPriorMean = eqx.field(static=True, default="data")
    num_samples: int = eqx.field(static=True, default=200)  # M
    num_features: int = eqx.field(static=True, default=100)  # l, random Fourier features
    eta_plus_squared_per_dimension: float = eqx.field(static=True, default=0.02)  # η₊² = 0.02 d (standardised)
    eta_minus_squared_per_dimension: float = eqx.field(static=True, default=0.5)  # η₋² = 0.5 d
    acceptance_rule: Literal["coordinate", "mahalanobis"] = eqx.field(static=True, default="coordinate")
    num_candidates: int = eqx.field(static=True, default=500)  # [ours] uniform candidates per search
    num_starts: int = eqx.field(static=True, default=5)  # [ours] Adam restarts per search
    search_steps: int = eqx.field(static=True, default=50)  # [ours] Adam steps per restart
    fit_steps: int = eqx.field(static=True, default=100)  # [ours] BFGS steps of the ML-II fit

    def __check_init__(self):
        if self.acquisition not in ACQUISITIONS:
            raise ValueError(f"`acquisition` must be one of {ACQUISITIONS}, got {self.acquisition!r}.")
        check_root_centre(self.square_root_centre, "square_root_centre")
        for name in ("num_samples", "num_features", "num_candidates", "num_starts", "fit_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"`{name}` must be positive, got {getattr(self, name)}.")
        if self.num_starts > self.num_candidates:
            raise ValueError(f"`num_starts` ({self.num_starts}) must not exceed `num_candidates`.")
