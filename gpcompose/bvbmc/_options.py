from typing import Literal

import equinox as eqx

from ..acquisition import LOG_BMC_ACQUISITIONS


class BVBMCOptions(eqx.Module):
    """Constants of the BVBMC workflow. Defaults are the thesis's or its code's
    (`notes/bvbmc.md` §2.6–2.9, §4.2 toy problems) where they exist; [ours] otherwise.
    The boosting step's own constants live in `gpcompose.boosting.Boosting`.

    Static: changing an option recompiles; the state's arrays do not.
    """

    budget: int = eqx.field(static=True, default=100)  # new evaluations (iterations)
    max_components: int = eqx.field(static=True, default=30)  # [ours] mixture slots
    scaling: Literal["normalize", "zeromax"] = eqx.field(static=True, default="normalize")
    mean: Literal["constant", "negative_quadratic"] = eqx.field(static=True, default="constant")
    mean_offset: float = eqx.field(static=True, default=1.0)  # K_C of eq. 6.11
    mean_constant: float | None = eqx.field(static=True, default=None)  # fixed C (e.g. −20 with zeromax)
    jitter: float = eqx.field(static=True, default=1e-4)  # noise variance, normalised units
    fit_steps: int = eqx.field(static=True, default=200)  # [ours] BFGS steps of ML-II
    refit_every: int = eqx.field(static=True, default=0)  # 0: fit once (thesis), else every n
    acquisitions: tuple[str, ...] = eqx.field(static=True, default=("prop", "mmlt"))
    alternation: Literal["random", "cyclic"] = eqx.field(static=True, default="random")
    variance_threshold: float = eqx.field(static=True, default=0.1)  # v_reg (toy problems)
    num_candidates: int = eqx.field(static=True, default=100)  # draws from q (code "sampling")
    num_search_starts: int = eqx.field(static=True, default=4)  # [ours] refined by Adam
    search_steps: int = eqx.field(static=True, default=30)  # [ours]; code: 100 from one start
    search_learning_rate: float = eqx.field(static=True, default=0.1)  # code
    # [ours] acquisitions stay in the box of the GP's training inputs, so that box (and the
    # bounded boosting steps' box) never grows past the initial design's; see `ask`
    search_in_box: bool = eqx.field(static=True, default=True)
    initial_joint_steps: int = eqx.field(static=True, default=300)  # ELBO fit of q₀ (§6.1.1.3)
    final_entropy_samples: int = eqx.field(static=True, default=8192)  # [ours] ELBO of the result

    def __check_init__(self):
        if self.budget < 0:
            raise ValueError(f"`budget` must be ≥ 0, got {self.budget}.")
        positive = ("max_components", "fit_steps", "num_candidates", "num_search_starts")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"`{name}` must be positive, got {getattr(self, name)}.")
        if self.scaling not in ("normalize", "zeromax"):
            raise ValueError(f"`scaling` must be 'normalize' or 'zeromax', got {self.scaling!r}.")
        if self.mean not in ("constant", "negative_quadratic"):
            raise ValueError(f"`mean` must be 'constant' or 'negative_quadratic', got {self.mean!r}.")
        if self.alternation not in ("random", "cyclic"):
            raise ValueError(f"`alternation` must be 'random' or 'cyclic', got {self.alternation!r}.")
        if not self.acquisitions or any(name not in LOG_BMC_ACQUISITIONS for name in self.acquisitions):
            raise ValueError(
                f"`acquisitions` must be a non-empty tuple of names in {sorted(LOG_BMC_ACQUISITIONS)}, "
                f"got {self.acquisitions!r}."
            )
        if self.num_search_starts > self.num_candidates:
            raise ValueError(
                f"`num_search_starts` ({self.num_search_starts}) exceeds `num_candidates` ({self.num_candidates})."
            )
