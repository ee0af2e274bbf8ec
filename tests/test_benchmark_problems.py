"""SVBMC and VBMC-toy benchmark problems and initial-set generators: log normalisers against dense quadrature
grids and SciPy, reference samples and exact moments against grid moments, quadrature or samples, CMA-ES on
known maxima, slice sampling invariance."""

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


# --- VBMC toy suite: Lumpy, Cigar, Student-t ----------------------------------------------------

TOY_PROBLEMS = list(benchmarks.VBMC_TOY_PROBLEMS.values())


def tanh_sinh_log_integral_and_moments(log_density):
    """log ∫ f, mean and variance of a 1-D density f = exp(log_density) on the real line, by SciPy's
    tanh-sinh quadrature (`log_density` maps an array of points (N,) to values (N,); it is called on
    zero-padded blocks of 4096 points, so that a jitted one compiles once)."""

    def density(t):
        flat = np.ravel(t)
        padded = np.zeros(4096 * -(-flat.size // 4096))
        padded[: flat.size] = flat
        blocks = [np.asarray(log_density(jnp.asarray(block))) for block in padded.reshape(-1, 4096)]
        return np.exp(np.concatenate(blocks)[: flat.size]).reshape(np.shape(t))

    total, first, second = (
        integrate.tanhsinh(lambda t, p=power: t**p * density(t), -np.inf, np.inf, rtol=1e-13).integral
        for power in range(3)
    )
    return math.log(total), first / total, second / total - (first / total) ** 2


@pytest.mark.parametrize("problem", TOY_PROBLEMS, ids=list(benchmarks.VBMC_TOY_PROBLEMS))
def test_vbmc_toy_problems_in_one_dimension_match_scipy_quadrature(problem, getkey):
    target = problem(getkey(), 1)
    log_density = jax.jit(jax.vmap(lambda t: target.log_density(t[None])))
    log_normaliser, mean, variance = tanh_sinh_log_integral_and_moments(log_density)
    np.testing.assert_allclose(target.log_normaliser, log_normaliser, atol=1e-10)
    np.testing.assert_allclose(target.mean, [mean], atol=1e-10)
    # rtol 1e-6: for the Student-t (ν = 2.5 at worst) the second-moment integrand decays only like |x|^{1−ν}.
    np.testing.assert_allclose(target.covariance, [[variance]], rtol=1e-6)


@pytest.mark.parametrize("problem", TOY_PROBLEMS[:2], ids=list(benchmarks.VBMC_TOY_PROBLEMS)[:2])
def test_lumpy_and_cigar_in_two_dimensions_match_dense_quadrature(problem, getkey):
    """Trapezoid rule on [−20, 20]² (the Cigar's long standard deviation is √10, so ±6.3 of them)."""
    target = problem(getkey(), 2)
    axis = np.linspace(-20.0, 20.0, 801)
    log_normaliser, mean, covariance = grid_log_integral_and_moments(target.log_density, axis, axis)
    np.testing.assert_allclose(target.log_normaliser, log_normaliser, atol=1e-8)
    np.testing.assert_allclose(target.mean, mean, atol=1e-8)
    np.testing.assert_allclose(target.covariance, covariance, atol=1e-7)


def test_student_t_factorises_and_each_factor_matches_scipy_quadrature(getkey):
    """log f(x) = Σ_d log f(x_d e_d) with log f(0) = 0, so log Z, the mean and the covariance follow from one
    1-D quadrature per coordinate (a tensor grid would truncate the t tails)."""
    dimension = 3
    target = benchmarks.StudentT(getkey(), dimension)
    log_density = jax.jit(jax.vmap(target.log_density))
    points = 3.0 * jax.random.normal(getkey(), (10, dimension))
    slices = sum(log_density(points * jnp.eye(dimension)[d][None, :]) for d in range(dimension))
    np.testing.assert_allclose(log_density(points), slices, rtol=1e-13)
    assert float(target.log_density(jnp.zeros(dimension))) == 0.0
    along_axis = jax.jit(jax.vmap(lambda d, t: target.log_density(t * jnp.eye(dimension)[d]), in_axes=(None, 0)))
    factors = [tanh_sinh_log_integral_and_moments(lambda t, d=d: along_axis(d, t)) for d in range(dimension)]
    np.testing.assert_allclose(target.log_normaliser, sum(f[0] for f in factors), atol=1e-10)
    np.testing.assert_allclose(target.mean, [f[1] for f in factors], atol=1e-10)
    np.testing.assert_allclose(jnp.diag(target.covariance), [f[2] for f in factors], rtol=1e-6)
    np.testing.assert_array_equal(target.covariance, jnp.diag(jnp.diag(target.covariance)))


def test_lumpy_moments_match_samples_in_six_dimensions(getkey):
    target = benchmarks.Lumpy(getkey(), 6)
    samples = eqx.filter_jit(target.mixture.sample)(getkey(), 50_000)
    assert_moments_within_monte_carlo_error(samples, target.mean, target.covariance)


@pytest.mark.parametrize("dimension", [2, 6])
def test_cigar_rotation_is_in_so_d_and_sets_the_spectrum(dimension, getkey):
    """Eight instances at once (`vmap` over keys): Q orthogonal with det Q = +1, spec Σ = {10, 0.1, …},
    and the log density equals −½ xᵀ Σ⁻¹ x with Σ⁻¹ by dense inversion."""
    targets = jax.vmap(lambda key: benchmarks.Cigar(key, dimension))(jax.random.split(getkey(), 8))
    rotations = targets.rotation
    eye = jnp.eye(dimension)
    np.testing.assert_allclose(
        jnp.swapaxes(rotations, 1, 2) @ rotations, jnp.broadcast_to(eye, rotations.shape), atol=1e-13
    )
    np.testing.assert_allclose(jnp.linalg.det(rotations), 1.0, rtol=1e-13)
    expected = np.full(dimension, 0.1)
    expected[-1] = 10.0
    np.testing.assert_allclose(
        jnp.linalg.eigvalsh(targets.covariance), np.broadcast_to(expected, (8, dimension)), rtol=1e-12
    )
    points = jax.random.normal(getkey(), (8, dimension))
    values = jax.vmap(lambda target, x: target.log_density(x))(targets, points)
    quadratic = jnp.einsum("ni,nij,nj->n", points, jnp.linalg.inv(targets.covariance), points)
    np.testing.assert_allclose(values, -0.5 * quadratic, rtol=1e-11)


@pytest.mark.parametrize("problem", TOY_PROBLEMS, ids=list(benchmarks.VBMC_TOY_PROBLEMS))
def test_vbmc_toy_problem_shapes_draws_and_transforms(problem, getkey):
    key, dimension = getkey(), 3
    target = problem(key, dimension)
    assert target.dimension == dimension
    assert target.mean.shape == (dimension,) and target.covariance.shape == (dimension, dimension)
    assert target.log_normaliser.shape == ()
    np.testing.assert_array_equal(problem(key, dimension).covariance, target.covariance)  # same key, same instance
    points = 3.0 * jax.random.normal(getkey(), (4, dimension))
    batched = jax.jit(jax.vmap(target.log_density))(points)
    np.testing.assert_allclose(batched, [target.log_density(point) for point in points], rtol=1e-13)
    assert np.all(np.isfinite(jax.jit(jax.vmap(jax.grad(target.log_density)))(points)))
    with pytest.raises(ValueError, match="`x` must have shape"):
        target.log_density(jnp.zeros(dimension + 1))
    if problem is benchmarks.StudentT:
        dof = target.degrees_of_freedom
        assert np.all((dof >= 2.5) & (dof <= 2.0 + 0.5 * dimension))
    if problem is benchmarks.Lumpy:
        assert float(target.log_normaliser) == 0.0 and target.mixture.weights.shape == (12,)


def test_vbmc_toy_initial_points_are_scaled_half_normal_radii_on_the_sphere(getkey):
    points = benchmarks.vbmc_toy_initial_points(getkey(), 20_000, 3)
    assert points.shape == (20_000, 3)
    radius = np.linalg.norm(points, axis=1)
    # |r| with r ~ N(0, 1): E|r| = √(2/π), E r² = 1; directions uniform, so the mean direction is ~0.
    np.testing.assert_allclose(radius.mean(), 5.0 * math.sqrt(2.0 / math.pi), rtol=0.02)
    np.testing.assert_allclose(np.mean(radius**2), 25.0, rtol=0.03)
    np.testing.assert_allclose(np.mean(points / radius[:, None], axis=0), 0.0, atol=0.03)


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
