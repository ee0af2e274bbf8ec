"""The small SVBMC problems the SVBMC workflow tests share: one learner and one problem
shape, so that the tests of a file reuse each other's compiled programs."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from gpcompose import svbmc

MEAN = jnp.array([0.5, -1.0])
SD = jnp.array([1.0, 0.5])
LOG_Z = 1.7

SMALL_SETTINGS = dict(
    subset_size=60,
    min_inducing=30,
    max_inducing=60,
    max_components=4,
    exact_fit_steps=60,
    sparse_fit_steps=20,
    buildup_steps=100,
    round_steps=30,
    num_candidates=32,
    search_steps=10,
    final_entropy_samples=65536,
    whitening_passes=1,  # the targets here are Gaussian: one pass whitens them (two passes: tested)
)
NUM_INITIAL, BUDGET, BATCH = 120, 4, 2  # one shape for every test: compiled programs are shared
SMALL = svbmc.SVBMC(batch_size=BATCH, **SMALL_SETTINGS)


def gaussian_log_density(x):
    """log Z + log N(x; MEAN, diag(SD²)), so the evidence is exactly e^{LOG_Z}."""
    standardised = (x - MEAN) / SD
    return LOG_Z - 0.5 * jnp.sum(standardised**2) - jnp.sum(jnp.log(SD)) - math.log(2 * math.pi)


def initial_evaluations(key, num_points):
    X = 2.5 * jax.random.normal(key, (num_points, 2))
    return np.array(X), np.array(jax.vmap(gaussian_log_density)(X))


CORRELATED_COVARIANCE = np.array([[1.0, 0.95 * 0.5], [0.95 * 0.5, 0.25]])


def correlated_log_density(x):
    """log N(x; 0, C) with correlation 0.95 (log Z = 0)."""
    precision = jnp.asarray(np.linalg.inv(CORRELATED_COVARIANCE))
    log_normalizer = 0.5 * np.linalg.slogdet(CORRELATED_COVARIANCE)[1] + math.log(2 * math.pi)
    return -0.5 * x @ precision @ x - log_normalizer


def correlated_evaluations():
    """120 points of 2.5·N(0, I) and `correlated_log_density` there."""
    X = 2.5 * jax.random.normal(jax.random.key(3), (NUM_INITIAL, 2))
    return np.array(X), np.array(jax.vmap(correlated_log_density)(X))
