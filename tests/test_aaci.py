"""AACI CAVI and SVI against dense, independently coded references (Galy-Fajou, Wenzel & Opper 2020)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special

import gpcompose
from gpcompose.aaci import CAVI, NaturalGaussian
from gpcompose.likelihoods import Gaussian, Laplace, Logistic, Matern32Likelihood, StudentT

from .helpers import autodiff_gradient, dense_exact_posterior, dense_grid_posterior


def _data(key, num_points, classification):
    X = jnp.linspace(-2.0, 2.0, num_points)[:, None]
    f = jnp.sin(2 * X[:, 0])
    if classification:
        return X, jnp.where(f + 0.5 * jax.random.normal(key, (num_points,)) > 0, 1.0, -1.0)
    return X, f + 0.3 * jax.random.t(key, 2.0, (num_points,))


KERNEL = gpcompose.kernels.SquaredExponential(lengthscale=0.8, variance=1.5)
MEAN = gpcompose.means.Constant(0.4)


def _dense_alg1(likelihood_name, K, prior_mean, y, num_steps):
    """Algorithm 1 with explicit inverses and the table's α, β, γ and closed-form ω̄ (numpy)."""
    nu, sigma, b, rho = 3.0, 0.7, 0.8, 1.3
    if likelihood_name == "logistic":
        g, alpha, beta, gamma = y / 2, 0 * y, 0 * y, np.ones_like(y)
        mean_omega = lambda c2: np.tanh(np.sqrt(c2) / 2) / (4 * np.sqrt(c2))
    elif likelihood_name == "student":
        g, alpha, beta, gamma = 0 * y, y**2 / sigma**2, 2 * y / sigma**2, np.ones_like(y) / sigma**2
        mean_omega = lambda c2: (nu + 1) / (2 * (nu + c2))
    elif likelihood_name == "laplace":
        g, alpha, beta, gamma = 0 * y, y**2, 2 * y, np.ones_like(y)
        mean_omega = lambda c2: 1 / (2 * b * np.sqrt(c2))
    else:
        g, alpha, beta, gamma = 0 * y, y**2, 2 * y, np.ones_like(y)
        mean_omega = lambda c2: 3 / (2 * rho * (rho + np.sqrt(3 * c2)))
    K_inverse = np.linalg.inv(K)
    m, S = prior_mean.copy(), K.copy()
    for _ in range(num_steps):
        c2 = alpha - beta * m + gamma * (m**2 + np.diag(S))
        omega = mean_omega(c2)
        S = np.linalg.inv(K_inverse + np.diag(2 * omega * gamma))
        m = S @ (K_inverse @ prior_mean + g + omega * beta)
    return m, S


LIKELIHOODS = {
    "logistic": Logistic(),
    "student": StudentT(degrees_of_freedom=3.0, scale=0.7),
    "laplace": Laplace(scale=0.8),
    "matern": Matern32Likelihood(scale=1.3),
}


