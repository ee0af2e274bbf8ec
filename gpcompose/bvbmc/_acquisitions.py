"""The BVBMC acquisitions as modules (Naiff 2019, thesis §5.5.2 and §6.1.2): the choices
`BVBMC.acquisitions` alternates between, each the log of its value in terms of the GP's
latent mean m and variance k (normalised output units) and the mixture's log density log q."""

import abc

import equinox as eqx
from jaxtyping import Array, Float

from .. import acquisition


class AbstractLogBMCAcquisition(eqx.Module):
    """A BVBMC acquisition: `acquisition(mean, variance, log_q)` is log a(x) at a point where
    the GP's latent mean is m, its variance k, and the mixture's log density log q."""

    @abc.abstractmethod
    def __call__(self, mean: Float[Array, ""], variance: Float[Array, ""], log_q: Float[Array, ""]) -> Float[Array, ""]:
        """log a(x)."""


class UncertaintySampling(AbstractLogBMCAcquisition):
    """US: log(k q²) (thesis eq. 5.55)."""

    def __call__(self, mean, variance, log_q):
        return acquisition.log_uncertainty_sampling(mean, variance, log_q)


class Prospective(AbstractLogBMCAcquisition):
    """PROP: log(k e^m q²) (thesis eq. 5.56; VBMC's prospective prediction)."""

    def __call__(self, mean, variance, log_q):
        return acquisition.log_prospective(mean, variance, log_q)


class SoftProspective(AbstractLogBMCAcquisition):
    """soft-PROP: log(k softplus(m) q²) (thesis eq. 6.13)."""

    def __call__(self, mean, variance, log_q):
        return acquisition.log_soft_prospective(mean, variance, log_q)


class MomentMatchedLogTransform(AbstractLogBMCAcquisition):
    """MMLT: log(e^{2m + k}(e^k − 1)), the variance of e^f for f ~ N(m, k) (thesis eq. 6.14)."""

    def __call__(self, mean, variance, log_q):
        return acquisition.log_moment_matched_log_transform(mean, variance, log_q)


class ProspectiveMomentMatchedLogTransform(AbstractLogBMCAcquisition):
    """MMLT_P: log(e^{2m + k}(e^k − 1) q²) (thesis eq. 6.15)."""

    def __call__(self, mean, variance, log_q):
        return acquisition.log_prospective_moment_matched_log_transform(mean, variance, log_q)
