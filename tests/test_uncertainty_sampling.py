import jax
import jax.numpy as jnp
import numpy as np

from gpcompose import gp, kernels, means, sparse
from gpcompose.acquisition import log_prospective_uncertainty
from gpcompose.mixtures import GaussianMixture

from .test_gp import make_problem

STANDARD_NORMAL = GaussianMixture.from_moments(jnp.ones(1), jnp.zeros((1, 1)), jnp.ones((1, 1)))


def test_log_a1_is_log_variance_plus_log_q_plus_mean_for_an_exact_posterior(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    posterior = gp.condition(kernel, mean, X, y, noise)
    mixture = GaussianMixture.from_moments(
        jnp.array([0.3, 0.7]), jnp.array([[0.0, 0.5], [-1.0, 0.2]]), jnp.array([[1.0, 0.5], [0.3, 2.0]])
    )
    X_new = jax.random.normal(getkey(), (5, 2))
    latent_mean, latent_variance = gp.predict(posterior, X_new)
    expected = np.log(latent_variance) + mixture.log_prob(X_new) + latent_mean
    values = jax.vmap(lambda x: log_prospective_uncertainty(posterior, mixture, x))(X_new)
    np.testing.assert_allclose(values, expected, rtol=1e-10)


def dense_data_with_a_jitter_floor():
    """301 observations on [−3, 3] with noise 1e-3 under σ_f² = 400 and 31 inducing inputs:
    the jitter ε = 1e-6·σ_f² = 4·10⁻⁴ is larger than the data's posterior variance (the
    Lotka–Volterra regime of SVBMC), and there are free inducing slots for new points."""
    X = jnp.linspace(-3.0, 3.0, 301)[:, None]
    kernel = kernels.SquaredExponential(lengthscale=jnp.array([1.0]), variance=400.0)
    Z = jnp.concatenate([X[::10], jnp.zeros((6, 1))])
    return sparse.condition(
        kernel,
        means.Zero(),
        X,
        -2.0 * X[:, 0] ** 2,
        jnp.full(301, 1e-3),
        Z,
        capacity=310,
        inducing_mask=jnp.arange(37) < 31,
    )


def test_sparse_log_a1_uses_the_reducible_variance(getkey):
    posterior = dense_data_with_a_jitter_floor()
    X_new = jax.random.uniform(getkey(), (6, 1), minval=-1.0, maxval=1.0)
    latent_mean, reducible = sparse.reducible_variance(posterior, X_new)
    expected = np.log(reducible) + STANDARD_NORMAL.log_prob(X_new) + latent_mean
    values = jax.vmap(lambda x: log_prospective_uncertainty(posterior, STANDARD_NORMAL, x))(X_new)
    np.testing.assert_allclose(values, expected, rtol=1e-10)
    assert np.all(np.asarray(reducible) < 0.7 * np.asarray(sparse.predict(posterior, X_new)[1]))


def test_a1_maximiser_moves_on_after_each_evaluation_where_the_jitter_floor_dominates():
    """Evaluate a₁'s grid maximiser five times as SVBMC records points (the point joins Z,
    then the noise-1e-3 observation is added): each new maximiser is another point.
    With the floor in s², or without the point joining Z, all five are x = 0."""
    posterior = dense_data_with_a_jitter_floor()
    grid = jnp.linspace(-1.0, 1.0, 2001)[:, None]
    chosen = []
    for _ in range(5):
        values = jax.vmap(lambda x: log_prospective_uncertainty(posterior, STANDARD_NORMAL, x))(grid)
        x = grid[jnp.argmax(values)]
        chosen.append(float(x[0]))
        posterior = sparse.add_inducing_point(posterior, x)
        posterior = sparse.update(posterior, x, -2.0 * x[0] ** 2, 1e-3)
    gaps = np.abs(np.subtract.outer(chosen, chosen))[np.triu_indices(5, 1)]
    assert np.min(gaps) > 0.02, chosen  # 0.04 here; 0 with the floor
