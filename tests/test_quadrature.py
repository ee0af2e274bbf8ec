"""Kernel mean embeddings and Gaussian expectations of kernels against Monte Carlo
(10⁶ draws, within 4 standard errors), high-precision 1-D quadrature and closed forms.

The references are independent of the library: numpy draws from the measures' defining
parameters and hand-written kernel formulas. Library calls go through `eqx.filter_jit`
(the embedding functions are not jitted themselves, and eager dispatch is slow).
"""

import math
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate as scipy_integrate
from scipy.special import ndtr

from gpcompose import gp, kernels, means, mixtures, quadrature
from gpcompose.parameters import Positive

from .helpers import autodiff_gradient, finite_difference_gradient

NUM_SAMPLES = 1_000_000
NUM_CHUNKS = 10
STANDARD_ERRORS = 4.0
KERNEL_NAMES = ("squared_exponential", 0.5, 1.5, 2.5)
MEASURE_KINDS = ("full", "diagonal", "mixture")


# ---------------------------------------------------------------------------------------
# Independent references: kernels, measures, samplers and a chunked Monte Carlo.
# ---------------------------------------------------------------------------------------


def make_kernel(name, dimension):
    """SE or product Matérn with ARD lengthscales in [0.8, 1.4] and variance 1.3."""
    lengthscale = jnp.linspace(0.8, 1.4, dimension)
    if name == "squared_exponential":
        return kernels.SquaredExponential(lengthscale=lengthscale, variance=1.3)
    return kernels.ProductMatern(name, lengthscale=lengthscale, variance=1.3)


def matern_correlation_reference(smoothness, distance):
    """ρ_ν(r) for numpy or jax arrays (Rasmussen & Williams eq. 4.17)."""
    xp = np if isinstance(distance, (float, np.floating, np.ndarray)) else jnp
    if smoothness == 0.5:
        return xp.exp(-distance)
    if smoothness == 1.5:
        scaled = math.sqrt(3.0) * distance
        return (1.0 + scaled) * xp.exp(-scaled)
    scaled = math.sqrt(5.0) * distance
    return (1.0 + scaled + scaled**2 / 3.0) * xp.exp(-scaled)


def reference_kernel(kernel):
    """(A, B) ↦ k(A[..., :], B[..., :]) elementwise over broadcast leading axes (same rank)
    from the textbook formulas, with the hyperparameters read once; traceable by jax."""
    lengthscale = [float(value) for value in np.ravel(np.asarray(kernel.lengthscale.value))]
    variance = float(kernel.variance.value)
    squared_exponential = isinstance(kernel, kernels.SquaredExponential)
    smoothness = None if squared_exponential else kernel.smoothness

    def evaluate(A, B):
        xp = np if isinstance(A, np.ndarray) and isinstance(B, np.ndarray) else jnp
        dimension = max(A.shape[-1], B.shape[-1])
        scales = lengthscale * dimension if len(lengthscale) == 1 else lengthscale
        if squared_exponential:
            total = 0.0
            for d in range(dimension):
                total = total + ((A[..., d] - B[..., d]) / scales[d]) ** 2
            return variance * xp.exp(-0.5 * total)
        product = 1.0
        for d in range(dimension):
            product = product * matern_correlation_reference(smoothness, xp.abs(A[..., d] - B[..., d]) / scales[d])
        return variance * product

    return evaluate


class Reference(NamedTuple):
    """A Gaussian mixture as plain numpy arrays (full covariance matrices)."""

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray


def make_measure(kind, dimension, seed):
    """A `MultivariateNormal`, a one-component diagonal `GaussianMixture` or a 3-component
    one, with its numpy reference."""
    rng = np.random.default_rng(seed)
    if kind == "full":
        mean = 0.5 * rng.normal(size=dimension)
        factor = rng.normal(size=(dimension, dimension))
        covariance = 0.3 * factor @ factor.T / dimension + 0.2 * np.eye(dimension)
        measure = mixtures.MultivariateNormal(jnp.asarray(mean), jnp.asarray(covariance))
        return measure, Reference(np.ones(1), mean[None], covariance[None])
    num_components = 1 if kind == "diagonal" else 3
    weights = np.array([1.0]) if kind == "diagonal" else np.array([0.5, 0.3, 0.2])
    component_means = 0.8 * rng.normal(size=(num_components, dimension))
    variances = rng.uniform(0.1, 0.6, size=(num_components, dimension))
    measure = mixtures.GaussianMixture.from_moments(
        jnp.asarray(weights), jnp.asarray(component_means), jnp.asarray(variances)
    )
    covariances = np.stack([np.diag(variance) for variance in variances])
    return measure, Reference(weights, component_means, covariances)


def draw_components(reference, rng, num_samples):
    """(K, n, D): n independent draws from every component."""
    lowers = np.linalg.cholesky(reference.covariances)
    noise = rng.standard_normal((reference.weights.shape[0], num_samples, reference.means.shape[1]))
    return reference.means[:, None, :] + noise @ np.swapaxes(lowers, 1, 2)


