"""Bayesian quadrature of exact and sparse GP posteriors against Monte Carlo.

For a posterior with mean μ and covariance C, the integral I = ∫ f q has
E[I] = ∫ μ q and Var[I] = ∫∫ C(x, x′) q(x) q(x′); per component, Cov(I_j, I_m) =
∫∫ C(x, x′) N_j(x) N_m(x′). Both are estimated from 10⁶ independent draws (pairs for the
covariance) with μ and C from dense numpy inverses, and compared within 4 standard errors.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import gp, kernels, means, mixtures, quadrature, sparse

from .helpers import autodiff_gradient, finite_difference_gradient
from .test_quadrature import (
    assert_within_standard_errors,
    draw_components,
    make_kernel,
    make_measure,
    monte_carlo,
    reference_kernel,
)


def make_bq_problem(name, dimension, seed, num_points=12, num_inducing=6, constant_mean=False):
    """Kernel, mean, data and inducing inputs around the measures of `make_measure`."""
    rng = np.random.default_rng(seed)
    X = 1.2 * rng.normal(size=(num_points, dimension))
    noise = 0.01 + 0.04 * rng.uniform(size=num_points)
    y = np.sin(2.0 * X[:, 0]) - 0.3 * np.sum(X**2, axis=1) + np.sqrt(noise) * rng.normal(size=num_points)
    if constant_mean:
        mean = means.Constant(-0.4)
        mean_reference = lambda x: jnp.full(x.shape[:-1], -0.4)
    else:
        location = np.linspace(-0.2, 0.3, dimension)
        scale = np.linspace(1.5, 2.5, dimension)
        mean = means.NegativeQuadratic(maximum=0.5, location=jnp.asarray(location), scale=jnp.asarray(scale))

        def mean_reference(x):
            total = 0.0
            for d in range(dimension):
                total = total + ((x[..., d] - location[d]) / scale[d]) ** 2
            return 0.5 - 0.5 * total

    Z = X[:num_inducing] + 0.1 * rng.normal(size=(num_inducing, dimension))
    return make_kernel(name, dimension), mean, mean_reference, X, y, noise, Z


class DensePosterior:
    """μ(x) = m(x) + k(x, C) a and Cov(x, x′) = k(x, x′) − k(x, C) W k(C, x′), from numpy inverses:
    C = X, a = (K + D)⁻¹(y − m(X)), W = (K + D)⁻¹ for the exact GP, and
    C = Z, a = Σ K_ZX D⁻¹(y − m(X)), W = K_ZZ⁻¹ − Σ, Σ = (K_ZZ + K_ZX D⁻¹ K_XZ)⁻¹ for SGPR."""

    def __init__(self, kernel, mean_reference, X, y, noise, Z=None):
        evaluate = reference_kernel(kernel)
        gram = lambda A, B: np.asarray(evaluate(A[:, None, :], B[None, :, :]))
        residual = y - np.asarray(mean_reference(X))
        if Z is None:
            inverse = np.linalg.inv(gram(X, X) + np.diag(noise))
            self.centres, self.weights, self.matrix = X, inverse @ residual, inverse
        else:
            cross = gram(Z, X)
            sigma = np.linalg.inv(gram(Z, Z) + cross @ np.diag(1.0 / noise) @ cross.T)
            self.centres = Z
            self.weights = sigma @ cross @ (residual / noise)
            self.matrix = np.linalg.inv(gram(Z, Z)) - sigma
        self.evaluate = evaluate
        self.mean_reference = mean_reference


def bq_by_monte_carlo(posteriors, reference, rng):
    """For each dense posterior: estimates and standard errors of (E[I_k], Cov(I_j, I_m),
    E[I], Var[I]), from the same draws. Posteriors sharing a kernel share k(x, x′)."""
    weights = reference.weights
    num_components = weights.shape[0]

    def statistic(draws):
        first, second = draws
        num_draws = first.shape[1]
        columns, pair_values = [], {}
        for posterior in posteriors:
            evaluate, centres = posterior.evaluate, posterior.centres
            if id(evaluate) not in pair_values:
                pair_values[id(evaluate)] = evaluate(first[:, None], second[None, :])
            to_centres_first = evaluate(first[:, :, None, :], centres[None, None])
            to_centres_second = evaluate(second[:, :, None, :], centres[None, None])
            component_means = posterior.mean_reference(first) + to_centres_first @ posterior.weights
            covariances = pair_values[id(evaluate)] - jnp.einsum(
                "jnp,pq,mnq->jmn", to_centres_first, posterior.matrix, to_centres_second
            )
            columns += [
                component_means.T,
                covariances.transpose(2, 0, 1).reshape(num_draws, -1),
                (weights @ component_means)[:, None],
                jnp.einsum("j,jmn,m->n", weights, covariances, weights)[:, None],
            ]
        return jnp.concatenate(columns, axis=1)

    estimate, error = monte_carlo(
        statistic, lambda rng, n: (draw_components(reference, rng, n), draw_components(reference, rng, n)), rng
    )
    shapes = [(num_components,), (num_components, num_components), (), ()]
    sizes = [int(np.prod(shape)) for shape in shapes]
    offsets = np.cumsum(sizes * len(posteriors))[:-1]
    parts = list(zip(np.split(estimate, offsets), np.split(error, offsets)))
    return [
        [(mean.reshape(shape), sd.reshape(shape)) for (mean, sd), shape in zip(parts[4 * i : 4 * i + 4], shapes)]
        for i in range(len(posteriors))
    ]


@eqx.filter_jit
def bq_for_kernels(kernels_, mean, X, y, noise, Z, measure):
    """`integrate_components` of the exact and the sparse posterior, per kernel (`integrate`
    is their weighted combination: `test_integrate_is_the_weighted_combination_of_components`)."""
    results = []
    for kernel in kernels_:
        for posterior in (gp.condition(kernel, mean, X, y, noise), sparse.condition(kernel, mean, X, y, noise, Z)):
            component_means, covariance = quadrature.integrate_components(posterior, measure)
            results.append((component_means, covariance))
    return results


# Each kernel meets both kinds of measure and (nearly) every dimension; the embeddings
# themselves are checked for every combination in test_quadrature.py, and the BQ algebra
# on top of them does not depend on the kernel.
BQ_CASES = {
    ("full", 1): ("squared_exponential", 1.5),
    ("full", 2): (0.5, 2.5),
    ("full", 6): ("squared_exponential",),
    ("mixture", 1): (0.5, 2.5),
    ("mixture", 2): ("squared_exponential", 1.5),
    ("mixture", 6): (0.5, 1.5, 2.5),
}


@pytest.mark.parametrize("kind, dimension", list(BQ_CASES))
def test_bq_mean_and_variance_match_monte_carlo(kind, dimension):
    """Exact and sparse posteriors with SE and product Matérn ν = 1/2, 3/2, 5/2 kernels,
    against a full-covariance Gaussian and a 3-component mixture of diagonal Gaussians
    (each component's own integral, from `integrate_components`, is checked too)."""
    names = BQ_CASES[kind, dimension]
    seed = 100 * dimension + ("full", "mixture").index(kind)
    rng = np.random.default_rng(seed)
    # A negative-quadratic prior mean, and a constant one in the 1-D mixture case.
    _, mean, mean_reference, X, y, noise, Z = make_bq_problem(
        "squared_exponential",
        dimension,
        seed,
        num_points=7,
        num_inducing=3,
        constant_mean=(kind, dimension) == ("mixture", 1),
    )
    kernels_ = [make_kernel(name, dimension) for name in names]
    measure, reference = make_measure(kind, dimension, seed)
    weights = reference.weights
    values = bq_for_kernels(kernels_, mean, jnp.asarray(X), jnp.asarray(y), jnp.asarray(noise), jnp.asarray(Z), measure)
    posteriors, labels = [], []
    for name, kernel in zip(names, kernels_):
        for label, inducing in (("exact", None), ("sparse", Z)):
            posteriors.append(DensePosterior(kernel, mean_reference, X, y, noise, inducing))
            labels.append(f"{name} {label}")
    estimates = bq_by_monte_carlo(posteriors, reference, rng)
    for label, (component_means, covariance), posterior_estimates in zip(labels, values, estimates):
        # The mixture integral's mean and variance are the weighted combinations of these.
        combined = (component_means, covariance, weights @ component_means, weights @ covariance @ weights)
        fields = ("component means", "component covariance", "mean", "variance")
        for field, item, (estimate, error) in zip(fields, combined, posterior_estimates):
            assert_within_standard_errors(item, estimate, error, f"{label} {field}")


@eqx.filter_jit
def _integrate(posteriors, measures):
    """(integrate_components, integrate) for every posterior and measure."""
    return [
        [
            (quadrature.integrate_components(posterior, measure), quadrature.integrate(posterior, measure))
            for measure in measures
        ]
        for posterior in posteriors
    ]


def _problem(name="squared_exponential", seed=3, num_points=12):
    kernel, mean, _, X, y, noise, Z = make_bq_problem(name, 2, seed, num_points=num_points)
    return kernel, mean, jnp.asarray(X), jnp.asarray(y), jnp.asarray(noise), jnp.asarray(Z)


def test_sparse_with_inducing_points_at_the_data_equals_exact():
    """Mean (K,) and covariance (K, K) of the component integrals agree to 1e-8."""
    measures = [make_measure("full", 2, 4)[0], make_measure("mixture", 2, 4)[0]]
    for name in ("squared_exponential", 2.5):
        kernel, mean, X, y, noise, _ = _problem(name, num_points=15)
        exact = gp.condition(kernel, mean, X, y, noise)
        approximate = sparse.condition(kernel, mean, X, y, noise, X, inducing_jitter=0.0)
        exact_results, sparse_results = _integrate((exact, approximate), measures)
        for exact_result, sparse_result in zip(exact_results, sparse_results):
            for a, b in zip(jax.tree_util.tree_leaves(exact_result), jax.tree_util.tree_leaves(sparse_result)):
                np.testing.assert_allclose(a, b, atol=1e-8)


def test_integrate_is_the_weighted_combination_of_components():
    kernel, mean, X, y, noise, Z = _problem()
    posteriors = (gp.condition(kernel, mean, X, y, noise), sparse.condition(kernel, mean, X, y, noise, Z))
    measures = [make_measure(kind, 2, 6) for kind in ("full", "mixture")]
    for per_measure in _integrate(posteriors, [measure for measure, _ in measures]):
        for ((component_means, covariance), (total, variance)), (_, reference) in zip(per_measure, measures):
            np.testing.assert_allclose(total, reference.weights @ component_means, rtol=1e-13)
            np.testing.assert_allclose(variance, reference.weights @ covariance @ reference.weights, rtol=1e-12)
            np.testing.assert_allclose(covariance, covariance.T, atol=1e-15)
            assert np.all(np.linalg.eigvalsh(np.asarray(covariance)) > -1e-12)
            assert variance >= 0.0


def test_masked_observations_and_components_contribute_nothing(getkey):
    kernel, mean, X, y, noise, Z = _problem(seed=7)
    keep = np.arange(X.shape[0]) % 3 != 0
    keep_inducing = np.array([True, True, False, True, False, True])
    weights = jnp.array([0.3, 0.9, 0.2, 0.5])
    component_means = jax.random.normal(getkey(), (4, 2))
    variances = jax.random.uniform(getkey(), (4, 2), minval=0.1, maxval=0.6)
    component_mask = jnp.array([True, False, True, True])
    masked_measure = mixtures.GaussianMixture.from_moments(weights, component_means, variances, mask=component_mask)
    subset_measure = mixtures.GaussianMixture.from_moments(
        weights[component_mask], component_means[component_mask], variances[component_mask]
    )
    masked = (
        gp.condition(kernel, mean, X, y, noise, mask=jnp.asarray(keep), capacity=X.shape[0] + 3),
        sparse.condition(kernel, mean, X, y, noise, Z, mask=jnp.asarray(keep), inducing_mask=keep_inducing),
    )
    subset = (
        gp.condition(kernel, mean, X[keep], y[keep], noise[keep]),
        sparse.condition(kernel, mean, X[keep], y[keep], noise[keep], Z[keep_inducing]),
    )
    for masked_results, subset_results in zip(
        _integrate(masked, [masked_measure]), _integrate(subset, [subset_measure])
    ):
        for a, b in zip(masked_results[0][1], subset_results[0][1]):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@eqx.filter_jit
def _after_update(posterior, x, y, noise, measure):
    return quadrature.integrate(gp.update(posterior, x, y, noise), measure)


def test_rank_one_update_then_integrate_equals_refit():
    kernel, mean, X, y, noise, _ = _problem(seed=8)
    measure, _ = make_measure("mixture", 2, 8)
    start = gp.condition(kernel, mean, X[:-1], y[:-1], noise[:-1], capacity=X.shape[0])
    updated = _after_update(start, X[-1], y[-1], noise[-1], measure)
    refit = _integrate((gp.condition(kernel, mean, X, y, noise),), [measure])[0][0][1]
    for a, b in zip(updated, refit):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_more_data_never_increases_the_variance():
    kernel, mean, X, y, noise, _ = _problem(seed=9)
    measure, _ = make_measure("full", 2, 9)
    posteriors = tuple(
        gp.condition(kernel, mean, X, y, noise, mask=jnp.arange(X.shape[0]) < size) for size in (0, 3, 6, 12)
    )
    variances = [results[0][1][1] for results in _integrate(posteriors, [measure])]
    assert all(later <= earlier + 1e-12 for earlier, later in zip(variances[:-1], variances[1:]))
    assert variances[-1] < 0.5 * variances[0]


# ---------------------------------------------------------------------------------------
# Bad input.
# ---------------------------------------------------------------------------------------


def test_bad_posterior_or_measure_raises_naming_the_argument():
    kernel, mean, X, y, noise, Z = _problem()
    posterior = gp.condition(kernel, mean, X, y, noise)
    approximate = sparse.condition(kernel, mean, X, y, noise, Z)
    measure, _ = make_measure("mixture", 2, 0)
    wrong_dimension, _ = make_measure("mixture", 3, 0)
    with pytest.raises(ValueError, match="`measure`"):
        quadrature.integrate(posterior, jnp.zeros((3, 2)))
    with pytest.raises(ValueError, match="`posterior`.*SquaredExponential"):
        quadrature.integrate(kernel, measure)
    with pytest.raises(ValueError, match="`measure` has dimension 3"):
        quadrature.integrate_components(posterior, wrong_dimension)
    with pytest.raises(ValueError, match="`measure` has dimension 3"):
        quadrature.integrate(approximate, wrong_dimension)


# ---------------------------------------------------------------------------------------
# Transform matrix (SE kernel: the transforms do not depend on the kernel).
# ---------------------------------------------------------------------------------------


def _problem_batch(key, size, dimension=2, num_points=10):
    keys = jax.random.split(key, 3)
    X = jax.random.normal(keys[0], (size, num_points, dimension))
    y = jnp.sin(X[..., 0]) + 0.1 * jax.random.normal(keys[1], (size, num_points))
    noise = 0.01 + 0.05 * jax.random.uniform(keys[2], (size, num_points))
    return X, y, noise


def test_jit_traces_once_for_new_values(getkey):
    kernel, mean, _, _, _, _ = _problem()

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def both(X, y, noise, measure, gaussian):
        exact = gp.condition(kernel, mean, X, y, noise)
        approximate = sparse.condition(kernel, mean, X, y, noise, X[:4])
        return (
            quadrature.integrate(exact, measure),
            quadrature.integrate_components(approximate, measure),
            quadrature.integrate(approximate, gaussian),
        )

    for _ in range(3):
        X, y, noise = (array[0] for array in _problem_batch(getkey(), 1))
        measure = mixtures.GaussianMixture.from_moments(
            jax.random.uniform(getkey(), (3,), minval=0.2, maxval=1.0),
            jax.random.normal(getkey(), (3, 2)),
            jax.random.uniform(getkey(), (3, 2), minval=0.1, maxval=0.8),
        )
        scale = jax.random.uniform(getkey(), minval=0.2, maxval=1.0)
        gaussian = mixtures.MultivariateNormal(jax.random.normal(getkey(), (2,)), scale * jnp.eye(2))
        outputs = both(X, y, noise, measure, gaussian)
        assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree_util.tree_leaves(outputs))


