"""SVBMC benchmark problems and initial-set generators: log normalisers against dense quadrature grids
and SciPy, reference samples against grid moments, CMA-ES on known maxima, slice sampling invariance."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate

from gpcompose import benchmarks


@pytest.fixture(scope="module")
def rosenbrock_gaussian():
    return benchmarks.RosenbrockGaussian()


@pytest.fixture(scope="module", params=[0.01, 0.1], ids=["paper", "vsbq"])
def two_moons(request):
    return benchmarks.TwoMoons(radial_scale=request.param)


def grid_log_integral_and_moments(log_density, first_axis, second_axis):
    """log ∫∫ exp(log_density) and the mean and covariance of the normalised density, by the
    trapezoid rule on the tensor grid (the integrands decay to ~0 at the grid's edges)."""
    first, second = np.meshgrid(first_axis, second_axis, indexing="ij")
    points = jnp.asarray(np.stack([first.ravel(), second.ravel()], axis=1))
    log_values = np.asarray(jax.jit(jax.vmap(log_density))(points)).reshape(first.shape)
    largest = np.max(log_values)
    weights = np.exp(log_values - largest)
    total = integrate.trapezoid(integrate.trapezoid(weights, second_axis, axis=1), first_axis)

    def expect(values):
        return integrate.trapezoid(integrate.trapezoid(weights * values, second_axis, axis=1), first_axis) / total

    mean = np.array([expect(first), expect(second)])
    centred = (first - mean[0], second - mean[1])
    covariance = np.array([[expect(u * v) for v in centred] for u in centred])
    return largest + math.log(total), mean, covariance


def assert_moments_within_monte_carlo_error(samples, mean, covariance, num_standard_errors=5.0):
    """Sample means and centred cross-products against (mean, covariance), each within a few of its
    own Monte Carlo standard errors."""
    samples, mean, covariance = np.asarray(samples), np.asarray(mean), np.asarray(covariance)
    num_samples = samples.shape[0]
    mean_error = np.std(samples, axis=0) / math.sqrt(num_samples)
    np.testing.assert_array_less(np.abs(samples.mean(axis=0) - mean), num_standard_errors * mean_error + 1e-12)
    centred = samples - mean
    products = centred[:, :, None] * centred[:, None, :]
    product_error = products.std(axis=0) / math.sqrt(num_samples)
    np.testing.assert_array_less(
        np.abs(products.mean(axis=0) - covariance), num_standard_errors * product_error + 1e-12
    )


# --- Rosenbrock–Gaussian -------------------------------------------------------------------------


def test_rosenbrock_gaussian_factorises_into_three_pairs(rosenbrock_gaussian, getkey):
    """log p(x) = ψ(x₁, x₂, 0…) + ψ(0, 0, x₃, x₄, 0, 0) + ψ(0…, x₅, x₆) − 2ψ(0): the basis of the pairwise
    quadrature below."""
    log_density = jax.jit(jax.vmap(rosenbrock_gaussian.log_density))
    points = 2.0 * jax.random.normal(getkey(), (20, 6))
    zeros = jnp.zeros_like(points)
    pieces = [log_density(zeros.at[:, 2 * k : 2 * k + 2].set(points[:, 2 * k : 2 * k + 2])) for k in range(3)]
    at_zero = rosenbrock_gaussian.log_density(jnp.zeros(6))
    np.testing.assert_allclose(log_density(points), sum(pieces) - 2.0 * at_zero, rtol=1e-12)


def test_rosenbrock_gaussian_log_normaliser_and_moments_match_dense_quadrature(rosenbrock_gaussian):
    def embed(pair_index):
        return lambda pair: rosenbrock_gaussian.log_density(
            jnp.zeros(6).at[2 * pair_index : 2 * pair_index + 2].set(pair)
        )

    rosenbrock_axes = (np.linspace(-6.0, 6.0, 601), np.linspace(-6.0, 42.0, 2401))
    gaussian_axes = (np.linspace(-8.0, 8.0, 401), np.linspace(-8.0, 8.0, 401))
    log_first, mean_first, covariance_first = grid_log_integral_and_moments(embed(0), *rosenbrock_axes)
    log_second, mean_second, covariance_second = grid_log_integral_and_moments(embed(1), *rosenbrock_axes)
    log_third, mean_third, covariance_third = grid_log_integral_and_moments(embed(2), *gaussian_axes)
    at_zero = float(rosenbrock_gaussian.log_density(jnp.zeros(6)))
    log_normaliser = log_first + log_second + log_third - 2.0 * at_zero
    np.testing.assert_allclose(rosenbrock_gaussian.log_normaliser, log_normaliser, atol=1e-7)
    np.testing.assert_allclose(rosenbrock_gaussian.log_normaliser, -8.66267, atol=5e-6)  # notes/svbmc.md §4.2(a)
    mean = np.concatenate([mean_first, mean_second, mean_third])
    covariance = np.zeros((6, 6))
    for k, block in enumerate((covariance_first, covariance_second, covariance_third)):
        covariance[2 * k : 2 * k + 2, 2 * k : 2 * k + 2] = block
    np.testing.assert_allclose(rosenbrock_gaussian.reference_mean, mean, atol=1e-7)
    np.testing.assert_allclose(rosenbrock_gaussian.reference_covariance, covariance, atol=1e-7)


def test_rosenbrock_pair_normaliser_matches_scipy_dblquad():
    """An independent check of Z_R = ∫∫ exp(R(a, b)) N(a; 0, 9) N(b; 0, 9) da db and log Z = 2 log Z_R − log(20π)."""

    def integrand(b, a):
        return math.exp(-((a * a - b) ** 2) - (b - 1.0) ** 2 / 100.0 - (a * a + b * b) / 18.0) / (18.0 * math.pi)

    pair_normaliser, _ = integrate.dblquad(integrand, -8.0, 8.0, -10.0, 70.0, epsabs=1e-13, epsrel=1e-11)
    log_normaliser = 2.0 * math.log(pair_normaliser) - math.log(20.0 * math.pi)
    np.testing.assert_allclose(benchmarks.RosenbrockGaussian.log_normaliser, log_normaliser, atol=1e-9)


def test_rosenbrock_gaussian_reference_samples_match_moments(rosenbrock_gaussian, getkey):
    samples = rosenbrock_gaussian.reference_samples(getkey(), 100_000)
    assert samples.shape == (100_000, 6)
    assert_moments_within_monte_carlo_error(
        samples, rosenbrock_gaussian.reference_mean, rosenbrock_gaussian.reference_covariance
    )


def test_rosenbrock_gaussian_log_density_transforms(rosenbrock_gaussian, getkey):
    points = 3.0 * jax.random.normal(getkey(), (4, 6))
    batched = jax.jit(jax.vmap(rosenbrock_gaussian.log_density))(points)
    looped = np.array([rosenbrock_gaussian.log_density(point) for point in points])
    np.testing.assert_allclose(batched, looped, rtol=1e-13)
    assert np.all(np.isfinite(batched))
    assert np.all(np.isfinite(jax.vmap(jax.grad(rosenbrock_gaussian.log_density))(points)))
    with pytest.raises(ValueError, match="`x` must have shape"):
        rosenbrock_gaussian.log_density(jnp.zeros(5))


# --- Two moons ----------------------------------------------------------------------------------


def test_two_moons_log_normaliser_matches_dense_quadrature_and_scipy(two_moons):
    scale = two_moons.radial_scale
    extent = 1.0 / math.sqrt(2.0) + 10.0 * scale
    axis = np.linspace(-extent, extent, int(2 * extent / (scale / 8.0)) + 1)
    log_normaliser, mean, covariance = grid_log_integral_and_moments(two_moons.log_density, axis, axis)
    np.testing.assert_allclose(two_moons.log_normaliser, log_normaliser, atol=1e-7)
    np.testing.assert_allclose(two_moons.reference_mean, mean, atol=1e-7)
    np.testing.assert_allclose(two_moons.reference_covariance, covariance, atol=1e-7)
    # Polar form by adaptive quadrature: ∫ r e^{−(r − r₀)²/(2s²)} dr · ∫ (e^{κ cos θ}/3 + 2e^{−κ cos θ}/3) dθ.
    ring = 1.0 / math.sqrt(2.0)
    radial, _ = integrate.quad(
        lambda r: r * math.exp(-0.5 * ((r - ring) / scale) ** 2), 0.0, ring + 40.0 * scale, points=[ring], epsrel=1e-13
    )
    angular, _ = integrate.quad(
        lambda angle: (math.exp(8.0 * math.cos(angle)) + 2.0 * math.exp(-8.0 * math.cos(angle))) / 3.0,
        -math.pi,
        math.pi,
        epsrel=1e-13,
    )
    np.testing.assert_allclose(two_moons.log_normaliser, math.log(radial * angular), atol=1e-12)
    published = {0.1: 6.165761171767828, 0.01: 3.86318}  # VSBQ code; notes/svbmc.md §4.2(b)
    np.testing.assert_allclose(two_moons.log_normaliser, published[scale], atol=5e-6)


def test_two_moons_reference_samples_match_moments_and_mode_weights(two_moons, getkey):
    samples = two_moons.reference_samples(getkey(), 100_000)
    assert samples.shape == (100_000, 2)
    assert_moments_within_monte_carlo_error(samples, two_moons.reference_mean, two_moons.reference_covariance)
    # The left moon (x₁ < 0) carries mass ⅔ up to the overlap of the two von Mises components.
    left_fraction = float(jnp.mean(samples[:, 0] < 0.0))
    assert abs(left_fraction - 2.0 / 3.0) < 5.0 * math.sqrt(2.0 / 9.0 / 100_000) + 1e-3


def test_two_moons_log_density_transforms_and_origin(two_moons, getkey):
    points = jax.random.normal(getkey(), (4, 2))
    batched = jax.jit(jax.vmap(two_moons.log_density))(points)
    looped = np.array([two_moons.log_density(point) for point in points])
    np.testing.assert_allclose(batched, looped, rtol=1e-13)
    origin_value = eqx.filter_jit(two_moons.log_density)(jnp.zeros(2))
    origin_gradient = jax.grad(two_moons.log_density)(jnp.zeros(2))
    assert np.isfinite(origin_value) and np.all(np.isfinite(origin_gradient))
    # On the ring the density is the angular factor: at θ = π, log(e^{−κ}/3 + 2e^{κ}/3).
    on_ring = two_moons.log_density(jnp.array([-1.0 / math.sqrt(2.0), 0.0]))
    np.testing.assert_allclose(on_ring, math.log(math.exp(-8.0) / 3.0 + 2.0 * math.exp(8.0) / 3.0), rtol=1e-13)


def test_two_moons_rejects_bad_arguments():
    with pytest.raises(ValueError, match="radial_scale"):
        benchmarks.TwoMoons(radial_scale=0.0)
    with pytest.raises(ValueError, match="concentration"):
        benchmarks.TwoMoons(concentration=-1.0)


def test_load_two_moons_reference_samples_reads_a_headed_csv(tmp_path):
    folder = tmp_path / "vsbq"
    folder.mkdir()
    (folder / "bimodal_reference_samples.csv").write_text("x1,x2\n0.5,-0.25\n-0.7,0.125\n")
    samples = benchmarks.load_two_moons_reference_samples(tmp_path)
    np.testing.assert_array_equal(samples, np.array([[0.5, -0.25], [-0.7, 0.125]]))


# --- CMA-ES -------------------------------------------------------------------------------------


def counting(log_density):
    """`log_density` that also counts its run-time evaluations (one callback per point, under vmap too)."""
    count = [0]

    def increment(_):
        count[0] += 1

    def counted(x):
        jax.debug.callback(increment, x)
        return log_density(x)

    return counted, count


def test_cma_es_maximises_an_anisotropic_quadratic_with_the_exact_budget(getkey):
    centre = jnp.array([1.0, -2.0, 0.5, 3.0])
    precision = jnp.diag(jnp.array([1.0, 10.0, 100.0, 0.1]))

    def quadratic(x):
        return -0.5 * (x - centre) @ precision @ (x - centre)

    counted, count = counting(quadratic)
    points, values = benchmarks.cma_es_evaluations(counted, getkey(), jnp.zeros(4), 1.0, 1203)
    jax.effects_barrier()
    assert points.shape == (1203, 4) and values.shape == (1203,)
    assert count[0] == 1203
    np.testing.assert_allclose(values, jax.vmap(quadratic)(points), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(points[jnp.argmax(values)], centre, atol=1e-5)


def test_cma_es_finds_the_rosenbrock_factor_maximum(getkey):
    """R(a, b) = −(a² − b)² − (b − 1)²/100 is maximal (= 0) at (±1, 1), along a curved flat valley."""

    def rosenbrock(x):
        return -((x[0] ** 2 - x[1]) ** 2) - (x[1] - 1.0) ** 2 / 100.0

    points, values = benchmarks.cma_es_evaluations(rosenbrock, getkey(), jnp.array([-2.0, 3.0]), 1.0, 1000)
    best = points[jnp.argmax(values)]
    np.testing.assert_allclose(jnp.abs(best), jnp.array([1.0, 1.0]), atol=1e-4)
    assert values.max() > -1e-8


def test_cma_es_restarts_by_vmap_equal_a_loop(getkey):
    def quadratic(x):
        return -0.5 * jnp.sum((x - 1.0) ** 2)

    keys = jax.random.split(getkey(), 2)
    starts = jax.random.uniform(getkey(), (2, 2), minval=-3.0, maxval=3.0)
    batched_points, batched_values = jax.vmap(
        lambda key, start: benchmarks.cma_es_evaluations(quadratic, key, start, 0.5, 40, population_size=8)
    )(keys, starts)
    for key, start, points, values in zip(keys, starts, batched_points, batched_values):
        single_points, single_values = benchmarks.cma_es_evaluations(quadratic, key, start, 0.5, 40, population_size=8)
        np.testing.assert_allclose(points, single_points, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(values, single_values, rtol=1e-10, atol=1e-12)


def test_cma_es_float32_and_argument_errors(getkey):
    points, values = benchmarks.cma_es_evaluations(
        lambda x: -jnp.sum(x**2), getkey(), jnp.ones(3, jnp.float32), 1.0, 50
    )
    assert points.dtype == jnp.float32 and values.dtype == jnp.float32
    assert np.all(np.isfinite(values))
    with pytest.raises(ValueError, match="x0"):
        benchmarks.cma_es_evaluations(lambda x: -jnp.sum(x**2), getkey(), jnp.ones((2, 3)), 1.0, 50)
    with pytest.raises(ValueError, match="population_size"):
        benchmarks.cma_es_evaluations(lambda x: -jnp.sum(x**2), getkey(), jnp.ones(3), 1.0, 50, population_size=1)


# --- Slice sampling -----------------------------------------------------------------------------


def state_after_transitions(points, is_chain_state, num_transitions):
    """The chain state after exactly `num_transitions` transitions, for each of a batch of chains."""
    counts = np.asarray(is_chain_state).sum(axis=1)
    assert counts.min() > num_transitions, "a chain made too few transitions for the test"
    index = np.argmax(np.cumsum(np.asarray(is_chain_state), axis=1) == num_transitions + 1, axis=1)
    return np.asarray(points)[np.arange(points.shape[0]), index]


def run_chains(log_density, key, starts, num_evaluations, width):
    keys = jax.random.split(key, starts.shape[0])
    run = jax.vmap(
        lambda chain_key, start: benchmarks.slice_sampling_evaluations(
            log_density, chain_key, start, num_evaluations, width
        )
    )
    return run(keys, starts)


def test_slice_sampling_leaves_a_correlated_gaussian_invariant(getkey):
    """Chains started from exact draws of a correlated 2-D Gaussian keep its mean and covariance after a fixed
    number of transitions (a fixed transition count, not a fixed evaluation count, to avoid selection bias)."""
    num_chains = 4000
    covariance = np.array([[1.0, 0.6], [0.6, 0.5]])
    precision = jnp.asarray(np.linalg.inv(covariance))
    mean = jnp.array([1.0, -0.5])

    def correlated_normal(x):
        return -0.5 * (x - mean) @ precision @ (x - mean)

    starts = (
        mean[None, :] + jax.random.normal(getkey(), (num_chains, 2)) @ jnp.asarray(np.linalg.cholesky(covariance)).T
    )
    points, values, is_chain_state = run_chains(correlated_normal, getkey(), starts, 80, jnp.array([1.0, 0.5]))
    states = state_after_transitions(points, is_chain_state, 6)
    assert_moments_within_monte_carlo_error(states, mean, covariance)


def test_slice_sampling_records_every_genuine_evaluation(getkey):
    def banana(x):
        return -0.5 * x[0] ** 2 - 0.5 * (x[1] - x[0] ** 2) ** 2

    counted, count = counting(banana)
    points, values, is_chain_state = benchmarks.slice_sampling_evaluations(counted, getkey(), jnp.zeros(2), 250)
    jax.effects_barrier()
    assert points.shape == (250, 2) and values.shape == (250,) and is_chain_state.shape == (250,)
    assert count[0] == 250
    np.testing.assert_allclose(values, jax.vmap(banana)(points), rtol=1e-13)
    # Consecutive chain states differ in one coordinate only, cycling 0, 1, 0, 1, …
    chain = np.asarray(points[is_chain_state])
    assert bool(is_chain_state[0]) and chain.shape[0] > 10
    changed = chain[1:] != chain[:-1]
    assert np.all(changed.sum(axis=1) == 1)
    np.testing.assert_array_equal(np.argmax(changed, axis=1), np.arange(chain.shape[0] - 1) % 2)


def test_slice_sampling_on_two_moons_in_the_paper_configuration(getkey):
    """4 chains × 250 evaluations (SVBMC §5.2): finite evaluations, all recorded."""
    problem = benchmarks.TwoMoons()
    starts = jnp.tile(jnp.array([[0.0, 0.7]]), (4, 1))
    points, values, is_chain_state = run_chains(problem.log_density, getkey(), starts, 250, 1.0)
    assert points.shape == (4, 250, 2)
    np.testing.assert_allclose(values, jax.jit(jax.vmap(jax.vmap(problem.log_density)))(points), rtol=1e-12)
    assert np.all(np.isfinite(values)) and np.all(is_chain_state.sum(axis=1) > 10)


def test_slice_sampling_float32_and_argument_errors(getkey):
    points, values, _ = benchmarks.slice_sampling_evaluations(
        lambda x: -0.5 * jnp.sum(x**2), getkey(), jnp.zeros(2, jnp.float32), 30
    )
    assert points.dtype == jnp.float32 and values.dtype == jnp.float32
    with pytest.raises(ValueError, match="width"):
        benchmarks.slice_sampling_evaluations(lambda x: -jnp.sum(x**2), getkey(), jnp.zeros(2), 30, jnp.ones(3))
