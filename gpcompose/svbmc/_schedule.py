"""When an SVBMC retraining of the active phase refits the surrogate's hyperparameters."""

import abc

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Int


class AbstractRefitSchedule(eqx.Module):
    """Which retrainings of the active phase fit the hyperparameters afresh (exact-GP MAP on
    a new subset, then the SGPR MAP, `_refit.refit_from_starts`). The others keep the last
    round's hyperparameters on inducing points selected afresh, unless their mean then rises
    above the refit guard's ceiling, in which case they refit too."""

    @abc.abstractmethod
    def __call__(self, round_number: Int[ArrayLike, ""], last: Bool[ArrayLike, ""]) -> bool | Bool[Array, ""]:
        """Whether retraining number `round_number` (1 for the first retraining after
        `init`) refits; `last`: it ends the budget. A Python `True` refits without compiling
        the kept-hyperparameters path at all."""


class EveryRound(AbstractRefitSchedule):
    """Every retraining refits, as Li, Clarté & Acerbi (2023, §3, step 7) do."""

    def __call__(self, round_number, last):
        return True


class DoublingRounds(AbstractRefitSchedule):
    """Retrainings 1, 2, 4, 8, … and the last one refit [ours]: a refit when the active
    evaluations have doubled since the last one (6 refits and the last of 40 rounds for a
    budget of 200 in rounds of 5).

    Why: the surrogate is fitted at `init` on the existing evaluations, typically thousands,
    and each round adds `batch_size` of them, so that the hyperparameters of consecutive
    rounds barely differ, while the refit costs most of a retraining. Between refits the
    new evaluations still enter the surrogate (trimming, noise shaping, inducing points and
    conditioning run every round), and the last round's refit gives the reported surrogate
    hyperparameters fitted to every evaluation."""

    def __call__(self, round_number, last):
        round_number = jnp.asarray(round_number)
        power_of_two = (round_number >= 1) & ((round_number & (round_number - 1)) == 0)
        return power_of_two | jnp.asarray(last, bool)
