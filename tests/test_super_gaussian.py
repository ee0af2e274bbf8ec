"""The super-Gaussian catalogue: decompositions against independent closed forms (scipy),
φ as the Laplace transform of p(ω) (quadrature), ω̄ by autodiff against the closed forms, and
the exact ω samplers against scipy's laws (KS tests and moments)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

import gpcompose
from gpcompose.likelihoods import (
    AbstractSuperGaussianLikelihood,
    BayesianSVM,
    Gaussian,
    Laplace,
    Logistic,
    Matern32Likelihood,
    StudentT,
)
from gpcompose.likelihoods._laplace_inversion import tilted_cdf_and_density

CATALOGUE = [
    Logistic(),
    StudentT(degrees_of_freedom=3.5, scale=0.7),
    Laplace(scale=0.8),
    Matern32Likelihood(scale=1.3),
    BayesianSVM(),
    Gaussian(variance=0.4),
]
IDS = [type(likelihood).__name__ for likelihood in CATALOGUE]


def _reference_log_prob(likelihood, y, f):
    if isinstance(likelihood, Logistic):
        return special.log_expit(y * f)
    if isinstance(likelihood, StudentT):
        return stats.t.logpdf(y, 3.5, loc=f, scale=0.7)
    if isinstance(likelihood, Laplace):
        return stats.laplace.logpdf(y, loc=f, scale=0.8)
    if isinstance(likelihood, Matern32Likelihood):
        a = np.sqrt(3) / 1.3
        return np.log(a / 4 * (1 + a * np.abs(y - f))) - a * np.abs(y - f)
    if isinstance(likelihood, BayesianSVM):
        return -2 * np.maximum(1 - y * f, 0)
    return stats.norm.logpdf(y, loc=f, scale=np.sqrt(0.4))


def _prior_density(likelihood):
    """p(ω) in closed form (Galy-Fajou, Wenzel & Opper 2020, §3.1), for the likelihoods whose prior is a scipy law."""
    if isinstance(likelihood, StudentT):
        return stats.gamma(a=(3.5 + 1) / 2, scale=1 / 3.5).pdf
    if isinstance(likelihood, Laplace):
        return stats.invgamma(a=0.5, scale=1 / (4 * 0.8**2)).pdf
    if isinstance(likelihood, Matern32Likelihood):
        return stats.invgamma(a=1.5, scale=3 / (4 * 1.3**2)).pdf
    if isinstance(likelihood, BayesianSVM):
        return stats.invgamma(a=0.5, scale=0.25).pdf
    return None


@pytest.mark.parametrize("likelihood", CATALOGUE, ids=IDS)
def test_decomposition_reproduces_closed_form_log_prob(likelihood):
    is_classifier = isinstance(likelihood, (Logistic, BayesianSVM))
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0]) if is_classifier else np.array([0.3, -1.2, 2.5, 0.0, 0.7])
    f = np.array([0.4, 2.0, -3.0, -0.1, 1.0])
    np.testing.assert_allclose(
        likelihood.log_prob(jnp.asarray(y), jnp.asarray(f)),
        _reference_log_prob(likelihood, y, f),
        rtol=1e-12,
        atol=1e-14,
    )
    # the decomposition itself: log C + g f + log φ((a₀ + a₁ f)²)
    a0, a1 = likelihood.affine_coefficients(jnp.asarray(y))
    manual = (
        likelihood.log_normalizer()
        + likelihood.linear_coefficient(jnp.asarray(y)) * f
        + likelihood.log_phi((a0 + a1 * f) ** 2)
    )
    np.testing.assert_allclose(manual, _reference_log_prob(likelihood, y, f), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(likelihood.log_phi(jnp.zeros(())), 0.0, atol=1e-15)


@pytest.mark.parametrize(
    "likelihood", [lik for lik in CATALOGUE if _prior_density(lik) is not None], ids=lambda lik: type(lik).__name__
)
def test_phi_is_laplace_transform_of_prior(likelihood):
    density = _prior_density(likelihood)
    for r in [0.3, 1.0, 4.0]:
        transform, _ = integrate.quad(
            lambda omega: np.exp(-r * omega) * density(omega), 0, np.inf, epsabs=1e-12, limit=200
        )
        np.testing.assert_allclose(likelihood.phi(jnp.asarray(r)), transform, rtol=1e-7)
    s = 1.5 + 2.0j  # complex argument, principal branch
    real, _ = integrate.quad(
        lambda omega: np.exp(-1.5 * omega) * np.cos(2.0 * omega) * density(omega), 0, np.inf, limit=400
    )
    imaginary, _ = integrate.quad(
        lambda omega: -np.exp(-1.5 * omega) * np.sin(2.0 * omega) * density(omega), 0, np.inf, limit=400
    )
    np.testing.assert_allclose(complex(likelihood.phi(jnp.asarray(s))), real + 1j * imaginary, rtol=1e-6)


def test_logistic_phi_is_pg_laplace_transform():
    # E[e^{−sω}] for ω = PG(1, 0)/2: Σ_k over the infinite-sum representation, in closed form cosh(√(s)/2)^{-1}.
    # The density of PG(1,0) is the alternating series (Polson et al. 2013 eq. 11), integrated here.
    def pg_density(x):
        n = np.arange(0, 200)
        return np.sum((-1) ** n * (2 * n + 1) / np.sqrt(2 * np.pi * x**3) * np.exp(-((2 * n + 1) ** 2) / (8 * x)))

    likelihood = Logistic()
    for r in [0.5, 2.0, 9.0]:
        transform, _ = integrate.quad(lambda x: np.exp(-r * x / 2) * pg_density(x), 0, np.inf, limit=200)
        np.testing.assert_allclose(likelihood.phi(jnp.asarray(r)), transform, rtol=1e-7)
    np.testing.assert_allclose(
        complex(likelihood.phi(jnp.asarray(1.0 + 3.0j))), 1 / np.cosh(np.sqrt(1.0 + 3.0j) / 2), rtol=1e-12
    )
    # no overflow at a large real part (Euler inversion evaluates φ at Re s = A/(2t))
    assert np.isfinite(complex(likelihood.phi(jnp.asarray(1e6 + 5e6j))))


@pytest.mark.parametrize("likelihood", CATALOGUE, ids=IDS)
def test_mean_omega_autodiff_matches_closed_form(likelihood):
    c_squared = jnp.array([1e-3, 0.2, 1.0, 7.5])
    autodiff = AbstractSuperGaussianLikelihood.mean_omega(likelihood, c_squared)
    np.testing.assert_allclose(likelihood.mean_omega(c_squared), autodiff, rtol=1e-10)
    # finite differences of log φ as a third, independent check
    step = 1e-4 * c_squared
    central = -(likelihood.log_phi(c_squared + step) - likelihood.log_phi(c_squared - step)) / (2 * step)
    np.testing.assert_allclose(likelihood.mean_omega(c_squared), central, rtol=1e-7)


def test_mean_omega_limits_at_zero():
    zero = jnp.zeros((1,))
    np.testing.assert_allclose(Logistic().mean_omega(zero), [1 / 8], rtol=1e-15)
    np.testing.assert_allclose(Logistic().mean_omega(jnp.array([1e-8])), [1 / 8 - 1e-8 / 96], rtol=1e-15)
    np.testing.assert_allclose(StudentT(degrees_of_freedom=3.0).mean_omega(zero), [4 / 6])
    np.testing.assert_allclose(Matern32Likelihood(scale=2.0).mean_omega(zero), [3 / 8])
    for likelihood in [Laplace(), BayesianSVM()]:
        value = likelihood.mean_omega(zero)
        assert np.all(np.isfinite(value)) and np.all(value > 1e100)
    # gradients through the closed forms are finite at c² = 0
    assert np.isfinite(jax.grad(lambda c: Logistic().mean_omega(c))(jnp.asarray(0.0)))


def _tilted_law(likelihood, c_squared):
    c = np.sqrt(c_squared)
    if isinstance(likelihood, StudentT):
        return stats.gamma(a=(3.5 + 1) / 2, scale=1 / (3.5 + c_squared))
    if isinstance(likelihood, Laplace):
        mean, shape = 1 / (2 * 0.8 * c), 1 / (2 * 0.8**2)
        return stats.invgauss(mean / shape, scale=shape)
    if isinstance(likelihood, BayesianSVM):
        return stats.invgauss((1 / (2 * c)) / 0.5, scale=0.5)
    if isinstance(likelihood, Matern32Likelihood):
        a, b = 2 * c_squared, 3 / (2 * 1.3**2)
        return stats.geninvgauss(-1.5, np.sqrt(a * b), scale=np.sqrt(b / a))
    return None


SAMPLED = [lik for lik in CATALOGUE if _tilted_law(lik, 1.0) is not None]


@pytest.mark.parametrize("likelihood", SAMPLED, ids=lambda lik: type(lik).__name__)
@pytest.mark.parametrize("c_squared", [0.05, 2.0])
def test_exact_samplers_match_scipy_laws(likelihood, c_squared, getkey):
    num_samples = 4000
    samples = np.asarray(likelihood.sample_omega(getkey(), jnp.full((num_samples,), c_squared)))
    law = _tilted_law(likelihood, c_squared)
    assert stats.kstest(samples, law.cdf).pvalue > 1e-3
    np.testing.assert_allclose(law.mean(), likelihood.mean_omega(jnp.asarray(c_squared)), rtol=1e-10)


@pytest.mark.parametrize("c", [0.0, 0.8, 3.0])
def test_polya_gamma_sampler_moments_and_distribution(c, getkey):
    likelihood = Logistic()
    num_samples = 4000
    samples = np.asarray(likelihood.sample_omega(getkey(), jnp.full((num_samples,), c**2)))
    # mean and variance of π(ω | c) are −(log φ)′ and (log φ)″ at c² (document A.2); at c = 0 the
    # series log sech(√r/2) = −r/8 + r²/192 − … gives (log φ)″(0) = 1/96 (the autodiff of √r is not finite there)
    mean = float(likelihood.mean_omega(jnp.asarray(c**2)))
    variance = 1 / 96 if c == 0 else float(jax.grad(jax.grad(likelihood.log_phi))(jnp.asarray(c**2)))
    standard_error = np.sqrt(variance / num_samples)
    assert abs(samples.mean() - mean) < 4 * standard_error
    np.testing.assert_allclose(samples.var(), variance, rtol=0.1)
    # KS against the truncated infinite-sum representation PG(1, c) = Σ_k g_k / (2π²((k−½)² + c²/(4π²)))
    rng = np.random.default_rng(0)
    k = np.arange(1, 401)
    reference = (
        (rng.exponential(size=(num_samples, k.size)) / ((k - 0.5) ** 2 + c**2 / (4 * np.pi**2))).sum(1)
        / (2 * np.pi**2)
        / 2
    )
    assert stats.ks_2samp(samples, reference).pvalue > 1e-3


def test_samplers_float32(getkey):
    # (vmap over keys and jit of the samplers are exercised by the vmapped Gibbs chains in test_aaci_gibbs.py)
    for likelihood in [Logistic(), Matern32Likelihood(scale=jnp.float32(1.3))]:
        draws = likelihood.sample_omega(getkey(), jnp.array([0.5, 2.0], dtype=jnp.float32))
        assert draws.dtype == jnp.float32 and np.all(np.isfinite(draws)) and np.all(draws > 0)


def test_bad_labels_and_scales_raise():
    np.testing.assert_allclose(
        Logistic().log_prob(jnp.array([0.0, 1.0]), jnp.array([0.3, 0.3])), special.log_expit([-0.3, 0.3])
    )
    with pytest.raises(ValueError, match="class labels"):  # concrete labels: checked at once
        Logistic().log_prob(jnp.array([2.0, 1.0]), jnp.zeros(2))
    with pytest.raises(eqx.EquinoxRuntimeError, match="class labels"):
        eqx.filter_jit(BayesianSVM().log_prob)(jnp.array([0.0, -1.0]), jnp.zeros(2))
    for make, name in [
        (lambda: StudentT(scale=-1.0), "scale"),
        (lambda: Laplace(scale=0.0), "scale"),
        (lambda: Matern32Likelihood(scale=-2.0), "scale"),
        (lambda: Gaussian(variance=-1.0), "variance"),
    ]:
        with pytest.raises(ValueError, match=f"`{name}` must be > 0"):
            make()


def test_gaussian_is_still_a_likelihood():
    assert isinstance(gpcompose.likelihoods.Gaussian(0.3), gpcompose.likelihoods.AbstractLikelihood)


class _StudentTFromPhiOnly(AbstractSuperGaussianLikelihood):
    """A likelihood written with C, g, h and φ only (ν = 3, σ = 1): ω̄ by autodiff, ω by inversion."""

    def log_normalizer(self):
        return jnp.asarray(special.gammaln(2.0) - special.gammaln(1.5) - 0.5 * np.log(3 * np.pi))

    def linear_coefficient(self, y):
        return jnp.zeros_like(y)

    def affine_coefficients(self, y):
        return -y, jnp.ones_like(y)

    def log_phi(self, r):
        return -2.0 * jnp.log1p(jnp.asarray(r) / 3.0)


def test_euler_inversion_cdf_and_density_match_scipy():
    x = jnp.array([0.05, 0.3, 1.0, 3.0])
    c_squared = jnp.asarray(0.7)
    laws = [
        (StudentT(degrees_of_freedom=3.0, scale=1.0), stats.gamma(a=2.0, scale=1 / 3.7)),
        (Matern32Likelihood(scale=1.3), _tilted_law(Matern32Likelihood(scale=1.3), 0.7)),
        (Laplace(scale=0.8), _tilted_law(Laplace(scale=0.8), 0.7)),
    ]
    for likelihood, law in laws:
        cdf, density = jax.vmap(lambda value: tilted_cdf_and_density(likelihood.log_phi, c_squared, value))(x)
        np.testing.assert_allclose(cdf, law.cdf(np.asarray(x)), atol=1e-7)
        np.testing.assert_allclose(density, law.pdf(np.asarray(x)), atol=1e-6)


def test_generic_inversion_sampler(getkey):
    likelihood = _StudentTFromPhiOnly()
    samples = np.asarray(likelihood.sample_omega(getkey(), jnp.full((1000,), 0.7)))
    assert stats.kstest(samples, stats.gamma(a=2.0, scale=1 / 3.7).cdf).pvalue > 1e-3
    np.testing.assert_allclose(likelihood.mean_omega(jnp.asarray(0.7)), 2.0 / 3.7, rtol=1e-12)
    np.testing.assert_allclose(
        likelihood.log_prob(jnp.asarray(1.2), jnp.asarray(0.2)), stats.t.logpdf(1.2, 3.0, loc=0.2), rtol=1e-12
    )
    # the logistic's generic draws (inverting sech) agree with the exact Pólya–Gamma sampler
    generic = AbstractSuperGaussianLikelihood.sample_omega(Logistic(), getkey(), jnp.full((1000,), 1.0))
    exact = Logistic().sample_omega(getkey(), jnp.full((1000,), 1.0))
    assert stats.ks_2samp(np.asarray(generic), np.asarray(exact)).pvalue > 1e-3
    with pytest.raises(ValueError, match="float64"):
        likelihood.sample_omega(getkey(), jnp.full((3,), 0.7, dtype=jnp.float32))


@pytest.mark.parametrize("likelihood", CATALOGUE, ids=IDS)
def test_gaussian_expectations_match_adaptive_quadrature_split_at_the_kink(likelihood):
    """E_{N(m, v)}[log p(y | f)] and log E[p(y | f)] against scipy's adaptive quadrature
    (with the kink of |h| as a break point), including a kink at the mean itself, where
    Gauss–Hermite converges only algebraically."""
    classification = isinstance(likelihood, (Logistic, BayesianSVM))
    y = np.array([1.0, -1.0, 1.0, 1.0]) if classification else np.array([0.3, -1.2, 2.0, 0.5])
    mean = np.array([1.0, -0.4, 2.0, -0.5]) if classification else np.array([0.3, 0.1, 1.1, -0.5])
    variance = np.array([0.5, 2.0, 0.05, 3.0])
    kinks = y if not classification else 1 / y  # h = 0 at f = y (regression), y f = 1 (SVM)
    expected_log, predictive = [], []
    for label, m, v, kink in zip(y, mean, variance, kinks):
        sd = np.sqrt(v)

        def weighted(f, exponentiate, label=label, m=m, sd=sd):
            log_p = _reference_log_prob(likelihood, label, f)
            return (np.exp(log_p) if exponentiate else log_p) * stats.norm.pdf(f, m, sd)

        def integral(exponentiate, m=m, sd=sd, kink=kink):
            lower, upper = m - 12 * sd, m + 12 * sd
            middle = float(np.clip(kink, lower, upper))
            return sum(
                integrate.quad(weighted, a, b, args=(exponentiate,), epsabs=0, epsrel=1e-13, limit=200)[0]
                for a, b in ((lower, middle), (middle, upper))
            )

        expected_log.append(integral(False))
        predictive.append(np.log(integral(True)))
    args = (jnp.asarray(y), jnp.asarray(mean), jnp.asarray(variance))
    np.testing.assert_allclose(likelihood.expected_log_prob(*args), expected_log, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(likelihood.log_predictive_density(*args), predictive, rtol=1e-9, atol=1e-12)


def _reference_derivative(likelihood, y, f):
    """d/df log p(y | f) in closed form (one-sided, from above, at a kink)."""
    if isinstance(likelihood, Logistic):
        return y * special.expit(-y * f)
    if isinstance(likelihood, StudentT):
        r = (y - f) / 0.7
        return (3.5 + 1) * r / (0.7 * (3.5 + r**2))
    if isinstance(likelihood, Laplace):
        return np.sign(y - f) / 0.8
    if isinstance(likelihood, Matern32Likelihood):
        a, d = np.sqrt(3) / 1.3, abs(y - f)
        return np.sign(y - f) * (a - a / (1 + a * d))
    if isinstance(likelihood, BayesianSVM):
        return 2 * y * (1 - y * f > 0)
    return (y - f) / 0.4


@pytest.mark.parametrize("likelihood", CATALOGUE, ids=IDS)
def test_derivatives_are_finite_at_the_kink_and_at_zero_variance(likelihood):
    """d log p/df where h = 0 (f = 0 for the logistic, whose log p is smooth there; the kink
    f = y elsewhere) is finite: the exact derivative for smooth φ, a subgradient at a kink.
    With variance 0, or 10⁻¹², E[log p] is log p(y | m) and its derivatives in (m, v) are
    finite, d/dm being log p's derivative at m (10⁻¹²: to 10⁻⁵)."""
    classification = isinstance(likelihood, (Logistic, BayesianSVM))
    y = 1.0 if classification else 0.3
    kink = 0.0 if isinstance(likelihood, Logistic) else y
    derivative = float(jax.grad(lambda f: likelihood.log_prob(y, f))(kink))
    assert np.isfinite(derivative)
    if isinstance(likelihood, (Logistic, StudentT, Gaussian)):
        np.testing.assert_allclose(derivative, _reference_derivative(likelihood, y, kink), rtol=1e-12)
    else:  # between the one-sided derivatives
        below = _reference_derivative(likelihood, y, kink - 1e-9)
        above = _reference_derivative(likelihood, y, kink + 1e-9)
        assert min(below, above) - 1e-12 <= derivative <= max(below, above) + 1e-12
    mean = 0.4 if classification else -0.2
    labels = jnp.asarray([y])
    for variance in (0.0, 1e-12):

        def expected(m, v):
            return likelihood.expected_log_prob(labels, jnp.asarray([m]), jnp.asarray([v]))[0]

        value = expected(mean, variance)
        d_mean, d_variance = jax.grad(expected, argnums=(0, 1))(mean, variance)
        np.testing.assert_allclose(value, _reference_log_prob(likelihood, y, mean), rtol=1e-9)
        assert np.isfinite(d_mean) and np.isfinite(d_variance)
        np.testing.assert_allclose(d_mean, _reference_derivative(likelihood, y, mean), rtol=1e-5)
