"""The SVBMC acquisitions as modules (Li, Clarté & Acerbi 2023, §3.4): the choices of
`SVBMC.acquisition`, each building the objective that `SVBMC.ask` maximises in the
inference space w."""

import abc
import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from ..acquisition import log_expected_interquantile_range, log_prospective_uncertainty
from ._state import SVBMCState

if TYPE_CHECKING:
    from ._workflow import SVBMC


class AbstractSVBMCAcquisition(eqx.Module):
    """How `SVBMC.ask` chooses the next point: a subclass implements
    `objective(learner, state, keep, key)`, the function of w to maximise."""

    @abc.abstractmethod
    def objective(
        self, learner: "SVBMC", state: SVBMCState, keep: Bool[Array, " C"], key: PRNGKeyArray
    ) -> Callable[[Float[Array, " D"]], Float[Array, ""]]:
        """The acquisition of a point w of the inference space, from the state's surrogate and
        mixture q; `keep` marks the training rows (`_training.training_rows`) and `key` draws
        whatever the acquisition samples."""


class ProspectiveUncertainty(AbstractSVBMCAcquisition):
    """log a₁(w) = log s²(w) + log q(w) + f̄(w), prospective uncertainty sampling (Li et al.
    2023, §3.4, eq. 1; `acquisition.log_prospective_uncertainty`), for exact targets."""

    def objective(self, learner, state, keep, key):
        return lambda w: log_prospective_uncertainty(state.surrogate, state.posterior, w)


class IMIQR(AbstractSVBMCAcquisition):
    """−log E_q[sinh(α s⋆(w′; w))], a monotone transform of a₂, the integrated median
    interquantile range (Li et al. 2023, §3.4, eq. 2; Järvenpää et al. 2021), for noisy
    targets (`acquisition.log_expected_interquantile_range`). The look-ahead noise is the
    median σ²_obs of the successful training rows (`learner.noiseless_variance` if there are
    none)."""

    # p_α, α = Φ⁻¹(p_α) (Li et al. 2023, §3.4: 0.75)
    quantile: float = eqx.field(static=True, default=0.75)
    # Monte Carlo draws of q for the expectation (VBMC's estimator)
    reference_samples: int = eqx.field(static=True, default=100)

    def __check_init__(self):
        quantile = self.quantile
        if isinstance(quantile, bool) or not isinstance(quantile, numbers.Real) or not 0.5 < quantile < 1:
            raise ValueError(f"`quantile` of IMIQR must be a number in (0.5, 1), got {quantile!r}.")
        samples = self.reference_samples
        if isinstance(samples, bool) or not isinstance(samples, numbers.Integral) or samples < 1:
            raise ValueError(f"`reference_samples` of IMIQR must be a positive int, got {samples!r}.")

    def objective(self, learner, state, keep, key):
        reference = state.posterior.sample(key, self.reference_samples)
        noise_variance = state.evaluations.noise_variance
        observed = keep & state.evaluations.succeeded  # a censored failure's σ²_obs is not a measured one
        typical_noise = jnp.median(jnp.where(observed, noise_variance, jnp.nan)[None], axis=1)[0]
        look_ahead_noise = jnp.where(jnp.isfinite(typical_noise), typical_noise, learner.noiseless_variance)
        return lambda w: (
            -log_expected_interquantile_range(state.surrogate, w, reference, look_ahead_noise, quantile=self.quantile)
        )
