"""Result codes per member of a `vmap`ped batch (docs: numerics.md, "Result codes").

A batch of 8 GP problems holds one singular member (duplicate inputs with different targets
and a noise variance of 1e-300) and one noise-free member (noise variance 0). Conditioning,
prediction, the log marginal likelihood and an ML-II fit with `gpcompose.maximize` run on the
whole batch: the other 6 members equal their single runs, the two bad ones report their own
codes, and every fitted parameter satisfies its constraint. Then one single-run test per code.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose import RESULTS, gp, kernels, means
from gpcompose._linalg import JITTER_LEVEL, cholesky
from gpcompose.gp._posterior import FIT_CHANGE_LEVEL
from gpcompose.parameters import Interval, Positive, Real, satisfies_constraints

BATCH, NUM_POINTS, DIMENSION = 8, 10, 2
SINGULAR, NOISE_FREE = 2, 5
GOOD = [member for member in range(BATCH) if member not in (SINGULAR, NOISE_FREE)]
KERNEL = kernels.SquaredExponential(lengthscale=jnp.array([0.9, 1.4]), variance=1.3)
X_NEW = jnp.array([[0.1, 0.2], [1.0, -1.0], [-1.5, 0.5]])


def _batch():
    """(X, y, noise variance) of the 8 members: member 2 repeats its first 5 inputs with
    targets shifted by 1, member 5 has noise variance 0."""
    input_key, target_key = jax.random.split(jax.random.key(0))
    X = jax.random.uniform(input_key, (BATCH, NUM_POINTS, DIMENSION), minval=-2.0, maxval=2.0)
    X = X.at[SINGULAR, 5:].set(X[SINGULAR, :5])
    y = jnp.sin(X[..., 0]) + 0.3 * X[..., 1] + 0.05 * jax.random.normal(target_key, (BATCH, NUM_POINTS))
    y = y.at[SINGULAR, 5:].add(1.0)
    noise = jnp.full((BATCH,), 1e-2).at[SINGULAR].set(1e-300).at[NOISE_FREE].set(0.0)
    return X, y, noise


@jax.jit
def _condition_predict_lml(X, y, noise):
    posterior = gp.condition(KERNEL, means.Zero(), X, y, noise)
    mean, variance = gp.predict(posterior, X_NEW)
    return posterior.result, mean, variance, gp.log_marginal_likelihood(posterior)


def _log_marginal_likelihood(kernel, data):
    X, y, noise = data
    return gp.log_marginal_likelihood(gp.condition(kernel, means.Zero(), X, y, noise))


@jax.jit
def _fit(X, y, noise):
    start = kernels.SquaredExponential(lengthscale=Positive(jnp.ones(DIMENSION)), variance=Positive(1.0))
    fit = gpcompose.maximize(_log_marginal_likelihood, start, (X, y, noise), max_steps=60)
    refit = gp.condition(fit.params, means.Zero(), X, y, noise)
    return fit, refit.result, satisfies_constraints(fit.params)


def _member(tree, index):
    return jax.tree_util.tree_map(lambda leaf: leaf[index], tree)


def test_a_batch_with_a_singular_and_a_noise_free_member_flags_only_those():
    X, y, noise = _batch()
    result, mean, variance, lml = jax.vmap(_condition_predict_lml)(X, y, noise)
    assert bool(jnp.all((result == RESULTS.successful)[jnp.array(GOOD)]))
    assert bool((result == RESULTS.jitter_changed_fit)[SINGULAR])
    assert bool((result == RESULTS.zero_noise_variance)[NOISE_FREE])
    for array in (mean, variance, lml):
        assert np.all(np.isfinite(np.asarray(array)))  # the bad members' outputs too
    for member in range(BATCH):
        single_result, *single = _condition_predict_lml(X[member], y[member], noise[member])
        assert bool(single_result == _member(result, member))
        for batched, alone in zip((mean, variance, lml), single):
            np.testing.assert_allclose(batched[member], alone, rtol=1e-12, atol=1e-15)


def test_a_batch_of_ml2_fits_flags_the_bad_members_and_keeps_every_parameter_valid():
    X, y, noise = _batch()
    fit, refit_result, valid = jax.vmap(_fit)(X, y, noise)
    assert np.all(np.asarray(valid))
    for values in (fit.params.lengthscale.value, fit.params.variance.value):
        assert np.all(np.isfinite(np.asarray(values))) and np.all(np.asarray(values) > 0)
    assert np.all(np.isfinite(np.asarray(fit.value)))
    good = jnp.array(GOOD)
    assert bool(jnp.all((fit.result == RESULTS.successful)[good]))
    assert bool(jnp.all((refit_result == RESULTS.successful)[good]))
    # The singular member's objective is of order −1e10 and set by the jitter: BFGS makes no
    # progress and stops at `max_steps` (its own code), and the state refitted at the end says
    # why; the noise-free member's fit converges, and its state is flagged as noise-free.
    assert not bool((fit.result == RESULTS.successful)[SINGULAR])
    assert bool((refit_result == RESULTS.jitter_changed_fit)[SINGULAR])
    assert bool((refit_result == RESULTS.zero_noise_variance)[NOISE_FREE])
    # A batched program rounds differently from a single one, and BFGS may then stop one step
    # earlier or later (both within its rtol = atol = 1e-8 of the optimum): the maximum agrees
    # to rounding (it is flat to first order), the fitted parameters to the solver's tolerance.
    # The singular member's gradient is rounding: K + 1e-10·s·I has a condition number near
    # 1e11, and its computed gradient is off by 10³–10⁴ from a 60-digit reference where the
    # exact one is of order 1, so its path through 60 BFGS steps differs between any two
    # programs; only its codes are compared.
    for member in range(BATCH):
        single_fit, single_refit_result, _ = _fit(X[member], y[member], noise[member])
        batched = _member(fit, member)
        assert bool(single_fit.result == batched.result) and bool(single_refit_result == _member(refit_result, member))
        if member == SINGULAR:
            continue
        np.testing.assert_allclose(batched.value, single_fit.value, rtol=1e-10)
        for name in ("lengthscale", "variance"):
            np.testing.assert_allclose(
                getattr(batched.params, name).value, getattr(single_fit.params, name).value, rtol=1e-6
            )


def _slightly_indefinite(relative_eigenvalue, size=5, seed=3):
    """A symmetric matrix with eigenvalues (2, 1.5, 1, 0.5, e·s), s its mean diagonal and
    e = `relative_eigenvalue` < 0: the first jitter of the policy above −e·s factorises it."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(size, size)))
    eigenvalues = np.array([2.0, 1.5, 1.0, 0.5, 0.0])
    eigenvalues[-1] = relative_eigenvalue * np.sum(eigenvalues) / size
    A = Q @ np.diag(eigenvalues) @ Q.T
    return jnp.asarray(0.5 * (A + A.T))


