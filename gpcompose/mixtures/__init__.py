"""Gaussian-mixture variational families: log density, reparameterised sampling,
moments, marginals, entropy estimators and bounds, adding and pruning components."""

from ._base import AbstractGaussianMixture as AbstractGaussianMixture
from ._base import first_free_slot as first_free_slot
from ._diagonal import GaussianMixture as GaussianMixture
from ._gaussian import diagonal_gaussian_log_prob as diagonal_gaussian_log_prob
from ._gaussian import gaussian_kl as gaussian_kl
from ._multivariate_normal import MultivariateNormal as MultivariateNormal
from ._vbmc import VBMCMixture as VBMCMixture
