import jax.numpy as jnp
import numpy as np
from scipy import stats

import gpcompose


def test_gaussian_log_prob_matches_scipy():
    likelihood = gpcompose.likelihoods.Gaussian(variance=0.3)
    y = jnp.array([1.0, 2.0, -0.4])
    f = jnp.array([0.5, 0.1, -0.3])
    expected = stats.norm.logpdf(np.asarray(y), np.asarray(f), np.sqrt(0.3))
    np.testing.assert_allclose(likelihood.log_prob(y, f), expected, rtol=1e-12)