def draw_mixture(reference, rng, num_samples):
    """(n, D): n independent draws from the mixture."""
    components = rng.choice(reference.weights.shape[0], size=num_samples, p=reference.weights)
    return draw_components(reference, rng, num_samples)[components, np.arange(num_samples)]


@eqx.filter_jit
def _chunk_moments(statistic, draws):
    values = statistic(draws)
    return jnp.mean(values, axis=0), jnp.var(values, axis=0)


def monte_carlo(statistic, draw, rng, num_samples=NUM_SAMPLES, num_chunks=NUM_CHUNKS):
    """Mean and standard error of `statistic(draw(rng, n))` (one row per draw) over
    `num_samples` draws in `num_chunks` equal chunks; `statistic` runs under jit."""
    chunk = num_samples // num_chunks
    moments = [_chunk_moments(statistic, draw(rng, chunk)) for _ in range(num_chunks)]
    chunk_means = np.stack([np.asarray(mean) for mean, _ in moments])
    chunk_variances = np.stack([np.asarray(variance) for _, variance in moments])
    mean = chunk_means.mean(axis=0)
    variance = chunk_variances.mean(axis=0) + chunk_means.var(axis=0)
    return mean, np.sqrt(variance / (chunk * num_chunks))


def assert_within_standard_errors(value, estimate, standard_error, name=""):
    value, estimate = np.asarray(value), np.asarray(estimate)
    assert value.shape == estimate.shape, (name, value.shape, estimate.shape)
    z = (value - estimate) / standard_error
    assert np.all(np.abs(z) <= STANDARD_ERRORS), f"{name}: {value} vs MC {estimate} (z = {z})"


# Jitted versions of the public functions.
kernel_mean = eqx.filter_jit(quadrature.kernel_mean)
kernel_double_mean = eqx.filter_jit(quadrature.kernel_double_mean)
component_kernel_means = eqx.filter_jit(quadrature.component_kernel_means)
component_kernel_double_means = eqx.filter_jit(quadrature.component_kernel_double_means)
expected_kernel = eqx.filter_jit(quadrature.expected_kernel)


@eqx.filter_jit
def all_embeddings(kernel, measure, Z):
    return (
        quadrature.component_kernel_means(kernel, measure, Z),
        quadrature.component_kernel_double_means(kernel, measure, measure),
        quadrature.kernel_mean(kernel, measure, Z),
        quadrature.kernel_double_mean(kernel, measure, measure),
    )


# ---------------------------------------------------------------------------------------
# Embeddings against Monte Carlo.
# ---------------------------------------------------------------------------------------


def embeddings_by_monte_carlo(kernels_, reference, Z, rng):
    """Monte Carlo estimates and standard errors of z_{k,i}, Γ_{j,m}, z_i and Γ for each kernel.

    Component k is drawn n times (A_k) and again independently (B_k); z_{k,i} averages
    k(A_k, Z_i), Γ_{j,m} averages k(A_j, B_m), and the mixture quantities average the
    stratified per-draw combinations Σ_k w_k k(A_k, Z_i) and Σ_{j,m} w_j w_m k(A_j, B_m).
    """
    weights = reference.weights
    num_components, num_points = weights.shape[0], Z.shape[0]
    evaluators = [reference_kernel(kernel) for kernel in kernels_]

    def statistic(draws):
        first, second = draws
        num_draws = first.shape[1]
        columns = []
        for evaluate in evaluators:
            to_points = evaluate(first[:, :, None, :], Z[None, None])
            pairs = evaluate(first[:, None], second[None, :])
            columns += [
                to_points.transpose(1, 0, 2).reshape(num_draws, -1),
                pairs.transpose(2, 0, 1).reshape(num_draws, -1),
                jnp.einsum("k,knm->nm", weights, to_points),
                jnp.einsum("j,jkn,k->n", weights, pairs, weights)[:, None],
            ]
        return jnp.concatenate(columns, axis=1)

    estimate, error = monte_carlo(
        statistic, lambda rng, n: (draw_components(reference, rng, n), draw_components(reference, rng, n)), rng
    )
    shapes = [(num_components, num_points), (num_components, num_components), (num_points,), ()]
    sizes = [int(np.prod(shape)) for shape in shapes]
    offsets = np.cumsum(sizes * len(evaluators))[:-1]
    parts = list(zip(np.split(estimate, offsets), np.split(error, offsets)))
    return [
        [(mean.reshape(shape), sd.reshape(shape)) for (mean, sd), shape in zip(parts[4 * i : 4 * i + 4], shapes)]
        for i in range(len(evaluators))
    ]


def _embedding_cases():
    cases = [("diagonal", 2)]
    cases += [(kind, dimension) for kind in ("full", "mixture") for dimension in (1, 2, 6)]
    return cases


@eqx.filter_jit
def embeddings_for_kernels(kernels, measure, Z):
    return [all_embeddings(kernel, measure, Z) for kernel in kernels]


