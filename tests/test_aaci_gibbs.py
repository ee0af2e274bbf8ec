"""The AACI Gibbs sampler (Alg. 2): posterior moments on an N = 2 problem against a dense grid, and
the transform matrix (chains vmapped over keys, one trace under jit, float32)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

import gpcompose
from gpcompose.aaci import Gibbs
from gpcompose.likelihoods import Logistic, Matern32Likelihood, StudentT

from .helpers import dense_grid_posterior

KERNEL = gpcompose.kernels.SquaredExponential(lengthscale=0.8, variance=1.5)
X = jnp.array([[-0.3], [0.5]])
CASES = {
    "logistic": (Logistic(), jnp.array([1.0, -1.0]), lambda f, y: special.log_expit(f * y)),
    "matern": (
        Matern32Likelihood(0.7),
        jnp.array([1.2, -0.4]),
        lambda f, y: (
            np.log(np.sqrt(3) / (4 * 0.7) * (1 + np.sqrt(3) * np.abs(y - f) / 0.7)) - np.sqrt(3) * np.abs(y - f) / 0.7
        ),
    ),
}


def _chains(sampler, y, key, num_chains, num_steps):
    def chain(chain_key):
        init_key, run_key = jax.random.split(chain_key)
        return gpcompose.run(sampler, sampler.init(X, key=init_key), run_key, num_steps, y)[1]

    return jax.jit(jax.vmap(chain))(jax.random.split(key, num_chains))


@pytest.mark.parametrize("name", list(CASES))
def test_gibbs_posterior_moments_match_dense_grid(name, getkey):
    likelihood, y, log_likelihood = CASES[name]
    sampler = Gibbs(KERNEL, likelihood)
    infos = _chains(sampler, y, getkey(), 8, 1500)
    draws = np.asarray(infos.latent[:, 100:])
    reference_mean, reference_variance, _ = dense_grid_posterior(
        np.asarray(KERNEL.gram(X)), lambda f: log_likelihood(f, np.asarray(y))
    )
    # Monte Carlo error from the spread of the 8 independent chain means (autocorrelation included)
    mean_error = draws.mean(1).std(0, ddof=1) / np.sqrt(8)
    assert np.all(np.abs(draws.mean((0, 1)) - reference_mean) < 5 * mean_error)
    variance_error = draws.var(1).std(0, ddof=1) / np.sqrt(8)
    assert np.all(np.abs(draws.var((0, 1)) - reference_variance) < 5 * variance_error)
    assert np.all(infos.result == gpcompose.RESULTS.successful)


def test_gibbs_transform_matrix(getkey):
    sampler = Gibbs(KERNEL, StudentT(3.0, 0.5))
    y = jnp.array([1.2, -0.4])

    def chain(key):
        init_key, run_key = jax.random.split(key)
        return gpcompose.run(sampler, sampler.init(X, key=init_key), run_key, 3, y)[1]

    keys = jax.random.split(getkey(), 3)
    batched = eqx.filter_jit(jax.vmap(chain))(keys)
    single = eqx.filter_jit(eqx.debug.assert_max_traces(chain, max_traces=1))
    for index, key in enumerate(keys):  # vmapped chains equal the chains run one by one, compiled once
        info = single(key)
        np.testing.assert_allclose(batched.latent[index], info.latent, rtol=1e-12)
        np.testing.assert_allclose(batched.omega[index], info.omega, rtol=1e-12)
    float32 = jnp.float32
    sampler32 = Gibbs(
        gpcompose.kernels.SquaredExponential(float32(0.8), float32(1.5)), StudentT(float32(3.0), float32(0.5))
    )
    _, infos32 = gpcompose.run(
        sampler32, sampler32.init(X.astype(float32), key=getkey()), getkey(), 5, y.astype(float32)
    )
    assert infos32.latent.dtype == jnp.float32 and np.all(np.isfinite(infos32.latent))