@pytest.mark.parametrize("name", list(LIKELIHOODS))
def test_cavi_matches_dense_algorithm_1_and_is_monotone(name, getkey):
    X, y = _data(getkey(), 8, name == "logistic")
    cavi = CAVI(KERNEL, LIKELIHOODS[name], MEAN)
    state, infos = gpcompose.run(cavi, cavi.init(X), getkey(), 6, X, y)
    K = np.asarray(KERNEL.gram(X))
    reference_mean, reference_covariance = _dense_alg1(name, K, np.full(8, 0.4), np.asarray(y), 6)
    mean, variance = gpcompose.aaci.predict(state, X)
    np.testing.assert_allclose(mean, reference_mean, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(variance, np.diag(reference_covariance), rtol=1e-6, atol=1e-8)
    # the augmented ELBO never decreases
    assert np.all(np.diff(infos.elbo) >= -1e-10 * np.abs(infos.elbo[1:]))


def test_cavi_fixed_point_is_stationary_in_q(getkey):
    X, y = _data(getkey(), 8, True)
    cavi = CAVI(KERNEL, Logistic())
    state, _ = gpcompose.run(cavi, cavi.init(X), getkey(), 40, X, y)

    def elbo_of(variational):
        return gpcompose.aaci.augmented_elbo(eqx.tree_at(lambda s: s.variational, state, variational), X, y)

    gradient = jax.grad(elbo_of)(state.variational)
    assert np.max(np.abs(gradient.linear)) < 1e-8
    assert np.max(np.abs(gradient.quadratic + gradient.quadratic.T)) < 1e-8


def test_gaussian_likelihood_is_exact_in_one_step(getkey):
    X, y = _data(getkey(), 7, False)
    likelihood = Gaussian(variance=0.3)
    cavi = CAVI(KERNEL, likelihood, MEAN)
    state, infos = gpcompose.run(cavi, cavi.init(X), getkey(), 1, X, y)
    info = jax.tree.map(lambda leaf: leaf[0], infos)
    X_new = jnp.array([[-1.7], [0.2], [3.0]])
    mean, variance = gpcompose.aaci.predict(state, X_new)
    reference_mean, reference_covariance, log_marginal = dense_exact_posterior(
        KERNEL, MEAN, X, y, np.full(7, 0.3), X_new
    )
    np.testing.assert_allclose(mean, reference_mean, rtol=1e-9)
    np.testing.assert_allclose(variance, np.diag(reference_covariance), rtol=1e-8)
    # at the exact posterior both bounds equal the log marginal likelihood (zero augmentation gap)
    np.testing.assert_allclose(info.elbo, log_marginal, rtol=1e-10)
    np.testing.assert_allclose(gpcompose.aaci.standard_elbo(state, X, y), log_marginal, rtol=1e-10)

    # and (envelope theorem) the hyperparameter gradient of L_aug with q fixed is that of the LML
    def lml(kernel):
        return gpcompose.gp.log_marginal_likelihood(gpcompose.gp.condition(kernel, MEAN, X, y, 0.3))

    def elbo(kernel):
        return gpcompose.aaci.augmented_elbo(eqx.tree_at(lambda s: s.kernel, state, kernel), X, y)

    np.testing.assert_allclose(autodiff_gradient(elbo, KERNEL), autodiff_gradient(lml, KERNEL), rtol=1e-7)


@pytest.mark.parametrize(
    ("likelihood", "digest_gap"),
    [(StudentT(degrees_of_freedom=3.0), 0.110), (Laplace(), 0.206), (Matern32Likelihood(), 0.137), (Logistic(), None)],
)
def test_augmentation_gap_on_one_point(likelihood, digest_gap):
    # q(f) = N(0.3, 0.7) at one point with k(x, x) = 1, y = 1.1 (a hand-checked case)
    kernel = gpcompose.kernels.SquaredExponential(1.0, 1.0)
    cavi = CAVI(kernel, likelihood)
    X = jnp.zeros((1, 1))
    y = jnp.array([1.0 if isinstance(likelihood, Logistic) else 1.1])
    state = eqx.tree_at(
        lambda s: s.variational, cavi.init(X), NaturalGaussian(jnp.array([0.3 / 0.7]), jnp.array([[-0.5 / 0.7]]))
    )
    gap = gpcompose.aaci.standard_elbo(state, X, y) - gpcompose.aaci.augmented_elbo(state, X, y)
    target = float(y[0])
    a0, a1 = (0.0, 1.0) if isinstance(likelihood, Logistic) else (-target, 1.0)
    density = lambda f: np.exp(-((f - 0.3) ** 2) / 1.4) / np.sqrt(1.4 * np.pi)
    expected_log_phi, _ = integrate.quad(
        lambda f: density(f) * float(likelihood.log_phi((a0 + a1 * f) ** 2)), -12, 12, points=[target], limit=200
    )
    reference = expected_log_phi - float(likelihood.log_phi((a0 + a1 * 0.3) ** 2 + a1**2 * 0.7))
    assert gap > 0
    np.testing.assert_allclose(gap, reference, rtol=1e-8)
    # the digest's three-digit values; its logistic value 0.0096 is twice the quadrature value 0.00475
    if digest_gap is not None:
        np.testing.assert_allclose(gap, digest_gap, atol=1e-3)


def test_logistic_cavi_against_two_dimensional_quadrature(getkey):
    # N = 2: the exact posterior moments and log evidence by a dense grid over (f₁, f₂)
    X = jnp.array([[-0.3], [0.5]])
    y = jnp.array([1.0, -1.0])
    cavi = CAVI(KERNEL, Logistic())
    state, _ = gpcompose.run(cavi, cavi.init(X), getkey(), 40, X, y)
    K = np.asarray(KERNEL.gram(X))
    posterior_mean, posterior_variance, log_evidence = dense_grid_posterior(
        K, lambda f: special.log_expit(f * np.asarray(y))
    )
    mean, variance = gpcompose.aaci.predict(state, X)
    # bounds: L_aug ≤ L_std ≤ log p(y); the Gaussian approximation is close on this easy problem
    assert gpcompose.aaci.augmented_elbo(state, X, y) <= gpcompose.aaci.standard_elbo(state, X, y) <= log_evidence
    assert log_evidence - gpcompose.aaci.augmented_elbo(state, X, y) < 0.02
    np.testing.assert_allclose(mean, posterior_mean, atol=0.05 * np.sqrt(posterior_variance).max())
    np.testing.assert_allclose(variance, posterior_variance, rtol=0.1)
