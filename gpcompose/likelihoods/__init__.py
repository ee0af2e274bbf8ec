"""Likelihoods p(y | f): `log_prob(y, f)` elementwise; each is an Equinox module.

The super-Gaussian family of Galy-Fajou, Wenzel & Opper (2020) (`AbstractSuperGaussianLikelihood`) also
exposes its decomposition C e^{g f} φ(h²) for augmented conjugate inference (`gpcompose.aaci`).
"""

from ._base import AbstractLikelihood as AbstractLikelihood
from ._bayesian_svm import BayesianSVM as BayesianSVM
from ._bernoulli import Bernoulli as Bernoulli
from ._gaussian import Gaussian as Gaussian
from ._laplace import Laplace as Laplace
from ._logistic import Logistic as Logistic
from ._matern32 import Matern32Likelihood as Matern32Likelihood
from ._student_t import StudentT as StudentT
from ._super_gaussian import AbstractSuperGaussianLikelihood as AbstractSuperGaussianLikelihood
