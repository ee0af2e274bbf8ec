"""The surrogate ELBO: E_f[∫ q f] + H[q] with its GP standard deviation."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose import gp, kernels, means, mixtures, quadrature, sparse

from .helpers import autodiff_gradient, finite_difference_gradient

NUM_ENTROPY_SAMPLES = 90


def make_posteriors(key, num_points=10, num_inducing=4):
    """An exact and a sparse posterior of a log-density-like function in 2-D (SE kernel: the
    embeddings of every kernel are tested in test_quadrature.py)."""
    input_key, noise_key = jax.random.split(key)
    X = jax.random.normal(input_key, (num_points, 2))
    noise = 0.01 + 0.02 * jax.random.uniform(noise_key, (num_points,))
    y = -0.5 * jnp.sum(X**2, axis=1) + 0.3 * jnp.sin(2.0 * X[:, 0])
    kernel = kernels.SquaredExponential(lengthscale=jnp.array([0.9, 1.3]), variance=0.8)
    mean = means.NegativeQuadratic(maximum=0.2, location=jnp.array([0.1, -0.1]), scale=jnp.array([1.5, 2.0]))
    exact = gp.condition(kernel, mean, X, y, noise)
    approximate = sparse.condition(kernel, mean, X, y, noise, X[:num_inducing])
    return exact, approximate


def make_mixtures(key):
    """A diagonal Gaussian mixture, an axis-aligned VBMC mixture and a rotated one."""
    keys = jax.random.split(key, 9)
    gaussian_mixture = mixtures.GaussianMixture.from_moments(
        jax.random.uniform(keys[0], (3,), minval=0.2, maxval=1.0),
        0.7 * jax.random.normal(keys[1], (3, 2)),
        jax.random.uniform(keys[2], (3, 2), minval=0.1, maxval=0.6),
    )
    vbmc_mixture = mixtures.VBMCMixture(
        0.5 * jax.random.normal(keys[3], (3,)),
        0.7 * jax.random.normal(keys[4], (3, 2)),
        -0.5 + 0.3 * jax.random.normal(keys[5], (3,)),
        0.2 * jax.random.normal(keys[6], (2,)),
        jnp.ones(3, bool),
    )
    rotated_mixture = eqx.tree_at(
        lambda m: (m.means, m.lambda_offdiagonal),
        vbmc_mixture,
        (0.7 * jax.random.normal(keys[7], (3, 2)), jax.random.normal(keys[8], (1,))),
        is_leaf=lambda leaf: leaf is None,
    )
    return gaussian_mixture, vbmc_mixture, rotated_mixture


@eqx.filter_jit
@eqx.debug.assert_max_traces(max_traces=1)
def elbo_and_parts(posteriors, mixtures_, key):
    """The ELBO and its parts for every (posterior, mixture) pair."""
    results = []
    for posterior in posteriors:
        for mixture in mixtures_:
            per_component = -(-NUM_ENTROPY_SAMPLES // mixture.num_components)
            results.append(
                (
                    gpcompose.elbo(posterior, mixture, key, NUM_ENTROPY_SAMPLES),
                    quadrature.integrate(posterior, mixture),
                    mixture.entropy(key, per_component),
                )
            )
    return results


def test_elbo_is_the_bq_integral_plus_the_entropy_and_jit_traces_once(getkey):
    """mean = E[∫ q f] + H[q] (entropy by stratified Monte Carlo with ⌈n/K⌉ draws per
    component, same key), sd² = Var[∫ q f]; for exact and sparse posteriors and both
    mixture families, compiled once for new values."""
    for _ in range(3):
        posteriors = make_posteriors(getkey())
        results = elbo_and_parts(posteriors, make_mixtures(getkey()), getkey())
        for (mean, sd), (integral, variance), entropy in results:
            np.testing.assert_allclose(mean, integral + entropy, rtol=1e-13)
            np.testing.assert_allclose(sd**2, variance, rtol=1e-12)
            assert np.isfinite(mean) and sd > 0


def test_quadrature_elbo_is_the_top_level_elbo():
    assert gpcompose.elbo is quadrature.elbo


@eqx.filter_jit
def _elbo_of_exact_log_joint(kernel_variance, log_normalizer, location, scale, mixture, key):
    """A GP whose posterior mean is exactly log Z + log N(x; μ, diag ω²): a negative-quadratic
    prior mean with that shape, and observations of it with no residual."""
    mean = means.NegativeQuadratic(
        maximum=log_normalizer - 0.5 * jnp.sum(jnp.log(2 * math.pi * scale**2)), location=location, scale=scale
    )
    X = jax.random.normal(jax.random.key(0), (8, 2))
    kernel = kernels.SquaredExponential(lengthscale=1.0, variance=kernel_variance)
    posterior = gp.condition(kernel, mean, X, mean(X), 1e-4)
    return gpcompose.elbo(posterior, mixture, key, 200_000)


def test_elbo_of_the_exact_posterior_is_the_log_normalizer(getkey):
    """For log p(x) = log Z + log N(x; μ, diag ω²) the ELBO is log Z − KL(q ‖ N(μ, ω²)):
    log Z at q = N(μ, ω²) (within the entropy's Monte Carlo error), lower elsewhere."""
    location, scale, log_normalizer = jnp.array([0.3, -0.7]), jnp.array([0.8, 1.4]), jnp.array(2.5)
    exact_q = mixtures.GaussianMixture.from_moments(jnp.ones(1), location[None], (scale**2)[None])
    key = getkey()
    value, sd = _elbo_of_exact_log_joint(jnp.array(0.5), log_normalizer, location, scale, exact_q, key)
    draws = exact_q.stratified_sample(key, 200_000)[0]
    entropy_terms = np.asarray(-exact_q.log_prob(draws))
    error = entropy_terms.std() / math.sqrt(entropy_terms.size)
    assert abs(value - log_normalizer) <= 4 * error
    assert np.isfinite(sd) and sd >= 0
    shifted = mixtures.GaussianMixture.from_moments(jnp.ones(1), (location + 0.5)[None], (0.5 * scale**2)[None])
    value, _ = _elbo_of_exact_log_joint(jnp.array(0.5), log_normalizer, location, scale, shifted, key)
    kl = mixtures.gaussian_kl(location + 0.5, jnp.diag(0.5 * scale**2), location, jnp.diag(scale**2))
    # −log q at its own draws has variance D/2 for any Gaussian q: the same standard error.
    assert abs(value - (log_normalizer - kl)) <= 4 * error
    assert kl > 0.1 and value < log_normalizer


def test_gradients_match_finite_differences_with_common_random_numbers(getkey):
    """∂ELBO (mean and sd) with respect to every mixture parameter — logits, means,
    log_scales; logits, means, log_sigma, log_lambda; and lambda_offdiagonal — under a fixed
    key, for exact and sparse posteriors."""
    exact, approximate = make_posteriors(getkey())
    key = getkey()
    pairs = {
        "exact gaussian": (exact, make_mixtures(getkey())[0]),
        "sparse gaussian": (approximate, make_mixtures(getkey())[0]),
        "exact vbmc": (exact, make_mixtures(getkey())[1]),
        "sparse vbmc": (approximate, make_mixtures(getkey())[1]),
        "exact rotated": (exact, make_mixtures(getkey())[2]),
        "sparse rotated": (approximate, make_mixtures(getkey())[2]),
    }
    params, static = eqx.partition({name: mixture for name, (_, mixture) in pairs.items()}, eqx.is_inexact_array)

    @eqx.filter_jit
    def objective(params):
        mixtures_ = eqx.combine(params, static)
        total = 0.0
        for index, (name, (posterior, _)) in enumerate(pairs.items()):
            mean, sd = gpcompose.elbo(posterior, mixtures_[name], key, NUM_ENTROPY_SAMPLES)
            total = total + (index + 1.0) * mean + 2.0 * sd
        return total

    autodiff = autodiff_gradient(objective, params)
    finite = finite_difference_gradient(objective, params)
    np.testing.assert_allclose(autodiff, finite, rtol=1e-5, atol=1e-7)
    # Every parameter moves the ELBO (none is silently disconnected).
    assert np.all(np.abs(autodiff) > 1e-8)


def test_rotated_mixture_integral_is_the_weighted_sum_of_full_gaussian_integrals(getkey):
    """∫ q f for q = Σ w_k N(μ_k, σ_k² S Sᵀ) equals Σ_k w_k ∫ N(μ_k, Σ_k) f, each through the
    full-covariance `MultivariateNormal` path (checked against Monte Carlo in
    test_bayesian_quadrature.py); likewise each component's variance."""
    mixture = make_mixtures(getkey())[2]
    assert mixture.component_covariances.shape == (3, 2, 2)
    weights = np.asarray(mixture.weights)
    for posterior in make_posteriors(getkey()):
        integral, variance = eqx.filter_jit(quadrature.integrate)(posterior, mixture)
        component_means, component_covariance = eqx.filter_jit(quadrature.integrate_components)(posterior, mixture)
        singles = np.asarray(
            [
                quadrature.integrate(posterior, mixtures.MultivariateNormal(mean, covariance))
                for mean, covariance in zip(mixture.component_means, mixture.component_covariances)
            ]
        )
        np.testing.assert_allclose(component_means, singles[:, 0], rtol=1e-12)
        np.testing.assert_allclose(np.diag(component_covariance), singles[:, 1], rtol=1e-10)
        np.testing.assert_allclose(integral, weights @ singles[:, 0], rtol=1e-12)
        np.testing.assert_allclose(variance, weights @ component_covariance @ weights, rtol=1e-12)


def test_vmap_over_keys_equals_loop(getkey):
    exact, approximate = make_posteriors(getkey())
    mixture = make_mixtures(getkey())[1]
    keys = jax.random.split(getkey(), 4)

    def both(key):
        return gpcompose.elbo(exact, mixture, key, NUM_ENTROPY_SAMPLES), gpcompose.elbo(
            approximate, mixture, key, NUM_ENTROPY_SAMPLES
        )

    batched = eqx.filter_jit(jax.vmap(both))(keys)
    single = eqx.filter_jit(both)
    for index in range(4):
        for a, b in zip(jax.tree_util.tree_leaves(batched), jax.tree_util.tree_leaves(single(keys[index]))):
            np.testing.assert_allclose(a[index], b, rtol=1e-12)
    # Different keys give different entropy estimates, the same GP part.
    assert len({float(value) for value in batched[0][0]}) == 4
    np.testing.assert_allclose(batched[0][1], batched[0][1][0], rtol=1e-13)


def test_float32_smoke(getkey):
    exact, approximate = make_posteriors(getkey())
    to32 = lambda tree: jax.tree_util.tree_map(
        lambda leaf: leaf.astype(jnp.float32) if eqx.is_inexact_array(leaf) else leaf, tree
    )
    mixture = to32(make_mixtures(getkey())[0])

    @eqx.filter_jit
    def run(exact, approximate, mixture, key):
        return gpcompose.elbo(exact, mixture, key, 30), gpcompose.elbo(approximate, mixture, key, 30)

    for leaf in jax.tree_util.tree_leaves(run(to32(exact), to32(approximate), mixture, getkey())):
        assert leaf.dtype == jnp.float32
        assert np.isfinite(leaf)


def test_bad_input_raises_naming_the_argument(getkey):
    exact, _ = make_posteriors(getkey())
    gaussian = mixtures.MultivariateNormal(jnp.zeros(2), jnp.eye(2))
    mixture = make_mixtures(getkey())[0]
    with pytest.raises(ValueError, match="`mixture`.*MultivariateNormal"):
        gpcompose.elbo(exact, gaussian, getkey(), 10)
    with pytest.raises(ValueError, match="`num_entropy_samples`"):
        gpcompose.elbo(exact, mixture, getkey(), 0)
    with pytest.raises(ValueError, match="`posterior`"):
        gpcompose.elbo(mixture, mixture, getkey(), 10)


def test_axis_aligned_flag_gives_the_diagonal_family_in_the_rotated_pytree(getkey):
    """A VBMCMixture with `lambda_offdiagonal` and `axis_aligned` True is the diagonal
    family: the same log density, ELBO and, under `maximize_elbo` on a surrogate whose
    target is correlated (so the off-diagonal entries would get a gradient), the same
    optimised mixture, with the off-diagonal entries and the flag unchanged."""
    correlation = 0.8
    X = 1.5 * jax.random.normal(getkey(), (30, 2))
    y = -0.5 * (X[:, 0] ** 2 - 2 * correlation * X[:, 0] * X[:, 1] + X[:, 1] ** 2) / (1 - correlation**2)
    posterior = gp.condition(kernels.SquaredExponential(lengthscale=2.0, variance=4.0), means.Zero(), X, y, 1e-4)
    diagonal = mixtures.VBMCMixture(
        jnp.array([0.3, -0.2]),
        jnp.array([[-0.5, 0.2], [0.4, 0.1]]),
        jnp.array([-0.3, 0.1]),
        jnp.zeros(2),
        jnp.ones(2, bool),
    )
    flagged = mixtures.VBMCMixture(
        diagonal.logits,
        diagonal.means,
        diagonal.log_sigma,
        diagonal.log_lambda,
        diagonal.mask,
        lambda_offdiagonal=jnp.array([0.7]),
        axis_aligned=jnp.asarray(True),
    )
    points = jax.random.normal(getkey(), (20, 2))
    np.testing.assert_allclose(flagged.log_prob(points), diagonal.log_prob(points), rtol=1e-13)
    key = getkey()
    # the ELBO (0.10) is the sum of an expected log joint (≈ −2.6) and an entropy (2.72), which
    # the two code paths (full scale matrix, diagonal) round differently: equal to the rounding
    # of those terms (measured 1.8e-13 with XLA:CPU's FAST_COMPILE preset), not relative to 0.10
    np.testing.assert_allclose(
        quadrature.elbo(posterior, flagged, key, 256)[0], quadrature.elbo(posterior, diagonal, key, 256)[0], atol=1e-12
    )
    settings = dict(width=jnp.ones(2), num_steps=100, learning_rate=0.05, num_entropy_samples=64)
    moved_flagged = quadrature.maximize_elbo(posterior, flagged, key, **settings)
    moved_diagonal = quadrature.maximize_elbo(posterior, diagonal, key, **settings)
    np.testing.assert_array_equal(moved_flagged.lambda_offdiagonal, [0.7])
    assert bool(moved_flagged.axis_aligned)
    for name in ("logits", "means", "log_sigma", "log_lambda"):
        np.testing.assert_allclose(getattr(moved_flagged, name), getattr(moved_diagonal, name), rtol=1e-9, atol=1e-12)
    released = eqx.tree_at(lambda m: m.axis_aligned, flagged, jnp.asarray(False))
    unflagged = eqx.tree_at(lambda m: m.axis_aligned, flagged, None, is_leaf=lambda leaf: leaf is None)
    assert [bool(m.is_rotated) for m in (diagonal, flagged, released, unflagged)] == [False, False, True, True]
    assert not np.allclose(quadrature.maximize_elbo(posterior, released, key, **settings).lambda_offdiagonal, 0.7)


def test_axis_aligned_flag_needs_the_offdiagonal_entries():
    with pytest.raises(ValueError, match="axis_aligned"):
        mixtures.VBMCMixture(
            jnp.zeros(1), jnp.zeros((1, 2)), jnp.zeros(1), jnp.zeros(2), jnp.ones(1, bool), None, jnp.asarray(True)
        )


def test_maximize_elbo_keeps_means_in_bounds_and_otherwise_reaches_the_target(getkey):
    """Target log Z + log N(x; μ, diag ω²) with μ = (0.3, −0.7): without bounds the one-component
    mixture's mean moves to μ; with the box [−1, 0] × [−0.5, 1], which excludes μ₁ and μ₂ on
    opposite sides, it ends on the box's faces (projected ascent), μ clipped to (0, −0.5)."""
    location, scale = jnp.array([0.3, -0.7]), jnp.array([0.8, 1.4])
    mean = means.NegativeQuadratic(
        maximum=-0.5 * jnp.sum(jnp.log(2 * math.pi * scale**2)), location=location, scale=scale
    )
    X = jax.random.normal(jax.random.key(0), (8, 2))
    posterior = gp.condition(kernels.SquaredExponential(lengthscale=1.0, variance=0.5), mean, X, mean(X), 1e-4)
    start = mixtures.VBMCMixture(jnp.zeros(1), jnp.array([[-0.5, 0.5]]), jnp.zeros(1), jnp.zeros(2), jnp.ones(1, bool))
    settings = dict(width=jnp.ones(2), num_steps=400, learning_rate=0.05, num_entropy_samples=64)
    key = getkey()
    free = quadrature.maximize_elbo(posterior, start, key, **settings)
    np.testing.assert_allclose(np.asarray(free.means[0]), np.asarray(location), atol=0.05)
    box = (jnp.array([-1.0, -0.5]), jnp.array([0.0, 1.0]))
    bounded = quadrature.maximize_elbo(posterior, start, key, bounds=box, **settings)
    np.testing.assert_allclose(np.asarray(bounded.means[0]), [0.0, -0.5], atol=1e-12)