@pytest.mark.parametrize("kind, dimension", _embedding_cases())
def test_embeddings_match_monte_carlo(kind, dimension):
    """SE and product Matérn ν = 1/2, 3/2, 5/2 against full-covariance Gaussians, diagonal
    Gaussians and 3-component mixtures (each row of `component_kernel_means` is the
    embedding of one diagonal Gaussian, checked on its own). In D = 6 a full covariance
    is closed form only for SE (the product Matérn is an iterated integral there)."""
    names = KERNEL_NAMES if (kind, dimension) != ("full", 6) else ("squared_exponential",)
    seed = 1000 * dimension + MEASURE_KINDS.index(kind)
    rng = np.random.default_rng(seed)
    kernels_ = [make_kernel(name, dimension) for name in names]
    measure, reference = make_measure(kind, dimension, seed)
    Z = reference.means[0] + 0.7 * rng.normal(size=(3, dimension))
    values = embeddings_for_kernels(kernels_, measure, jnp.asarray(Z))
    estimates = embeddings_by_monte_carlo(kernels_, reference, Z, rng)
    labels = ("component_kernel_means", "component_kernel_double_means", "kernel_mean", "kernel_double_mean")
    for name, kernel_values, kernel_estimates in zip(names, values, estimates):
        for value, (estimate, error), label in zip(kernel_values, kernel_estimates, labels):
            assert_within_standard_errors(value, estimate, error, f"{name} {label}")


@eqx.filter_jit
def _cross_embeddings(kernels_, full, mixture):
    return [
        (
            quadrature.component_kernel_double_means(kernel, full, mixture),
            quadrature.kernel_double_mean(kernel, full, mixture),
            quadrature.kernel_double_mean(kernel, mixture, full),
        )
        for kernel in kernels_
    ]


def test_double_mean_between_a_gaussian_and_a_mixture_matches_monte_carlo():
    """Mixed measures: a full-covariance Gaussian against a diagonal mixture."""
    rng = np.random.default_rng(7)
    full, full_reference = make_measure("full", 2, 11)
    mixture, mixture_reference = make_measure("mixture", 2, 12)
    kernels_ = [make_kernel(name, 2) for name in KERNEL_NAMES]
    evaluators = [reference_kernel(kernel) for kernel in kernels_]
    estimate, error = monte_carlo(
        lambda draws: jnp.concatenate([evaluate(draws[0], draws[1]).T for evaluate in evaluators], axis=1),
        lambda rng, n: (draw_components(full_reference, rng, n), draw_components(mixture_reference, rng, n)),
        rng,
    )
    for index, (name, (cross, forward, backward)) in enumerate(
        zip(KERNEL_NAMES, _cross_embeddings(kernels_, full, mixture))
    ):
        assert cross.shape == (1, 3)
        part = slice(3 * index, 3 * index + 3)
        assert_within_standard_errors(cross[0], estimate[part], error[part], f"{name} cross double means")
        np.testing.assert_allclose(forward, cross[0] @ mixture_reference.weights, rtol=1e-12)
        np.testing.assert_allclose(backward, forward, rtol=1e-10)


def test_mixture_embeddings_are_weighted_sums_of_component_embeddings():
    measure, reference = make_measure("mixture", 2, 3)
    Z = jnp.asarray(np.random.default_rng(0).normal(size=(3, 2)))
    kernels_ = [make_kernel(name, 2) for name in KERNEL_NAMES]
    for components, doubles, mixture_mean, mixture_double in embeddings_for_kernels(kernels_, measure, Z):
        np.testing.assert_allclose(mixture_mean, reference.weights @ components, rtol=1e-13)
        np.testing.assert_allclose(mixture_double, reference.weights @ doubles @ reference.weights, rtol=1e-13)
        np.testing.assert_allclose(doubles, doubles.T, rtol=1e-13)


def test_masked_components_contribute_nothing():
    kernel = make_kernel("squared_exponential", 2)
    rng = np.random.default_rng(1)
    component_means = rng.normal(size=(4, 2))
    variances = rng.uniform(0.2, 0.5, size=(4, 2))
    weights = np.array([0.2, 0.5, 0.3, 0.9])
    mask = np.array([True, False, True, False])
    masked = mixtures.GaussianMixture.from_moments(weights, component_means, variances, mask=mask)
    subset = mixtures.GaussianMixture.from_moments(weights[mask], component_means[mask], variances[mask])
    Z = jnp.asarray(rng.normal(size=(3, 2)))
    masked_values, subset_values = all_embeddings(kernel, masked, Z), all_embeddings(kernel, subset, Z)
    np.testing.assert_allclose(masked_values[2], subset_values[2], rtol=1e-13)
    np.testing.assert_allclose(masked_values[3], subset_values[3], rtol=1e-13)
    np.testing.assert_allclose(masked_values[0][mask], subset_values[0], rtol=1e-13)


