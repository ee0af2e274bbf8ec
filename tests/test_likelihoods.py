import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

import gpcompose


def test_gaussian_log_prob_matches_scipy():
    likelihood = gpcompose.likelihoods.Gaussian(variance=0.3)
    y = jnp.array([1.0, 2.0, -0.4])
    f = jnp.array([0.5, 0.1, -0.3])
    expected = stats.norm.logpdf(np.asarray(y), np.asarray(f), np.sqrt(0.3))
    np.testing.assert_allclose(likelihood.log_prob(y, f), expected, rtol=1e-12)


def gaussian_integral(function, mean, variance):
    """∫ function(f) N(f; m, v) df by adaptive quadrature (scipy), the brute-force reference."""
    sd = np.sqrt(variance)
    value, _ = integrate.quad(lambda f: function(f) * stats.norm.pdf(f, mean, sd), mean - 12 * sd, mean + 12 * sd)
    return value


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_bernoulli_log_prob_matches_scipy_and_stays_finite(link):
    likelihood = gpcompose.likelihoods.Bernoulli(link=link)
    f = np.array([-40.0, -3.0, -0.2, 0.0, 1.5, 40.0])
    for label in (0.0, 1.0):
        y = np.full_like(f, label)
        sign = 2 * label - 1
        expected = special.log_ndtr(sign * f) if link == "probit" else -np.logaddexp(0.0, -sign * f)
        value = likelihood.log_prob(jnp.asarray(y), jnp.asarray(f))
        np.testing.assert_allclose(value, expected, rtol=1e-12)
    probability_one = np.exp(likelihood.log_prob(jnp.ones(6), jnp.asarray(f)))
    probability_zero = np.exp(likelihood.log_prob(jnp.zeros(6), jnp.asarray(f)))
    np.testing.assert_allclose(probability_one + probability_zero, 1.0, rtol=1e-12)


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_bernoulli_gaussian_expectations_match_adaptive_quadrature(link):
    likelihood = gpcompose.likelihoods.Bernoulli(link=link)
    mean = np.array([-1.3, 0.4, 2.0])
    variance = np.array([0.5, 2.0, 0.1])
    y = np.array([1.0, 0.0, 1.0])
    expected_log = [
        gaussian_integral(lambda f, s=2 * label - 1: float(likelihood.log_prob(label, jnp.asarray(f))), m, v)
        for label, m, v in zip(y, mean, variance)
    ]
    predictive = [
        np.log(
            gaussian_integral(
                lambda f, s=2 * label - 1: float(np.exp(likelihood.log_prob(label, jnp.asarray(f)))), m, v
            )
        )
        for label, m, v in zip(y, mean, variance)
    ]
    args = (jnp.asarray(y), jnp.asarray(mean), jnp.asarray(variance))
    np.testing.assert_allclose(likelihood.expected_log_prob(*args), expected_log, rtol=1e-6)
    # 20-node Gauss–Hermite on the smooth logit link is accurate to about 1e-7 at v = 2
    np.testing.assert_allclose(likelihood.log_predictive_density(*args), predictive, rtol=1e-6)
    probability, variance_y = likelihood.predictive_moments(jnp.asarray(mean), jnp.asarray(variance))
    np.testing.assert_allclose(probability, np.exp(likelihood.log_predictive_density(jnp.ones(3), *args[1:])))
    np.testing.assert_allclose(variance_y, probability * (1 - probability), rtol=1e-12)


def test_gaussian_closed_forms_equal_the_quadrature_defaults():
    likelihood = gpcompose.likelihoods.Gaussian(variance=0.3)
    y, mean, variance = jnp.array([1.0, -0.5]), jnp.array([0.2, 0.1]), jnp.array([0.4, 0.05])
    base = gpcompose.likelihoods.AbstractLikelihood
    np.testing.assert_allclose(
        likelihood.expected_log_prob(y, mean, variance),
        base.expected_log_prob(likelihood, y, mean, variance),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        likelihood.log_predictive_density(y, mean, variance),
        stats.norm.logpdf(np.asarray(y), np.asarray(mean), np.sqrt(np.asarray(variance) + 0.3)),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        likelihood.log_predictive_density(y, mean, variance),
        base.log_predictive_density(likelihood, y, mean, variance),
        rtol=1e-6,
    )


@pytest.mark.parametrize("link", ["probit", "logit"])
def test_bernoulli_samples_have_the_link_probability(link, getkey):
    likelihood = gpcompose.likelihoods.Bernoulli(link=link)
    f = jnp.full((20_000,), 0.7)
    draws = likelihood.sample(getkey(), f)
    probability = stats.norm.cdf(0.7) if link == "probit" else special.expit(0.7)
    assert set(np.unique(draws)) == {0.0, 1.0}
    assert abs(float(jnp.mean(draws)) - probability) < 4 * np.sqrt(probability * (1 - probability) / f.size)


def test_bernoulli_rejects_an_unknown_link():
    with pytest.raises(ValueError, match="link"):
        gpcompose.likelihoods.Bernoulli(link="cloglog")


def test_bernoulli_log_prob_is_differentiable_far_in_the_tail():
    likelihood = gpcompose.likelihoods.Bernoulli()
    gradient = jax.grad(lambda f: likelihood.log_prob(1.0, f))(jnp.asarray(-30.0))
    # d/df log Φ(f) = φ(f)/Φ(f) ≈ −f for f → −∞ (Mills ratio)
    np.testing.assert_allclose(gradient, np.exp(stats.norm.logpdf(-30.0) - special.log_ndtr(-30.0)), rtol=1e-9)