def test_vmap_over_datasets_equals_loop(getkey):
    kernel, mean, _, _, _, _ = _problem()
    measure, _ = make_measure("mixture", 2, 1)
    X, y, noise = _problem_batch(getkey(), 4)

    def both(X, y, noise):
        exact = gp.condition(kernel, mean, X, y, noise)
        approximate = sparse.condition(kernel, mean, X, y, noise, X[:5])
        return quadrature.integrate(exact, measure), quadrature.integrate_components(approximate, measure)

    batched = eqx.filter_jit(jax.vmap(both))(X, y, noise)
    single = eqx.filter_jit(both)
    for index in range(4):
        expected = single(X[index], y[index], noise[index])
        for a, b in zip(jax.tree_util.tree_leaves(batched), jax.tree_util.tree_leaves(expected)):
            np.testing.assert_allclose(a[index], b, rtol=1e-10, atol=1e-13)


def test_gradients_match_finite_differences():
    """With respect to the kernel and mean hyperparameters, the noise, the inducing inputs
    and the mixture parameters, through exact and sparse posteriors."""
    kernel, mean, _, X, y, noise, Z = make_bq_problem("squared_exponential", 2, 10, num_points=8, num_inducing=4)
    measure, _ = make_measure("mixture", 2, 10)
    params, static = eqx.partition((kernel, mean, jnp.asarray(noise), jnp.asarray(Z), measure), eqx.is_inexact_array)

    @eqx.filter_jit
    def objective(params):
        kernel, mean, noise, Z, measure = eqx.combine(params, static)
        exact = gp.condition(kernel, mean, jnp.asarray(X), jnp.asarray(y), noise)
        approximate = sparse.condition(kernel, mean, jnp.asarray(X), jnp.asarray(y), noise, Z)
        exact_value, exact_variance = quadrature.integrate(exact, measure)
        sparse_value, sparse_variance = quadrature.integrate(approximate, measure)
        return exact_value + 3.0 * exact_variance - 2.0 * sparse_value + 5.0 * sparse_variance

    np.testing.assert_allclose(
        autodiff_gradient(objective, params), finite_difference_gradient(objective, params), rtol=1e-5, atol=1e-7
    )