def test_a_jitter_above_the_level_is_flagged_and_one_at_the_level_is_not():
    for relative_eigenvalue, expected_jitter, expected in (
        (-3e-7, JITTER_LEVEL, RESULTS.successful),
        (-3e-6, 10 * JITTER_LEVEL, RESULTS.jitter_above_level),
    ):
        A = _slightly_indefinite(relative_eigenvalue)
        scale = float(jnp.mean(jnp.abs(jnp.diag(A))))
        factor = cholesky(A)
        assert factor.result == expected
        assert bool(factor.succeeded)  # a true factor of A + jitter·I either way
        np.testing.assert_allclose(float(factor.jitter), expected_jitter * scale, rtol=1e-12)
        lower = np.asarray(factor.lower)
        np.testing.assert_allclose(lower @ lower.T, A + float(factor.jitter) * np.eye(5), atol=1e-13)


class _ShiftedKernel(kernels.AbstractKernel):
    """k(x, x′) − shift · [x = x′]: a covariance made slightly indefinite, so that its Gram
    needs a jitter of about `shift`."""

    inner: kernels.AbstractKernel
    shift: float = eqx.field(static=True)

    def evaluate(self, x1, x2):
        value = self.inner.evaluate(x1, x2)
        return value - jnp.where(jnp.all(x1 == x2), self.shift, 0.0).astype(value.dtype)


def test_a_posterior_reports_the_jitter_above_the_level_of_its_factor():
    X = jnp.linspace(-1.0, 1.0, 8)[:, None]  # close points: K has eigenvalues far below 1e-5
    y = jnp.sin(3 * X[:, 0])
    shifted = _ShiftedKernel(kernels.SquaredExponential(), 5e-6)
    posterior = gp.condition(shifted, means.Zero(), X, y, 1e-300)
    assert posterior.result == RESULTS.jitter_above_level
    assert float(posterior.factor.jitter) > JITTER_LEVEL
    assert np.all(np.isfinite(np.asarray(gp.predict(posterior, X_NEW[:, :1]))))
    # The same data with the kernel itself need a jitter within the level.
    assert gp.condition(kernels.SquaredExponential(), means.Zero(), X, y, 1e-300).result == RESULTS.successful


def test_duplicate_inputs_with_different_targets_are_flagged_and_with_equal_targets_are_not():
    X = jax.random.uniform(jax.random.key(1), (6, 2), minval=-2.0, maxval=2.0)
    X = jnp.concatenate([X, X[:3]])
    y = jnp.sin(X[:, 0]) + X[:, 1]
    consistent = gp.condition(KERNEL, means.Zero(), X, y, 1e-300)
    assert consistent.result == RESULTS.successful and float(consistent.factor.jitter) > 0
    inconsistent = gp.condition(KERNEL, means.Zero(), X, y.at[-1].add(0.5), 1e-300)
    assert inconsistent.result == RESULTS.jitter_changed_fit
    assert float(inconsistent.factor.jitter) == float(consistent.factor.jitter)
    assert 0.5 * float(inconsistent.factor.jitter) * float(jnp.sum(inconsistent.weights**2)) > FIT_CHANGE_LEVEL
    # A rank-1 update that appends a contradicting duplicate is flagged as well.
    buffered = gp.condition(KERNEL, means.Zero(), X, y, 1e-300, capacity=10)
    assert gp.update(buffered, X[0], y[0], 1e-300).result == RESULTS.successful
    assert gp.update(buffered, X[0], y[0] + 0.5, 1e-300).result == RESULTS.jitter_changed_fit