def test_non_stationary_kernel_uses_gauss_hermite_nodes_exactly():
    """E[Σ_d σ²_d x_d z_d] = Σ_d σ²_d μ_d z_d and E[x_aᵀ diag(σ²) x_b] = μ_aᵀ diag(σ²) μ_b:
    Gauss–Hermite is exact for these polynomials."""
    variance = np.array([0.7, 1.9])
    kernel = kernels.Linear(variance=jnp.asarray(variance))
    measure, reference = make_measure("mixture", 2, 4)
    full, full_reference = make_measure("full", 2, 5)
    Z = np.random.default_rng(2).normal(size=(4, 2))
    mixture_mean = reference.weights @ reference.means
    np.testing.assert_allclose(kernel_mean(kernel, measure, jnp.asarray(Z)), Z @ (variance * mixture_mean), rtol=1e-12)
    np.testing.assert_allclose(
        kernel_double_mean(kernel, measure, full), np.sum(variance * mixture_mean * full_reference.means[0]), rtol=1e-12
    )


# ---------------------------------------------------------------------------------------
# The closed-form 1-D Matérn primitive against high-precision quadrature.
# ---------------------------------------------------------------------------------------


def matern_expectation_by_quadrature(smoothness, lengthscale, delta, sd):
    """∫ ρ_ν(|τ|/ℓ) N(τ; δ, s²) dτ by adaptive quadrature split at 0, δ and near the kink,
    to a relative accuracy of about 1e-13 of the total."""

    def integrand(tau):
        density = math.exp(-0.5 * ((tau - delta) / sd) ** 2) / (sd * math.sqrt(2.0 * math.pi))
        return float(matern_correlation_reference(smoothness, abs(tau) / lengthscale)) * density

    lower, upper = delta - 40.0 * sd, delta + 40.0 * sd
    candidates = [0.0, delta] + [sign * scale * lengthscale for sign in (-1, 1) for scale in (10.0, 50.0)]
    breakpoints = sorted({lower, upper, *(point for point in candidates if lower < point < upper)})
    pieces = list(zip(breakpoints[:-1], breakpoints[1:]))
    # A rough pass gives the scale of the answer; pieces that contribute less than 1e-14 of
    # it need not be resolved to 1e-13 of their own (tiny) size.
    rough = sum(scipy_integrate.quad(integrand, a, b, epsrel=1e-6, limit=200, full_output=1)[0] for a, b in pieces)
    return sum(
        scipy_integrate.quad(integrand, a, b, epsabs=1e-14 * rough / len(pieces), epsrel=1e-13, limit=1000)[0]
        for a, b in pieces
    )


# (lengthscale, δ, s): ordinary values, δ far in either tail with a narrow Gaussian, and
# Gaussians far narrower and far wider (s = 1000 ℓ) than the kernel.
PRIMITIVE_POINTS = [
    (1.0, 0.3, 0.5),
    (0.7, -1.2, 2.0),
    (2.0, 0.01, 10.0),
    (0.3, 0.0, 0.05),
    (1.0, 60.0, 0.05),
    (1.0, -60.0, 0.05),
    (1.0, 5.0, 1e-3),
    (0.5, -3.0, 0.1),
    (1.0, 0.0, 30.0),
    (1.0, 0.0, 300.0),
    (1.0, 700.0, 1000.0),
]


SMOOTHNESSES = (0.5, 1.5, 2.5)


@eqx.filter_jit
def _primitive_for_all_smoothnesses(lengthscale, delta, variance):
    return [quadrature.matern_gaussian_expectation(nu, lengthscale, delta, variance) for nu in SMOOTHNESSES]


def test_matern_primitive_matches_quadrature():
    lengthscale, delta, sd = (jnp.array(column) for column in zip(*PRIMITIVE_POINTS))
    for smoothness, values in zip(SMOOTHNESSES, _primitive_for_all_smoothnesses(lengthscale, delta, sd**2)):
        for value, point in zip(values, PRIMITIVE_POINTS):
            reference = matern_expectation_by_quadrature(smoothness, *point)
            np.testing.assert_allclose(value, reference, rtol=1e-6, atol=1e-300, err_msg=str((smoothness, point)))


@eqx.filter_jit
def _primitive_values_and_gradients(points):
    results = []
    for nu in SMOOTHNESSES:
        function = lambda p, nu=nu: quadrature.matern_gaussian_expectation(nu, p[0], p[1], p[2])
        results.append((jax.vmap(function)(points), jax.vmap(jax.grad(function))(points)))
    return results


