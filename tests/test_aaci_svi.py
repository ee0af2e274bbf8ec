"""Sparse natural-gradient SVI, hyperparameter learning, predictions, `fit` and the transform matrix."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import integrate, special, stats

import gpcompose
from gpcompose.aaci import CAVI, SVI
from gpcompose.likelihoods import Gaussian, Laplace, Logistic, StudentT

from .helpers import autodiff_gradient, finite_difference_gradient

KERNEL = gpcompose.kernels.SquaredExponential(lengthscale=0.8, variance=1.5)
MEAN = gpcompose.means.Constant(0.4)
X = jnp.linspace(-2.0, 2.0, 10)[:, None]
Y_REGRESSION = jnp.sin(2 * X[:, 0]) + jnp.array([0.1, -0.3, 0.2, 1.5, 0.0, -0.1, 0.3, -2.0, 0.1, 0.2])
Y_CLASSES = jnp.array([-1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0])
Z = X[::3]


def test_svi_with_inducing_equal_to_data_full_batch_unit_step_is_cavi(getkey):
    cavi = CAVI(KERNEL, StudentT(), MEAN)
    svi = SVI(KERNEL, StudentT(), MEAN, step_size=1.0)
    cavi_state, _ = gpcompose.run(cavi, cavi.init(X), getkey(), 4, X, Y_REGRESSION)
    svi_state, _ = gpcompose.run(svi, svi.init(X), getkey(), 4, X, Y_REGRESSION)
    # equal to rounding, relative to each parameter's largest entry (the precision's entries span
    # 2.3 down to 5e-7; rounding of the large ones leaves ~4e-15 on the small ones)
    for svi_parameter, cavi_parameter in [
        (svi_state.variational.linear, cavi_state.variational.linear),
        (svi_state.variational.quadratic, cavi_state.variational.quadratic),
    ]:
        scale = float(np.max(np.abs(cavi_parameter)))
        np.testing.assert_allclose(svi_parameter, cavi_parameter, rtol=0.0, atol=1e-12 * scale)


def _dense_sparse_elbo(state, likelihood, X, y):
    """The sparse augmented ELBO in the document's unwhitened form (A.4.4) with the Titsias term and a
    non-zero prior mean (Galy-Fajou, Wenzel & Opper 2020, §3.2, with the prior mean kept), by explicit inverses."""
    Zs = np.asarray(state.inducing_inputs)
    K_z = np.asarray(KERNEL.gram(Zs))
    K_xz = np.asarray(KERNEL.cross(X, Zs))
    L = np.linalg.cholesky(K_z)
    precision = -2 * np.asarray(state.variational.quadratic)
    S_v = np.linalg.inv(precision)
    m_v = S_v @ np.asarray(state.variational.linear)
    mu_z, mu_x = 0.4 * np.ones(len(Zs)), 0.4 * np.ones(len(X))
    m_u, S_u = mu_z + L @ m_v, L @ S_v @ L.T
    kappa = K_xz @ np.linalg.inv(K_z)
    mean_f = mu_x + kappa @ (m_u - mu_z)
    variance_f = np.diag(np.asarray(KERNEL.gram(X))) - np.sum(kappa * K_xz, 1) + np.sum(kappa @ S_u * kappa, 1)
    a0, a1 = likelihood.affine_coefficients(jnp.asarray(y))
    c2 = (np.asarray(a0) + np.asarray(a1) * mean_f) ** 2 + np.asarray(a1) ** 2 * variance_f
    data = np.sum(
        likelihood.log_normalizer()
        + likelihood.linear_coefficient(jnp.asarray(y)) * mean_f
        + likelihood.log_phi(jnp.asarray(c2))
    )
    K_inverse = np.linalg.inv(K_z)
    kl = 0.5 * (
        np.trace(K_inverse @ S_u)
        + (m_u - mu_z) @ K_inverse @ (m_u - mu_z)
        - len(Zs)
        + np.linalg.slogdet(K_z)[1]
        - np.linalg.slogdet(S_u)[1]
    )
    return data - kl


def test_sparse_full_batch_fixed_point_and_dense_elbo(getkey):
    likelihood = Laplace(scale=0.5)
    svi = SVI(KERNEL, likelihood, MEAN, step_size=1.0)
    state, infos = gpcompose.run(svi, svi.init(Z), getkey(), 30, X, Y_REGRESSION)
    assert np.all(np.diff(infos.elbo) >= -1e-10 * np.abs(infos.elbo[1:]))  # full batch, ρ = 1: CAVI on q(u)
    np.testing.assert_allclose(infos.elbo[-1], _dense_sparse_elbo(state, likelihood, X, Y_REGRESSION), rtol=1e-9)

    def elbo_of(variational):
        return gpcompose.aaci.augmented_elbo(eqx.tree_at(lambda s: s.variational, state, variational), X, Y_REGRESSION)

    gradient = jax.grad(elbo_of)(state.variational)
    assert np.max(np.abs(gradient.linear)) < 1e-7
    assert np.max(np.abs(gradient.quadratic + gradient.quadratic.T)) < 1e-7


def test_minibatch_targets_are_unbiased_and_vmap_over_seeds_matches_loop(getkey):
    likelihood = Logistic()
    full = SVI(KERNEL, likelihood, MEAN, step_size=1.0)
    batched = SVI(KERNEL, likelihood, MEAN, batch_size=4, step_size=1.0)
    start, _ = gpcompose.run(full, full.init(Z), getkey(), 1, X, Y_CLASSES)  # a non-prior q
    full_target, _ = gpcompose.run(full, start, getkey(), 1, X, Y_CLASSES)
    keys = jax.random.split(getkey(), 500)
    step = eqx.filter_jit(eqx.filter_vmap(batched.step, in_axes=(None, 0, None, None)))
    targets, infos = step(start, keys, X, Y_CLASSES)
    estimates = targets.variational.linear
    standard_error = estimates.std(0) / np.sqrt(len(keys))
    assert np.all(np.abs(estimates.mean(0) - full_target.variational.linear) < 4 * standard_error + 1e-12)
    quadratic = targets.variational.quadratic
    quadratic_error = quadratic.std(0) / np.sqrt(len(keys))
    assert np.all(np.abs(quadratic.mean(0) - full_target.variational.quadratic) < 4 * quadratic_error + 1e-12)
    # vmap over seeds equals a loop over seeds (the same jitted program on batches of size 1)
    for index in [0, 1]:
        single, info = step(start, keys[index : index + 1], X, Y_CLASSES)
        np.testing.assert_allclose(targets.variational.linear[index], single.variational.linear[0], rtol=1e-12)
        np.testing.assert_allclose(infos.elbo[index], info.elbo[0], rtol=1e-12)


def test_svi_step_compiles_once_and_float32_runs(getkey):
    svi = SVI(KERNEL, Logistic(), MEAN, optimizer=optax.adam(0.01), batch_size=4)
    step = eqx.filter_jit(eqx.debug.assert_max_traces(svi.step, max_traces=1))
    state = svi.init(Z)
    for _ in range(3):
        state, info = step(state, getkey(), X, Y_CLASSES)
    assert int(state.num_steps) == 3 and np.isfinite(info.elbo)
    single = jnp.float32
    kernel32 = gpcompose.kernels.SquaredExponential(single(0.8), single(1.5))
    svi32 = SVI(kernel32, Logistic(), gpcompose.means.Constant(single(0.4)), optimizer=optax.adam(0.01), batch_size=4)
    _, info32 = gpcompose.run(
        svi32, svi32.init(Z.astype(single)), getkey(), 5, X.astype(single), Y_CLASSES.astype(single)
    )
    assert info32.elbo.dtype == jnp.float32 and np.all(np.isfinite(info32.elbo))
    cavi = CAVI(kernel32, StudentT(single(3.0), single(1.0)), gpcompose.means.Constant(single(0.0)))
    _, cavi32 = gpcompose.run(
        cavi, cavi.init(X.astype(jnp.float32)), getkey(), 3, X.astype(jnp.float32), Y_REGRESSION.astype(jnp.float32)
    )
    assert cavi32.elbo.dtype == jnp.float32 and np.all(np.isfinite(cavi32.elbo))


def test_augmented_elbo_gradient_matches_finite_differences(getkey):
    svi = SVI(KERNEL, StudentT(degrees_of_freedom=4.0, scale=0.5), MEAN, step_size=1.0)
    state, _ = gpcompose.run(svi, svi.init(Z), getkey(), 3, X, Y_REGRESSION)
    model = (state.kernel, state.likelihood, state.mean)
    trainable, rest = gpcompose.parameters.partition(model)

    def elbo(trainable):
        kernel, likelihood, mean = eqx.combine(trainable, rest)
        return gpcompose.aaci.augmented_elbo(
            eqx.tree_at(lambda s: (s.kernel, s.likelihood, s.mean), state, (kernel, likelihood, mean)), X, Y_REGRESSION
        )

    np.testing.assert_allclose(
        autodiff_gradient(elbo, trainable), finite_difference_gradient(elbo, trainable), rtol=1e-6, atol=1e-8
    )


def test_hyperparameter_learning_climbs_the_log_marginal_likelihood(getkey):
    # Gaussian likelihood, Z = X, ρ = 1: q is exact after each step, so the optax steps on L_aug climb the log
    # marginal likelihood (envelope theorem), and the reported ELBO is the log marginal likelihood.
    likelihood = Gaussian(variance=0.2)
    svi = SVI(
        gpcompose.kernels.SquaredExponential(2.0, 0.5), likelihood, MEAN, optimizer=optax.adam(0.05), step_size=1.0
    )
    state, infos = gpcompose.run(svi, svi.init(X), getkey(), 300, X, Y_REGRESSION)

    def lml(model):
        kernel, likelihood, mean = model
        return gpcompose.gp.log_marginal_likelihood(
            gpcompose.gp.condition(kernel, mean, X, Y_REGRESSION, likelihood.variance)
        )

    start = (gpcompose.kernels.SquaredExponential(2.0, 0.5), likelihood, MEAN)
    final = (state.kernel, state.likelihood, state.mean)
    assert lml(final) > lml(start) + 1.0
    exact_step = SVI(state.kernel, state.likelihood, state.mean, step_size=1.0)
    _, info = gpcompose.run(exact_step, state, getkey(), 1, X, Y_REGRESSION)
    np.testing.assert_allclose(info.elbo[0], lml(final), rtol=1e-10)


def test_fit_predictions_against_quadrature(getkey):
    result = gpcompose.aaci.fit(X, Y_CLASSES, key=getkey(), likelihood=Logistic(), kernel=KERNEL, num_steps=20)
    X_new = jnp.array([[0.1], [1.7]])
    mean, variance = result.predict(X_new)
    probability = result.class_probability(X_new)
    for i in range(2):
        reference, _ = integrate.quad(
            lambda f: special.expit(f) * stats.norm.pdf(f, mean[i], np.sqrt(variance[i])), -30, 30
        )
        np.testing.assert_allclose(probability[i], reference, rtol=1e-9)
    assert result.elbo.shape == (20,)
    sparse = gpcompose.aaci.fit(
        X,
        Y_REGRESSION,
        key=getkey(),
        likelihood=Laplace(scale=0.5),
        kernel=KERNEL,
        inducing_points=4,
        batch_size=5,
        num_steps=30,
    )
    mean, variance = sparse.predict(X_new)
    y_mean, y_variance = sparse.predict_y(X_new)
    np.testing.assert_allclose(y_mean, mean)
    np.testing.assert_allclose(y_variance, variance + 2 * 0.5**2, rtol=1e-12)
    y_new = jnp.array([0.3, -0.2])
    log_density = sparse.log_predictive_density(X_new, y_new)
    for i in range(2):
        reference, _ = integrate.quad(
            lambda f: stats.laplace.pdf(float(y_new[i]), f, 0.5) * stats.norm.pdf(f, mean[i], np.sqrt(variance[i])),
            -30,
            30,
            points=[float(y_new[i])],
        )
        np.testing.assert_allclose(log_density[i], np.log(reference), rtol=1e-8)


def test_bad_input_raises(getkey):
    with pytest.raises(ValueError, match="class labels"):
        gpcompose.aaci.fit(X, 2 * Y_CLASSES, key=getkey(), likelihood=Logistic(), kernel=KERNEL)
    with pytest.raises(ValueError, match="likelihood"):
        CAVI(KERNEL, object())
    with pytest.raises(ValueError, match="batch_size"):
        SVI(KERNEL, Logistic(), batch_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        SVI(KERNEL, Logistic(), batch_size=20).step(SVI(KERNEL, Logistic()).init(Z), getkey(), X, Y_CLASSES)
    with pytest.raises(ValueError, match="`y`"):
        CAVI(KERNEL, Logistic()).step(CAVI(KERNEL, Logistic()).init(X), getkey(), X, Y_CLASSES[:5])
    with pytest.raises(ValueError, match="Bayesian SVM"):
        fitted = gpcompose.aaci.fit(
            X, Y_CLASSES, key=getkey(), likelihood=gpcompose.likelihoods.BayesianSVM(), kernel=KERNEL, num_steps=2
        )
        fitted.class_probability(X)