def test_the_fit_change_is_a_lower_bound_of_the_jitter_s_change_of_the_data_fit_term():
    """Q(0) − Q(j) ≥ j‖(A + jI)⁻¹r‖² for Q(j) = rᵀ(A + jI)⁻¹r, by dense solves on a
    nearly singular A, for jitters around its smallest eigenvalue."""
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    A = Q @ np.diag([3.0, 1.0, 0.3, 1e-2, 1e-5, 1e-8]) @ Q.T
    r = rng.normal(size=6)
    quadratic_form = lambda jitter: r @ np.linalg.solve(A + jitter * np.eye(6), r)  # noqa: E731
    for jitter in (1e-10, 1e-8, 1e-6, 1e-3):
        weights = np.linalg.solve(A + jitter * np.eye(6), r)
        bound = jitter * weights @ weights
        change = quadratic_form(0.0) - quadratic_form(jitter)
        assert change >= bound * (1 - 1e-9), (jitter, change, bound)


def test_a_noise_free_gp_interpolates_and_is_flagged():
    X = jax.random.uniform(jax.random.key(2), (6, 2), minval=-2.0, maxval=2.0)
    y = jnp.sin(X[:, 0]) + X[:, 1]
    posterior = gp.condition(KERNEL, means.Zero(), X, y, 0.0)
    assert posterior.result == RESULTS.zero_noise_variance
    assert float(posterior.factor.jitter) == 0.0  # well-spread inputs: K itself factorises
    K = np.asarray(KERNEL.gram(X))
    cross = np.asarray(KERNEL.cross(X, X_NEW))
    mean, variance = gp.predict(posterior, X_NEW)
    np.testing.assert_allclose(mean, cross.T @ np.linalg.solve(K, np.asarray(y)), rtol=1e-9)
    np.testing.assert_allclose(variance, 1.3 - np.sum(cross * np.linalg.solve(K, cross), axis=0), atol=1e-9)
    at_data_mean, at_data_variance = gp.predict(posterior, X)
    np.testing.assert_allclose(at_data_mean, y, atol=1e-9)
    np.testing.assert_allclose(at_data_variance, 0.0, atol=1e-9)
    # One noise-free row among noisy ones, and a noise-free rank-1 update, are flagged too.
    one_noise_free_row = gp.condition(KERNEL, means.Zero(), X, y, jnp.full(6, 1e-2).at[3].set(0.0))
    assert one_noise_free_row.result == RESULTS.zero_noise_variance
    noisy = gp.condition(KERNEL, means.Zero(), X, y, 1e-2, capacity=7)
    assert noisy.result == RESULTS.successful
    assert gp.update(noisy, jnp.array([0.3, -0.4]), 0.1, 0.0).result == RESULTS.zero_noise_variance
    with pytest.raises(Exception, match="gp.update: `noise_variance` must be finite and ≥ 0"):
        gp.update(noisy, jnp.array([0.3, -0.4]), 0.1, -1e-3)


def test_parameters_outside_their_constraints_are_detected():
    nan = jnp.asarray(jnp.nan)
    assert bool(satisfies_constraints({"a": Positive(1.0), "b": Interval(0.5, upper=1.0), "c": Real(-3.0)}))
    floor = eqx.tree_at(lambda p: p.unconstrained, Positive(1.0), jnp.asarray(-1e4))
    assert float(floor.value) > 0 and bool(satisfies_constraints(floor))
    for broken in (
        eqx.tree_at(lambda p: p.unconstrained, Positive(1.0), nan),
        eqx.tree_at(lambda p: p.unconstrained, Interval(0.5, upper=1.0), nan),
        eqx.tree_at(lambda p: p.unconstrained, Real(1.0), jnp.asarray(jnp.inf)),
    ):
        assert not bool(satisfies_constraints({"ok": Positive(1.0), "broken": broken}))


def test_a_fit_that_ends_outside_a_constraint_returns_the_start_and_says_so():
    # An objective that maps NaN to 0 lets a NaN coordinate through; the start has one, so
    # the solver ends with NaN parameters at a finite objective.
    start = {"a": eqx.tree_at(lambda p: p.unconstrained, Positive(1.0), jnp.asarray(jnp.nan)), "b": Positive(2.0)}
    fit = gpcompose.maximize(lambda p, _: jnp.nan_to_num(-((p["a"].value - p["b"].value) ** 2)), start, max_steps=5)
    assert fit.result == RESULTS.constraint_violated
    assert float(fit.params["b"].value) == 2.0 and np.isnan(float(fit.params["a"].unconstrained))
    assert float(fit.value) == 0.0