def test_matern_primitive_gradient_matches_finite_differences_of_quadrature():
    points = np.array([[1.0, 0.3, 0.25], [0.7, -1.2, 4.0], [1.0, 60.0, 0.0025], [1.0, 0.0, 9e4], [1.0, 700.0, 1e6]])
    for smoothness, (_, gradients) in zip(SMOOTHNESSES, _primitive_values_and_gradients(jnp.asarray(points))):
        for point, derivative in zip(points, np.asarray(gradients)):
            reference = np.zeros(3)
            for index in range(3):
                step = 1e-5 * max(abs(point[index]), 1.0)
                upper, lower = point.copy(), point.copy()
                upper[index] += step
                lower[index] -= step
                reference[index] = (
                    matern_expectation_by_quadrature(smoothness, upper[0], upper[1], math.sqrt(upper[2]))
                    - matern_expectation_by_quadrature(smoothness, lower[0], lower[1], math.sqrt(lower[2]))
                ) / (2 * step)
            scale = np.max(np.abs(reference))
            np.testing.assert_allclose(derivative, reference, rtol=1e-5, atol=1e-7 * scale, err_msg=str(point))


def test_matern_primitive_is_finite_at_extremes():
    """No NaN or inf in values or gradients, including where the value underflows."""
    points = jnp.array(
        [
            [1.0, 60.0, 0.0025],
            [1.0, -60.0, 0.0025],
            [0.1, 60.0, 0.0025],
            [1.0, 1e3, 1e-4],
            [1.0, 0.0, 1e6],
            [1.0, 0.0, 1e-12],
            [1e-3, 0.5, 1e4],
            [1e3, 0.5, 1e-4],
        ]
    )
    for values, gradients in _primitive_values_and_gradients(points):
        assert np.all(np.isfinite(values)) and np.all(values >= 0.0) and np.all(values <= 1.0)
        assert np.all(np.isfinite(gradients))


def test_matern_primitive_limits():
    """s → 0 gives the kernel at δ; the value is even in δ; for ν = 1/2 at δ = 0 it is
    2 e^{s²/(2ℓ²)} Φ(−s/ℓ) (BVBMC digest §2.3)."""
    sd, lengthscale = 0.6, 0.9
    deltas = jnp.array([0.0, 0.4, 2.5, -0.4, -2.5, 0.0, 0.0])
    variances = jnp.array([1e-14] * 5 + [0.3, sd**2])
    lengthscales = jnp.array([0.8] * 6 + [lengthscale])
    for smoothness, values in zip(SMOOTHNESSES, _primitive_for_all_smoothnesses(lengthscales, deltas, variances)):
        narrow = matern_correlation_reference(smoothness, np.abs(np.asarray(deltas[:5])) / 0.8)
        np.testing.assert_allclose(values[:5], narrow, rtol=1e-6)
    wide = _primitive_for_all_smoothnesses(jnp.full(4, 0.8), jnp.array([0.4, 2.5, -0.4, -2.5]), jnp.full(4, 0.3))
    for values in wide:
        np.testing.assert_allclose(values[:2], values[2:], rtol=1e-14)
    expected = 2.0 * math.exp(sd**2 / (2 * lengthscale**2)) * ndtr(-sd / lengthscale)
    np.testing.assert_allclose(
        _primitive_for_all_smoothnesses(lengthscales, deltas, variances)[0][6], expected, rtol=1e-13
    )


def test_matern_primitive_rejects_other_smoothness():
    with pytest.raises(ValueError, match="`smoothness`"):
        quadrature.matern_gaussian_expectation(1.0, jnp.array(1.0), jnp.array(0.0), jnp.array(1.0))


# ---------------------------------------------------------------------------------------
# expected_kernel: closed forms against each other and against the Gauss–Hermite fallback.
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "smoothness, kernel_class, rtol", [(1.5, kernels.Matern32, 1e-4), (2.5, kernels.Matern52, 1e-5)]
)
def test_gauss_hermite_fallback_for_isotropic_matern_matches_product_matern_in_one_dimension(
    smoothness, kernel_class, rtol
):
    """An isotropic Matérn in 1-D is the 1-D product Matérn; the Gauss–Hermite fallback
    converges to its closed form (slowly: ρ_ν is not smooth at 0)."""
    isotropic = kernel_class(lengthscale=0.7, variance=1.3)
    product = kernels.ProductMatern(smoothness, lengthscale=0.7, variance=1.3)
    for delta, variance in [(0.3, 0.5), (0.0, 0.1), (1.5, 2.0)]:
        delta, variance = jnp.array([delta]), jnp.array([variance])
        closed = expected_kernel(product, delta, variance)
        coarse = expected_kernel(isotropic, delta, variance, degree=16)
        fine = expected_kernel(isotropic, delta, variance, degree=200)
        np.testing.assert_allclose(fine, closed, rtol=rtol)
        assert abs(fine - closed) < abs(coarse - closed)


def test_gauss_hermite_fallback_matches_squared_exponential_closed_form():
    """SE(ℓ)·SE(ℓ) on shared dimensions does not factorise, so it goes through tensor
    Gauss–Hermite; it equals SE(ℓ/√2) with variance σ⁴ in closed form."""
    lengthscale = jnp.array([0.9, 1.4])
    single = kernels.SquaredExponential(lengthscale=lengthscale, variance=1.5)
    halved = kernels.SquaredExponential(lengthscale=lengthscale / math.sqrt(2.0), variance=2.25)
    delta = jnp.array([0.3, -0.5])
    for covariance in (jnp.array([0.4, 0.9]), jnp.array([[0.4, 0.25], [0.25, 0.9]])):
        np.testing.assert_allclose(
            expected_kernel(single * single, delta, covariance), expected_kernel(halved, delta, covariance), rtol=1e-10
        )


