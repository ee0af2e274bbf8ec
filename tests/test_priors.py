"""Tests of `gpcompose.priors`: log densities against scipy.stats, `LogScale`, and the
normalisation of each prior in the unconstrained coordinate of its parameter."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.stats

import gpcompose.priors
from gpcompose.parameters import Positive, Real
from gpcompose.priors import Gamma, LogNormal, LogScale, Normal, StudentT

POSITIVE_VALUES = np.array([1e-4, 0.03, 0.5, 1.0, 2.7, 11.0, 140.0])
REAL_VALUES = np.array([-50.0, -3.2, -0.4, 0.0, 0.9, 4.0, 25.0])


@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (1.5, 0.3), (-2.0, 4.0)])
def test_normal_matches_scipy(loc, scale):
    np.testing.assert_allclose(
        Normal(loc, scale).log_prob(jnp.asarray(REAL_VALUES)),
        scipy.stats.norm(loc, scale).logpdf(REAL_VALUES),
        rtol=1e-13,
    )


@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (1.5, 0.3), (-2.0, 2.0)])
def test_lognormal_matches_scipy(loc, scale):
    np.testing.assert_allclose(
        LogNormal(loc, scale).log_prob(jnp.asarray(POSITIVE_VALUES)),
        scipy.stats.lognorm(s=scale, scale=np.exp(loc)).logpdf(POSITIVE_VALUES),
        rtol=1e-13,
    )


@pytest.mark.parametrize("shape, scale", [(1.0, 2.0), (0.5, 1.0), (3.0, 0.25), (7.5, 4.0)])
def test_gamma_matches_scipy_shape_scale(shape, scale):
    np.testing.assert_allclose(
        Gamma(shape, scale).log_prob(jnp.asarray(POSITIVE_VALUES)),
        scipy.stats.gamma(a=shape, scale=scale).logpdf(POSITIVE_VALUES),
        rtol=1e-13,
    )


@pytest.mark.parametrize("df, loc, scale", [(3.0, 0.0, 1.0), (1.0, 0.5, 2.0), (30.0, -1.0, 0.5), (4.5, 2.0, 3.0)])
def test_student_t_matches_scipy(df, loc, scale):
    np.testing.assert_allclose(
        StudentT(df, loc, scale).log_prob(jnp.asarray(REAL_VALUES)),
        scipy.stats.t(df, loc, scale).logpdf(REAL_VALUES),
        rtol=1e-13,
    )


def test_priors_broadcast_elementwise_parameters():
    loc, scale = np.array([0.0, 1.0, -1.0]), np.array([1.0, 0.5, 2.0])
    values = np.array([0.3, 2.0, 5.0])
    np.testing.assert_allclose(
        Normal(jnp.asarray(loc), jnp.asarray(scale)).log_prob(jnp.asarray(values)),
        scipy.stats.norm(loc, scale).logpdf(values),
        rtol=1e-13,
    )
    np.testing.assert_allclose(
        Gamma(jnp.asarray([1.0, 2.0, 3.0]), jnp.asarray(scale)).log_prob(jnp.asarray(values)),
        scipy.stats.gamma(a=[1.0, 2.0, 3.0], scale=scale).logpdf(values),
        rtol=1e-13,
    )


@pytest.mark.parametrize("loc, scale", [(0.0, 1.0), (1.5, 0.3), (-2.0, 2.0)])
def test_log_scale_normal_equals_lognormal(loc, scale):
    values = jnp.asarray(POSITIVE_VALUES)
    np.testing.assert_allclose(
        LogScale(Normal(loc, scale)).log_prob(values), LogNormal(loc, scale).log_prob(values), rtol=1e-14
    )


def test_log_scale_student_t_matches_change_of_variables():
    # p(x) = t(log x) / x: the VBMC prior on lengthscales.
    expected = scipy.stats.t(3.0, 0.2, 1.5).logpdf(np.log(POSITIVE_VALUES)) - np.log(POSITIVE_VALUES)
    np.testing.assert_allclose(
        LogScale(StudentT(3.0, 0.2, 1.5)).log_prob(jnp.asarray(POSITIVE_VALUES)), expected, rtol=1e-13
    )


def test_log_prob_is_differentiable():
    # d/dx log Gamma(x; k, θ) = (k − 1)/x − 1/θ.
    gradient = jax.grad(lambda x: Gamma(2.5, 0.5).log_prob(x))(jnp.asarray(1.7))
    np.testing.assert_allclose(float(gradient), 1.5 / 1.7 - 2.0, rtol=1e-14)
    # d/dx log t(x; ν, μ, s) = −(ν + 1) z / (s (ν + z²)).
    z = (0.8 - 0.1) / 2.0
    gradient = jax.grad(lambda x: StudentT(4.0, 0.1, 2.0).log_prob(x))(jnp.asarray(0.8))
    np.testing.assert_allclose(float(gradient), -5.0 * z / (2.0 * (4.0 + z**2)), rtol=1e-14)


# --------------------------------------------- normalisation in the coordinate u

# (parameter, CDF of the prior on the constrained value). The density of u is
# exp(parameter.log_prior()) = p(T(u)) |T'(u)|; over [a, b] it integrates to
# F(T(b)) − F(T(a)), and over ℝ to 1 − F(minimum).
_CASES = {
    "gamma-softplus": (Positive(1.0, prior=Gamma(1.0, 2.0)), scipy.stats.gamma(a=1.0, scale=2.0).cdf),
    "gamma<1-softplus": (Positive(1.0, prior=Gamma(0.5, 1.5)), scipy.stats.gamma(a=0.5, scale=1.5).cdf),
    "gamma-exp": (Positive(1.0, transform="exp", prior=Gamma(3.0, 0.5)), scipy.stats.gamma(a=3.0, scale=0.5).cdf),
    "gamma-softplus-minimum": (
        Positive(1.0, minimum=0.5, prior=Gamma(2.0, 1.0)),
        scipy.stats.gamma(a=2.0, scale=1.0).cdf,
    ),
    "lognormal-exp": (
        Positive(1.0, transform="exp", prior=LogNormal(0.3, 0.8)),
        scipy.stats.lognorm(s=0.8, scale=np.exp(0.3)).cdf,
    ),
    "lognormal-softplus-minimum": (
        Positive(1.0, minimum=1e-6, prior=LogNormal(-1.0, 1.2)),
        scipy.stats.lognorm(s=1.2, scale=np.exp(-1.0)).cdf,
    ),
    "logscale-t-exp": (
        Positive(1.0, transform="exp", prior=LogScale(StudentT(5.0, 0.0, 0.5))),
        lambda x: scipy.stats.t(5.0, 0.0, 0.5).cdf(np.log(x)) if x > 0 else 0.0,
    ),
    "logscale-t-exp-minimum": (
        Positive(1.0, transform="exp", minimum=0.2, prior=LogScale(StudentT(4.0, 0.0, 0.5))),
        lambda x: scipy.stats.t(4.0, 0.0, 0.5).cdf(np.log(x)) if x > 0 else 0.0,
    ),
    "normal-real": (Real(0.0, prior=Normal(0.5, 2.0)), scipy.stats.norm(0.5, 2.0).cdf),
    "student-t-real": (Real(0.0, prior=StudentT(4.0, -1.0, 0.7)), scipy.stats.t(4.0, -1.0, 0.7).cdf),
}


@pytest.mark.parametrize("name", list(_CASES))
def test_prior_density_in_unconstrained_coordinate_integrates_to_probability(name):
    parameter, cdf = _CASES[name]

    @jax.jit
    def density_and_value(u):
        moved = eqx.tree_at(lambda p: p.unconstrained, parameter, u)
        return jnp.exp(moved.log_prior()), moved.value

    def density(u):
        return float(density_and_value(jnp.asarray(u))[0])

    # A window holding all but ~1e-8 of the mass for each transform.
    lower, upper = {"exp": (-40.0, 40.0), "softplus": (-40.0, 1000.0)}.get(
        getattr(parameter, "transform", None), (-1000.0, 1000.0)
    )
    integral, error_estimate = scipy.integrate.quad(
        density, lower, upper, points=[-5.0, 0.0, 5.0], epsabs=1e-13, epsrel=1e-12, limit=500
    )
    value_lower, value_upper = (float(density_and_value(jnp.asarray(u))[1]) for u in (lower, upper))
    assert error_estimate < 1e-10
    np.testing.assert_allclose(integral, cdf(value_upper) - cdf(value_lower), rtol=0, atol=1e-9)
    # The window holds essentially all the mass 1 − F(minimum).
    minimum = getattr(parameter, "minimum", None)
    total = 1.0 - (cdf(minimum) if minimum is not None else 0.0)
    np.testing.assert_allclose(integral, total, rtol=0, atol=1e-6)
    if minimum is not None and minimum >= 0.1:
        assert total < 1 - 1e-3  # the minimum really cuts off prior mass here


def test_prior_without_jacobian_is_not_normalised_in_u():
    # The log-Jacobian matters: without it a Gamma(1, 2) prior on a softplus parameter
    # integrates to something else in u, so the test above is not vacuous.
    parameter = Positive(1.0, prior=Gamma(1.0, 2.0))

    @jax.jit
    def density_without_jacobian(u):
        moved = eqx.tree_at(lambda p: p.unconstrained, parameter, u)
        return jnp.exp(moved.log_prior() - moved.log_jacobian())

    integral, _ = scipy.integrate.quad(
        lambda u: float(density_without_jacobian(jnp.asarray(u))), -40.0, 40.0, limit=500
    )
    assert abs(integral - 1.0) > 0.1


@pytest.mark.parametrize("shape, scale", [(0.0, 2.0), (1.0, -2.0), (-1.0, 1.0)])
def test_gamma_rejects_non_positive_shape_or_scale(shape, scale):
    with pytest.raises(ValueError, match="shape|scale"):
        Gamma(shape, scale)


# ------------------------------------------------------------------ sampling

NUM_DRAWS = 4000

# (prior, the scipy distribution of its draws)
_SAMPLERS = {
    "gamma(1, 2)": (Gamma(1.0, 2.0), scipy.stats.gamma(a=1.0, scale=2.0)),
    "gamma(0.5, 1.5)": (Gamma(0.5, 1.5), scipy.stats.gamma(a=0.5, scale=1.5)),
    "gamma(7.5, 0.25)": (Gamma(7.5, 0.25), scipy.stats.gamma(a=7.5, scale=0.25)),
    "normal": (Normal(1.5, 0.3), scipy.stats.norm(1.5, 0.3)),
    "lognormal": (LogNormal(-1.0, 1.2), scipy.stats.lognorm(s=1.2, scale=np.exp(-1.0))),
    "student-t(3)": (StudentT(3.0, -1.0, 0.7), scipy.stats.t(3.0, -1.0, 0.7)),
    "student-t(30)": (StudentT(30.0, 2.0, 3.0), scipy.stats.t(30.0, 2.0, 3.0)),
    "logscale-normal": (LogScale(Normal(0.3, 0.8)), scipy.stats.lognorm(s=0.8, scale=np.exp(0.3))),
    "logscale-gamma": (LogScale(Gamma(2.0, 0.5)), scipy.stats.loggamma(c=2.0, scale=0.5)),
}


@pytest.mark.parametrize("name", list(_SAMPLERS))
def test_samples_follow_the_prior(name, getkey):
    prior, distribution = _SAMPLERS[name]
    draws = np.asarray(prior.sample(getkey(), (NUM_DRAWS,)))
    assert draws.shape == (NUM_DRAWS,) and draws.dtype == np.float64
    if isinstance(prior, LogScale) and isinstance(prior.base, Gamma):
        # the log of the draw follows the base: log x ~ Gamma(2, 0.5), i.e. x = e^G
        draws = np.log(draws)
        distribution = scipy.stats.gamma(a=2.0, scale=0.5)
    # a fixed key: p-values of a correct sampler are uniform, so 10⁻³ fails 1 key in 1000
    assert scipy.stats.kstest(draws, distribution.cdf).pvalue > 1e-3
    # the sample mean within 5 standard errors (every distribution here has a variance)
    standard_error = distribution.std() / np.sqrt(NUM_DRAWS)
    assert abs(draws.mean() - distribution.mean()) < 5 * standard_error


def test_gamma_sample_uses_the_scale_not_the_rate(getkey):
    # SteinGP's Gamma(shape 1, scale 2) has mean 2 (a rate of 2 would give mean 0.5)
    draws = np.asarray(Gamma(1.0, 2.0).sample(getkey(), (20_000,)))
    np.testing.assert_allclose(draws.mean(), 2.0, atol=5 * 2.0 / np.sqrt(20_000))
    np.testing.assert_allclose(draws.var(), 4.0, rtol=0.1)


def test_sample_broadcasts_elementwise_parameters(getkey):
    shape, scale = np.array([1.0, 4.0, 9.0]), np.array([2.0, 0.5, 0.1])
    draws = np.asarray(Gamma(jnp.asarray(shape), jnp.asarray(scale)).sample(getkey(), (NUM_DRAWS, 3)))
    for column in range(3):
        distribution = scipy.stats.gamma(a=shape[column], scale=scale[column])
        assert scipy.stats.kstest(draws[:, column], distribution.cdf).pvalue > 1e-3


@pytest.mark.parametrize("name", list(_SAMPLERS))
def test_sample_under_jit_and_vmap_equals_eager_draws(name, getkey):
    prior, _ = _SAMPLERS[name]
    keys = jax.random.split(getkey(), 3)
    sample = jax.jit(eqx.debug.assert_max_traces(lambda key: prior.sample(key, (5,)), max_traces=1))
    jitted = np.stack([sample(key) for key in keys])
    batched = jax.jit(jax.vmap(lambda key: prior.sample(key, (5,))))(keys)
    np.testing.assert_allclose(jitted[0], prior.sample(keys[0], (5,)), rtol=1e-12)  # eager (slow: one key)
    np.testing.assert_allclose(batched, jitted, rtol=1e-12)


def test_sample_keeps_float32(getkey):
    prior = Gamma(jnp.float32(1.0), jnp.float32(2.0))
    assert prior.sample(getkey(), (4,)).dtype == jnp.float32
    assert LogScale(StudentT(jnp.float32(3.0), jnp.float32(0.0), jnp.float32(1.0))).sample(getkey(), ()).dtype == (
        jnp.float32
    )


class _Flat(gpcompose.priors.AbstractPrior):
    """An improper flat density, to check that a prior without a sampler says so."""

    def log_prob(self, value):
        return jnp.zeros_like(jnp.asarray(value))


def test_prior_without_sampler_raises_naming_it(getkey):
    with pytest.raises(NotImplementedError, match="_Flat has no `sample`"):
        _Flat().sample(getkey(), (3,))
    with pytest.raises(NotImplementedError, match="_Flat has no `sample`"):
        LogScale(_Flat()).sample(getkey(), (3,))