def test_float32_smoke(getkey):
    kernel = kernels.ProductMatern(2.5, lengthscale=jnp.array([0.9, 1.2], jnp.float32), variance=jnp.float32(1.3))
    mean = means.NegativeQuadratic(
        maximum=jnp.float32(0.5), location=jnp.zeros(2, jnp.float32), scale=jnp.full(2, 2.0, jnp.float32)
    )
    X, y, noise = (array[0].astype(jnp.float32) for array in _problem_batch(getkey(), 1))
    mixture = mixtures.GaussianMixture.from_moments(
        jnp.array([0.4, 0.6], jnp.float32),
        jnp.array([[0.0, 0.5], [-1.0, 0.2]], jnp.float32),
        jnp.array([[0.3, 0.4], [0.2, 0.5]], jnp.float32),
    )
    gaussian = mixtures.MultivariateNormal(
        jnp.array([0.1, -0.2], jnp.float32), jnp.array([[0.5, 0.2], [0.2, 0.4]], jnp.float32)
    )

    @eqx.filter_jit
    def outputs(X, y, noise):
        exact = gp.condition(kernel, mean, X, y, noise)
        approximate = sparse.condition(kernel, mean, X, y, noise, X[:4])
        return [
            quadrature.integrate(exact, mixture),
            quadrature.integrate(approximate, gaussian),
            quadrature.integrate_components(approximate, mixture),
        ]

    for leaf in jax.tree_util.tree_leaves(outputs(X, y, noise)):
        assert leaf.dtype == jnp.float32
        assert np.all(np.isfinite(leaf))