def test_squared_exponential_full_and_diagonal_covariances_agree():
    kernel = make_kernel("squared_exponential", 3)
    delta = jnp.array([0.2, -0.4, 1.1])
    variances = jnp.array([0.3, 0.8, 1.7])
    np.testing.assert_allclose(
        expected_kernel(kernel, delta, variances), expected_kernel(kernel, delta, jnp.diag(variances)), rtol=1e-13
    )


@eqx.filter_jit
def _full_and_diagonal(kernels_, deltas, variances):
    return [
        jax.vmap(
            lambda delta, variance, kernel=kernel: (
                quadrature.expected_kernel(kernel, delta, jnp.diag(variance)),
                quadrature.expected_kernel(kernel, delta, variance),
            )
        )(deltas[:, : kernel.lengthscale.value.shape[0]], variances[:, : kernel.lengthscale.value.shape[0]])
        for kernel in kernels_
    ]


def test_product_matern_full_covariance_reduces_to_the_diagonal_closed_form():
    """The iterated integral for a full covariance, given a diagonal one, in D = 1, 2, 3
    (the smoothness only changes the 1-D primitive, checked against quadrature above)."""
    kernels_ = [
        kernels.ProductMatern(smoothness, lengthscale=jnp.linspace(0.5, 1.2, dimension), variance=1.3)
        for smoothness, dimension in ((0.5, 1), (0.5, 2), (0.5, 3), (1.5, 2), (2.5, 3))
    ]
    deltas = jnp.stack([jnp.linspace(-0.3, 0.8, 3), jnp.zeros(3), jnp.linspace(-5.0, 3.0, 3)])
    variances = jnp.stack([jnp.linspace(0.2, 1.5, 3), jnp.full(3, 0.01), jnp.full(3, 4.0)])
    for full, diagonal in _full_and_diagonal(kernels_, deltas, variances):
        np.testing.assert_allclose(full, diagonal, rtol=1e-10)


def test_sums_products_and_constants_combine_closed_forms():
    se = make_kernel("squared_exponential", 2)
    matern = make_kernel(2.5, 2)
    # Kernels on disjoint dimensions factorise: E[k₁(τ₁) k₂(τ₂)] = E[k₁(τ₁)] E[k₂(τ₂)].
    left = kernels.SquaredExponential(lengthscale=0.8, active_dims=(0,))
    right = kernels.ProductMatern(1.5, lengthscale=1.1, active_dims=(1,))
    delta, variances = jnp.array([0.3, -0.2]), jnp.array([0.5, 0.7])

    @eqx.filter_jit
    def values(delta, variances):
        expect = lambda kernel: quadrature.expected_kernel(kernel, delta, variances)
        return (
            expect(se),
            expect(matern),
            expect(se + matern),
            expect(2.5 * matern),
            expect(kernels.Constant(0.7)),
            expect(left * right),
            expect(left),
            expect(right),
            quadrature.expected_kernel(kernels.SquaredExponential(lengthscale=0.8), delta[:1], variances[:1]),
        )

    se_value, matern_value, total, scaled, constant, product, left_value, right_value, one_d = values(delta, variances)
    np.testing.assert_allclose(total, se_value + matern_value, rtol=1e-13)
    np.testing.assert_allclose(scaled, 2.5 * matern_value, rtol=1e-13)
    np.testing.assert_allclose(constant, 0.7, rtol=1e-15)
    np.testing.assert_allclose(product, left_value * right_value, rtol=1e-13)
    np.testing.assert_allclose(left_value, one_d, rtol=1e-13)


# ---------------------------------------------------------------------------------------
# Mean-function integrals.
# ---------------------------------------------------------------------------------------


class _Sinusoid(means.AbstractMean):
    """A mean with no closed-form integral (Gauss–Hermite path)."""

    def evaluate(self, x):
        return jnp.sin(x[0]) + 0.5 * jnp.cos(2.0 * x[1])


@eqx.filter_jit
def _prior_integrals(kernel, means_, X, measures):
    """`integrate` of the prior (every observation masked out) for every mean and measure."""
    results = []
    for mean in means_:
        prior = gp.condition(kernel, mean, X, jnp.zeros(X.shape[0]), 0.1, mask=jnp.zeros(X.shape[0], bool))
        results.append([quadrature.integrate(prior, measure) for measure in measures])
    return results, [quadrature.kernel_double_mean(kernel, measure, measure) for measure in measures]


