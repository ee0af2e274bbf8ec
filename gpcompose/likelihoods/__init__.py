"""Likelihoods p(y | f): `log_prob(y, f)` elementwise; each is an Equinox module."""

from ._base import AbstractLikelihood as AbstractLikelihood
from ._bernoulli import Bernoulli as Bernoulli
from ._gaussian import Gaussian as Gaussian
