"""The SVBMC refit guard: a sparse posterior whose mean rises above the ceiling between
the data is replaced by the fallback; a well-behaved one is kept."""

import jax.numpy as jnp
import numpy as np

from gpcompose import sparse
from gpcompose.kernels import SquaredExponential
from gpcompose.means import NegativeQuadratic
from gpcompose.svbmc._training import without_spurious_peak

X = jnp.linspace(-3.0, 3.0, 21)[:, None]  # spacing 0.3
Y = -0.5 * X[:, 0] ** 2  # y_max = 0 at x = 0
NOISE = jnp.full(21, 1e-3)
GRID = jnp.linspace(-3.0, 3.0, 601)[:, None]


def posterior(lengthscale, mean_maximum):
    kernel = SquaredExponential(lengthscale=jnp.array([lengthscale]), variance=1.0)
    mean = NegativeQuadratic(maximum=mean_maximum, location=jnp.zeros(1), scale=jnp.ones(1))
    return sparse.condition(kernel, mean, X, Y, NOISE, X, mask=jnp.ones(21, bool), inducing_mask=jnp.ones(21, bool))


SMOOTH = posterior(1.0, 0.0)  # the mean function is the target itself
# lengthscale 0.03 ≪ spacing: between the points the mean returns to its mean function,
# whose maximum is 50 above every observation
PEAKY = posterior(0.03, 50.0)


def predicted_mean(chosen):
    return np.asarray(sparse.predict(chosen, GRID)[0])


def test_a_peak_above_the_ceiling_selects_the_fallback():
    assert predicted_mean(PEAKY).max() > 40.0  # the constructed peak is there
    chosen, fell_back = without_spurious_peak(PEAKY, lambda: SMOOTH, GRID, jnp.ones(601, bool), jnp.asarray(2.0))
    np.testing.assert_array_equal(predicted_mean(chosen), predicted_mean(SMOOTH))
    assert fell_back


def test_a_posterior_below_the_ceiling_is_kept():
    assert predicted_mean(SMOOTH).max() < 0.01
    chosen, fell_back = without_spurious_peak(SMOOTH, lambda: PEAKY, GRID, jnp.ones(601, bool), jnp.asarray(2.0))
    np.testing.assert_array_equal(predicted_mean(chosen), predicted_mean(SMOOTH))
    assert not fell_back


def test_masked_points_are_not_checked():
    at_data = jnp.arange(601) % 30 == 0  # the grid points that are training inputs
    chosen, fell_back = without_spurious_peak(PEAKY, lambda: SMOOTH, GRID, at_data, jnp.asarray(2.0))
    np.testing.assert_array_equal(predicted_mean(chosen), predicted_mean(PEAKY))
    assert not fell_back