def test_prior_integral_of_the_mean_function_matches_monte_carlo():
    """With every observation masked out the posterior is the prior, so `integrate`
    returns (∫ m q, Γ): the constant and negative-quadratic closed forms (per-dimension and
    scalar location and scale) and a generic mean (Gauss–Hermite), against Monte Carlo
    over full-covariance, diagonal and mixture measures."""
    location, scale = np.array([0.3, -0.4]), np.array([1.5, 0.8])
    means_ = [
        means.Constant(1.7),
        means.NegativeQuadratic(maximum=0.5, location=jnp.asarray(location), scale=jnp.asarray(scale)),
        means.NegativeQuadratic(maximum=-0.2, location=0.1, scale=1.3),
        _Sinusoid(),
    ]
    references = [
        None,
        lambda x: 0.5 - 0.5 * jnp.sum(((x - location[None]) / scale[None]) ** 2, axis=1),
        lambda x: -0.2 - 0.5 * jnp.sum(((x - 0.1) / 1.3) ** 2, axis=1),
        lambda x: jnp.sin(x[:, 0]) + 0.5 * jnp.cos(2.0 * x[:, 1]),
    ]
    rng = np.random.default_rng(3)
    kernel = make_kernel("squared_exponential", 2)
    X = jnp.asarray(rng.normal(size=(4, 2)))
    measures = [make_measure(kind, 2, 21 + index) for index, kind in enumerate(MEASURE_KINDS)]
    integrals, doubles = _prior_integrals(kernel, means_, X, [measure for measure, _ in measures])
    for mean, mean_reference, per_measure in zip(means_, references, integrals):
        for (_, reference), (value, variance), double in zip(measures, per_measure, doubles):
            np.testing.assert_allclose(variance, double, rtol=1e-12)
            if mean_reference is None:
                np.testing.assert_allclose(value, 1.7, rtol=1e-14)
                continue
            estimate, error = monte_carlo(mean_reference, lambda rng, n: draw_mixture(reference, rng, n), rng)
            assert_within_standard_errors(value, estimate, error, type(mean).__name__)


# ---------------------------------------------------------------------------------------
# Bad input.
# ---------------------------------------------------------------------------------------


def test_shape_and_type_errors_name_the_argument():
    kernel = make_kernel("squared_exponential", 2)
    measure, _ = make_measure("mixture", 2, 0)
    other, _ = make_measure("mixture", 3, 0)
    with pytest.raises(ValueError, match="`Z`.*3 columns"):
        quadrature.kernel_mean(kernel, measure, jnp.zeros((4, 3)))
    with pytest.raises(ValueError, match="`Z`"):
        quadrature.component_kernel_means(kernel, measure, jnp.zeros(2))
    with pytest.raises(ValueError, match="`measure`.*ArrayImpl"):
        quadrature.kernel_mean(kernel, jnp.zeros((3, 2)), jnp.zeros((4, 2)))
    with pytest.raises(ValueError, match="`measure`.*str"):
        quadrature.kernel_double_mean(kernel, measure, "not a measure")
    with pytest.raises(ValueError, match="`measure_a` and `measure_b`"):
        quadrature.kernel_double_mean(kernel, measure, other)
    with pytest.raises(ValueError, match="`kernel`.*not stationary"):
        quadrature.expected_kernel(kernels.Linear(), jnp.zeros(2), jnp.ones(2))


# ---------------------------------------------------------------------------------------
# Transform matrix.
# ---------------------------------------------------------------------------------------


def _random_mixture(key, num_components=3, dimension=2):
    weight_key, mean_key, variance_key = jax.random.split(key, 3)
    return mixtures.GaussianMixture.from_moments(
        jax.random.uniform(weight_key, (num_components,), minval=0.2, maxval=1.0),
        jax.random.normal(mean_key, (num_components, dimension)),
        jax.random.uniform(variance_key, (num_components, dimension), minval=0.1, maxval=0.8),
    )


# The transforms are structural: SE and the roughest and smoothest product Matérn; the
# gradients of every ν's closed form are checked against quadrature above.
TRANSFORM_KERNELS = [make_kernel(name, 2) for name in ("squared_exponential", 0.5, 2.5)]


def test_jit_traces_once_for_new_values(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def embeddings(kernels_, mixture, gaussian, Z, lengthscale, delta, variance):
        return [
            (
                quadrature.kernel_mean(kernel, mixture, Z),
                quadrature.kernel_double_mean(kernel, mixture, gaussian),
                quadrature.component_kernel_means(kernel, gaussian, Z),
                quadrature.component_kernel_double_means(kernel, mixture, mixture),
                quadrature.expected_kernel(kernel, delta, variance),
                quadrature.matern_gaussian_expectation(2.5, lengthscale, delta, variance),
            )
            for kernel in kernels_
        ]

    for _ in range(3):
        lengthscale = jax.random.uniform(getkey(), (2,), minval=0.5, maxval=2.0)
        kernels_ = [eqx.tree_at(lambda k: k.lengthscale, kernel, Positive(lengthscale)) for kernel in TRANSFORM_KERNELS]
        covariance = jnp.eye(2) + 0.3 * jax.random.uniform(getkey()) * jnp.ones((2, 2))
        gaussian = mixtures.MultivariateNormal(jax.random.normal(getkey(), (2,)), covariance)
        outputs = embeddings(
            kernels_,
            _random_mixture(getkey()),
            gaussian,
            jax.random.normal(getkey(), (4, 2)),
            lengthscale,
            jax.random.normal(getkey(), (2,)),
            jax.random.uniform(getkey(), (2,), minval=0.1, maxval=1.0),
        )
        assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree_util.tree_leaves(outputs))


