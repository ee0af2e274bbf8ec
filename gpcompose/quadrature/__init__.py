"""Kernel mean embeddings and Bayesian quadrature against Gaussians and mixtures."""

from ._elbo import elbo as elbo
from ._embeddings import (
    component_kernel_double_means as component_kernel_double_means,
)
from ._embeddings import (
    component_kernel_means as component_kernel_means,
)
from ._embeddings import (
    kernel_double_mean as kernel_double_mean,
)
from ._embeddings import (
    kernel_mean as kernel_mean,
)
from ._expected_kernel import expected_kernel as expected_kernel
from ._integrate import integrate as integrate
from ._integrate import integrate_components as integrate_components
from ._matern_primitive import matern_gaussian_expectation as matern_gaussian_expectation
from ._maximize_elbo import maximize_elbo as maximize_elbo
