import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import RESULTS, gp, kernels, means
from gpcompose.parameters import Positive, value_of

from .helpers import autodiff_gradient, dense_exact_posterior, dense_kernel, finite_difference_gradient


def make_problem(key, num_points=30, dimension=2):
    input_key, noise_key, target_key = jax.random.split(key, 3)
    X = jax.random.uniform(input_key, (num_points, dimension), minval=-2.0, maxval=2.0)
    noise = 0.01 + 0.05 * jax.random.uniform(noise_key, (num_points,))
    y = jnp.sin(2 * X[:, 0]) + X[:, 1] ** 2 + jnp.sqrt(noise) * jax.random.normal(target_key, (num_points,))
    kernel = kernels.Matern52(lengthscale=jnp.array([0.8, 1.3]), variance=1.7)
    mean = means.NegativeQuadratic(maximum=0.5, location=jnp.array([0.1, -0.2]), scale=jnp.array([2.0, 3.0]))
    return kernel, mean, X, y, noise


def test_condition_matches_dense_brute_force(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    X_new = jax.random.normal(getkey(), (9, 2))
    posterior = gp.condition(kernel, mean, X, y, noise)
    mu, cov, lml = dense_exact_posterior(kernel, mean, X, y, noise, X_new)
    mean_pred, variance = gp.predict(posterior, X_new)
    mean_full, covariance = gp.predict_covariance(posterior, X_new)
    np.testing.assert_allclose(mean_pred, mu, atol=1e-9)
    np.testing.assert_allclose(variance, np.diag(cov), atol=1e-9)
    np.testing.assert_allclose(mean_full, mu, atol=1e-9)
    np.testing.assert_allclose(covariance, cov, atol=1e-9)
    np.testing.assert_allclose(gp.log_marginal_likelihood(posterior), lml, rtol=1e-10)
    assert posterior.result == RESULTS.successful


def test_predict_y_is_the_conditional_of_new_noisy_observations(getkey):
    """(mean, variance) of y* = f(X*) + ε*, ε* ~ N(0, σ*²), given y: the Gaussian conditional of
    the joint of (y, y*) by dense solves, for a scalar, a per-row and a parameter σ*²."""
    kernel, mean, X, y, noise = make_problem(getkey())
    X_new = jax.random.normal(getkey(), (7, 2))
    posterior = gp.condition(kernel, mean, X, y, noise)
    K = dense_kernel(kernel, X, X) + np.diag(noise)
    cross = dense_kernel(kernel, X, X_new)
    residual = np.asarray(y) - np.asarray(mean(X))
    for new_noise in (0.02, 0.01 + 0.01 * np.arange(7.0), Positive(0.05)):
        new_variance = np.broadcast_to(np.asarray(value_of(new_noise)), (7,))
        joint_new = dense_kernel(kernel, X_new, X_new) + np.diag(new_variance)
        expected_mean = np.asarray(mean(X_new)) + cross.T @ np.linalg.solve(K, residual)
        expected_variance = np.diag(joint_new - cross.T @ np.linalg.solve(K, cross))
        for mean_y, variance_y in (gp.predict_y(posterior, X_new, new_noise), posterior.predict_y(X_new, new_noise)):
            np.testing.assert_allclose(mean_y, expected_mean, atol=1e-9)
            np.testing.assert_allclose(variance_y, expected_variance, atol=1e-9)
    with pytest.raises(ValueError, match="`noise_variance` must be a scalar or have shape \\(7,\\)"):
        gp.predict_y(posterior, X_new, jnp.ones(3))
    with pytest.raises(Exception, match="gpcompose.predict_y: `noise_variance` must be finite and strictly positive"):
        gp.predict_y(posterior, X_new, -1.0)


def test_scalar_noise_equals_per_row_noise(getkey):
    kernel, mean, X, y, _ = make_problem(getkey())
    scalar = gp.condition(kernel, mean, X, y, 0.03)
    per_row = gp.condition(kernel, mean, X, y, jnp.full(y.shape, 0.03))
    parameter = gp.condition(kernel, mean, X, y, Positive(0.03))
    for other in (per_row, parameter):
        np.testing.assert_allclose(gp.log_marginal_likelihood(scalar), gp.log_marginal_likelihood(other), rtol=1e-12)


def test_mask_equals_conditioning_on_subset(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    mask = jax.random.bernoulli(getkey(), 0.6, y.shape)
    keep = np.asarray(mask)
    X_new = jax.random.normal(getkey(), (5, 2))
    masked = gp.condition(kernel, mean, X, y, noise, mask=mask)
    subset = gp.condition(kernel, mean, X[keep], y[keep], noise[keep])
    np.testing.assert_allclose(gp.log_marginal_likelihood(masked), gp.log_marginal_likelihood(subset), rtol=1e-10)
    for a, b in zip(gp.predict(masked, X_new), gp.predict(subset, X_new)):
        np.testing.assert_allclose(a, b, atol=1e-10)


def test_sequential_updates_equal_recomputation(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    X_new = jax.random.normal(getkey(), (6, 2))
    start = 20
    posterior = gp.condition(kernel, mean, X[:start], y[:start], noise[:start], capacity=X.shape[0])
    update = jax.jit(gp.update)
    for index in range(start, X.shape[0]):
        posterior = update(posterior, X[index], y[index], noise[index])
    reference = gp.condition(kernel, mean, X, y, noise)
    np.testing.assert_allclose(posterior.factor.lower, reference.factor.lower, atol=1e-8)
    np.testing.assert_allclose(posterior.weights, reference.weights, atol=1e-8)
    np.testing.assert_allclose(gp.log_marginal_likelihood(posterior), gp.log_marginal_likelihood(reference), atol=1e-8)
    for a, b in zip(gp.predict(posterior, X_new), gp.predict(reference, X_new)):
        np.testing.assert_allclose(a, b, atol=1e-8)
    assert posterior.result == RESULTS.successful


def test_update_on_a_full_buffer_raises(getkey):
    kernel, mean, X, y, noise = make_problem(getkey(), num_points=5)
    posterior = gp.condition(kernel, mean, X, y, noise)
    with pytest.raises(Exception, match="buffer is full"):
        gp.update(posterior, X[0], y[0], noise[0])


def test_lookahead_variance_equals_refit_and_never_increases(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    posterior = gp.condition(kernel, mean, X, y, noise)
    X_query = jax.random.normal(getkey(), (12, 2))
    x = jax.random.normal(getkey(), (2,))
    _, current = gp.predict(posterior, X_query)
    lookahead = gp.lookahead_variance(posterior, X_query, x, 0.02)
    for unseen_value in (-3.0, 10.0):
        refit = gp.condition(
            kernel, mean, jnp.concatenate([X, x[None]]), jnp.append(y, unseen_value), jnp.append(noise, 0.02)
        )
        np.testing.assert_allclose(lookahead, gp.predict(refit, X_query)[1], atol=1e-10)
    assert np.all(lookahead <= current + 1e-12)


def test_gradient_of_log_marginal_likelihood_matches_finite_differences(getkey):
    kernel, mean, X, y, noise = make_problem(getkey(), num_points=15)
    params = {"kernel": kernel, "mean": mean, "noise": Positive(0.05)}

    def objective(p):
        return gp.log_marginal_likelihood(gp.condition(p["kernel"], p["mean"], X, y, p["noise"]))

    np.testing.assert_allclose(
        autodiff_gradient(objective, params), finite_difference_gradient(objective, params), rtol=1e-5, atol=1e-6
    )


def test_closed_form_derivatives_of_log_marginal_likelihood_match_dense_autodiff(getkey):
    """The gradient and Hessian of the log marginal likelihood (closed-form ∂/∂(K + D)) on a
    padded buffer filled by `update`, against autodiff of the explicit dense formula with
    `jnp.linalg.slogdet` and `jnp.linalg.solve` on the used rows only."""
    kernel, mean, X, y, _ = make_problem(getkey(), num_points=15)
    params = {"kernel": kernel, "mean": mean, "noise": Positive(0.05)}

    def ours(p):
        posterior = gp.condition(p["kernel"], p["mean"], X[:12], y[:12], p["noise"], capacity=20)
        for row in range(12, 15):
            posterior = gp.update(posterior, X[row], y[row], value_of(p["noise"]))
        return gp.log_marginal_likelihood(posterior)

    def dense(p):
        covariance = p["kernel"].cross(X, X) + value_of(p["noise"]) * jnp.eye(15)
        residual = y - p["mean"](X)
        _, log_determinant = jnp.linalg.slogdet(covariance)
        quadratic = residual @ jnp.linalg.solve(covariance, residual)
        return -0.5 * quadratic - 0.5 * log_determinant - 7.5 * jnp.log(2 * jnp.pi)

    trainable, static = eqx.partition(params, eqx.is_inexact_array)

    def flat(function):
        return lambda leaves: function(eqx.combine(jax.tree.unflatten(jax.tree.structure(trainable), leaves), static))

    leaves = jax.tree.leaves(trainable)
    np.testing.assert_allclose(ours(params), dense(params), rtol=1e-12)
    # Compiled (`jax.jit`), not run op by op: the same derivatives to rounding, one compile each.
    for got, expected in zip(
        jax.jit(jax.grad(flat(ours)))(leaves), jax.jit(jax.grad(flat(dense)))(leaves), strict=True
    ):
        np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)
    hessian_got = jax.jit(jax.hessian(flat(ours)))(leaves)
    hessian_expected = jax.jit(jax.hessian(flat(dense)))(leaves)
    for got, expected in zip(jax.tree.leaves(hessian_got), jax.tree.leaves(hessian_expected), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_jit_traces_once_for_new_values(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def pipeline(kernel, mean, X, y, noise, X_new, x):
        posterior = gp.condition(kernel, mean, X, y, noise, capacity=X.shape[0] + 1)
        updated = gp.update(posterior, x, 0.3, 0.01)
        return (
            gp.predict(updated, X_new),
            gp.log_marginal_likelihood(updated),
            gp.lookahead_variance(posterior, X_new, x, 0.01),
        )

    for _ in range(3):
        kernel, mean, X, y, noise = make_problem(getkey())
        kernel = eqx.tree_at(lambda k: k.variance, kernel, Positive(jax.random.uniform(getkey()) + 0.5))
        pipeline(kernel, mean, X, y, noise, jax.random.normal(getkey(), (4, 2)), jax.random.normal(getkey(), (2,)))


def test_vmap_over_datasets_equals_loop(getkey):
    kernel, mean, _, _, _ = make_problem(getkey())
    problems = [make_problem(getkey()) for _ in range(4)]
    X = jnp.stack([p[2] for p in problems])
    y = jnp.stack([p[3] for p in problems])
    noise = jnp.stack([p[4] for p in problems])
    X_new = jax.random.normal(getkey(), (5, 2))

    def fit_and_predict(X, y, noise):
        posterior = gp.condition(kernel, mean, X, y, noise)
        return gp.log_marginal_likelihood(posterior), gp.predict(posterior, X_new)

    batched = jax.vmap(fit_and_predict)(X, y, noise)
    for index in range(4):
        single = fit_and_predict(X[index], y[index], noise[index])
        np.testing.assert_allclose(batched[0][index], single[0], rtol=1e-12)
        np.testing.assert_allclose(batched[1][0][index], single[1][0], atol=1e-12)
        np.testing.assert_allclose(batched[1][1][index], single[1][1], atol=1e-12)


def test_float32_runs_without_nan(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    kernel32 = kernels.SquaredExponential(lengthscale=jnp.float32(1.0), variance=jnp.float32(1.0))
    mean32 = means.Constant(jnp.float32(0.0))
    X32, y32 = X.astype(jnp.float32), y.astype(jnp.float32)
    posterior = gp.condition(kernel32, mean32, X32, y32, jnp.float32(0.05), capacity=X.shape[0] + 1)
    posterior = gp.update(posterior, X32[0] + 0.5, y32[0], jnp.float32(0.05))
    mean_pred, variance = gp.predict(posterior, X32[:5])
    lml = gp.log_marginal_likelihood(posterior)
    for value in (mean_pred, variance, lml):
        assert value.dtype == jnp.float32
        assert np.all(np.isfinite(value))


def test_shape_errors_name_the_argument(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    with pytest.raises(ValueError, match="`y`.*shape"):
        gp.condition(kernel, mean, X, y[:-1], noise)
    with pytest.raises(ValueError, match="`noise_variance`"):
        gp.condition(kernel, mean, X, y, noise[:-1])
    with pytest.raises(ValueError, match="`X`"):
        gp.condition(kernel, mean, X[:, 0], y, noise)
    posterior = gp.condition(kernel, mean, X, y, noise)
    with pytest.raises(ValueError, match="`X_new`"):
        gp.predict(posterior, jnp.zeros((3, 5)))
    with pytest.raises(ValueError, match="`kernel`"):
        gp.condition(mean, mean, X, y, noise)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data_is_rejected(getkey, bad):
    kernel, mean, X, y, noise = make_problem(getkey())
    with pytest.raises(Exception, match="`X` contains NaN"):
        gp.condition(kernel, mean, X.at[3, 1].set(bad), y, noise)
    with pytest.raises(Exception, match="`y` contains NaN"):
        gp.condition(kernel, mean, X, y.at[0].set(bad), noise)
    with pytest.raises(Exception, match="gp.condition: `noise_variance` must be finite and ≥ 0"):
        gp.condition(kernel, mean, X, y, noise.at[0].set(-1.0))


class _NegatedKernel(kernels.AbstractKernel):
    """An invalid (negative-definite) covariance, to provoke a failed factorisation."""

    inner: kernels.AbstractKernel

    def evaluate(self, x1, x2):
        return -self.inner.evaluate(x1, x2)


def test_non_positive_definite_gram_gives_a_flag_not_nan(getkey):
    _, mean, X, y, _ = make_problem(getkey())
    posterior = gp.condition(_NegatedKernel(kernels.SquaredExponential()), mean, X, y, 1e-3)
    assert posterior.result == RESULTS.cholesky_failed
    assert np.all(np.isfinite(posterior.factor.lower))
    assert np.isfinite(gp.log_marginal_likelihood(posterior))
    assert np.all(np.isfinite(np.asarray(gp.predict(posterior, X[:3]))))


def test_duplicate_inputs_escalate_jitter_and_succeed(getkey):
    kernel, mean, X, y, _ = make_problem(getkey(), num_points=10)
    X = jnp.concatenate([X, X])
    y = jnp.concatenate([y, y])
    posterior = gp.condition(kernel, mean, X, y, 1e-300)
    assert posterior.result == RESULTS.successful
    assert posterior.factor.jitter > 0
    assert np.all(np.isfinite(np.asarray(gp.predict(posterior, X[:3]))))


def test_vmap_of_update_and_lookahead_over_candidates_equals_loop(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    posterior = gp.condition(kernel, mean, X, y, noise, capacity=X.shape[0] + 1)
    candidates = jax.random.normal(getkey(), (4, 2))
    X_query = jax.random.normal(getkey(), (5, 2))

    def appended_likelihood(x):
        return gp.log_marginal_likelihood(gp.update(posterior, x, 0.5, 0.02))

    def lookahead(x):
        return gp.lookahead_variance(posterior, X_query, x, 0.02)

    np.testing.assert_allclose(
        jax.vmap(appended_likelihood)(candidates), [appended_likelihood(x) for x in candidates], rtol=1e-12
    )
    np.testing.assert_allclose(
        jax.vmap(lookahead)(candidates), np.stack([lookahead(x) for x in candidates]), atol=1e-14
    )