def test_vmap_over_mixtures_equals_loop(getkey):
    batch = [_random_mixture(getkey()) for _ in range(4)]
    stacked = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *batch)
    Z = jax.random.normal(getkey(), (5, 2))

    def embeddings(mixture):
        return [
            (quadrature.kernel_mean(kernel, mixture, Z), quadrature.kernel_double_mean(kernel, mixture, mixture))
            for kernel in TRANSFORM_KERNELS
        ]

    batched = eqx.filter_jit(jax.vmap(embeddings))(stacked)
    single = eqx.filter_jit(embeddings)
    for index, mixture in enumerate(batch):
        for a, b in zip(jax.tree_util.tree_leaves(batched), jax.tree_util.tree_leaves(single(mixture))):
            np.testing.assert_allclose(a[index], b, rtol=1e-12)


def _full_covariance_measure(params):
    mean, factor = params
    return mixtures.MultivariateNormal(mean, factor @ factor.T + 0.1 * jnp.eye(mean.shape[0]))


def test_gradients_match_finite_differences(getkey):
    """Gradients of the embeddings with respect to the kernel hyperparameters, the measures'
    parameters (a full covariance through a factor, so that it stays symmetric; a mixture's
    logits, means and log-scales) and the points Z, for the SE closed form (diagonal and
    full covariance), the product-Matérn closed form and its iterated integral."""
    full_params = (jax.random.normal(getkey(), (2,)), jax.random.normal(getkey(), (2, 2)))
    mixture = make_measure("mixture", 2, 8)[0]
    Z = jax.random.normal(getkey(), (3, 2))
    weights = jnp.array([0.3, -1.2, 0.8])
    params, static = eqx.partition((TRANSFORM_KERNELS, full_params, mixture, Z), eqx.is_inexact_array)
    pairs = ((0, "full"), (0, "mixture"), (1, "full"), (2, "mixture"))

    @eqx.filter_jit
    def objective(params):
        kernels_, full_params, mixture, Z = eqx.combine(params, static)
        measures = {"full": _full_covariance_measure(full_params), "mixture": mixture}
        total = 0.0
        for index, (kernel_index, kind) in enumerate(pairs):
            kernel, measure = kernels_[kernel_index], measures[kind]
            total = total + (index + 1.0) * (
                weights @ quadrature.kernel_mean(kernel, measure, Z)
                + quadrature.kernel_double_mean(kernel, measure, measure)
            )
        return total

    np.testing.assert_allclose(
        autodiff_gradient(objective, params), finite_difference_gradient(objective, params), rtol=1e-5, atol=1e-7
    )


def test_float32_smoke(getkey):
    lengthscale = jnp.array([0.9, 1.2], jnp.float32)
    kernels_ = [kernels.SquaredExponential(lengthscale=lengthscale, variance=jnp.float32(1.3))] + [
        kernels.ProductMatern(nu, lengthscale=lengthscale, variance=jnp.float32(1.3)) for nu in SMOOTHNESSES
    ]
    mixture = mixtures.GaussianMixture.from_moments(
        jnp.array([0.4, 0.6], jnp.float32),
        jnp.array([[0.0, 0.5], [-1.0, 0.2]], jnp.float32),
        jnp.array([[0.3, 0.4], [0.2, 0.5]], jnp.float32),
    )
    gaussian = mixtures.MultivariateNormal(
        jnp.array([0.1, -0.2], jnp.float32), jnp.array([[0.5, 0.2], [0.2, 0.4]], jnp.float32)
    )
    Z = jax.random.normal(getkey(), (4, 2), jnp.float32)

    @eqx.filter_jit
    def outputs(kernels_, mixture, gaussian, Z):
        embeddings = [
            (
                quadrature.kernel_mean(kernel, mixture, Z),
                quadrature.kernel_mean(kernel, gaussian, Z),
                quadrature.kernel_double_mean(kernel, mixture, gaussian),
                quadrature.component_kernel_double_means(kernel, mixture, mixture),
            )
            for kernel in kernels_
        ]
        primitive = quadrature.matern_gaussian_expectation(
            1.5, jnp.float32(1.0), jnp.array([0.0, 60.0, -3.0], jnp.float32), jnp.array([1e3, 0.0025, 0.5], jnp.float32)
        )
        return embeddings, primitive

    for leaf in jax.tree_util.tree_leaves(outputs(kernels_, mixture, gaussian, Z)):
        assert leaf.dtype == jnp.float32
        assert np.all(np.isfinite(leaf))
