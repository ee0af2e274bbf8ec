"""`gpcompose.problems`, the SVBMC and VBMC-toy targets: log normalisers against dense quadrature grids and
SciPy, reference samples and exact moments against grid moments, quadrature or samples."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate

from gpcompose import problems

from .helpers import assert_moments_within_monte_carlo_error


@pytest.fixture(scope="module")
def rosenbrock_gaussian():
    return problems.RosenbrockGaussian()


@pytest.fixture(scope="module", params=[0.01, 0.1], ids=["paper", "vsbq"])
def two_moons(request):
    return problems.TwoMoons(radial_scale=request.param)


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


def test_rosenbrock_gaussian_log_normalizer_and_moments_match_dense_quadrature(rosenbrock_gaussian):
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
    log_normalizer = log_first + log_second + log_third - 2.0 * at_zero
    np.testing.assert_allclose(rosenbrock_gaussian.log_normalizer, log_normalizer, atol=1e-7)
    # the published value (Li, Clarté & Acerbi 2023, App. C)
    np.testing.assert_allclose(rosenbrock_gaussian.log_normalizer, -8.66267, atol=5e-6)
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
    log_normalizer = 2.0 * math.log(pair_normaliser) - math.log(20.0 * math.pi)
    np.testing.assert_allclose(problems.RosenbrockGaussian.log_normalizer, log_normalizer, atol=1e-9)


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


def test_two_moons_log_normalizer_matches_dense_quadrature_and_scipy(two_moons):
    scale = two_moons.radial_scale
    extent = 1.0 / math.sqrt(2.0) + 10.0 * scale
    axis = np.linspace(-extent, extent, int(2 * extent / (scale / 8.0)) + 1)
    log_normalizer, mean, covariance = grid_log_integral_and_moments(two_moons.log_density, axis, axis)
    np.testing.assert_allclose(two_moons.log_normalizer, log_normalizer, atol=1e-7)
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
    np.testing.assert_allclose(two_moons.log_normalizer, math.log(radial * angular), atol=1e-12)
    published = {0.1: 6.165761171767828, 0.01: 3.86318}  # the values of Li, Clarté & Acerbi 2023's code
    np.testing.assert_allclose(two_moons.log_normalizer, published[scale], atol=5e-6)


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
        problems.TwoMoons(radial_scale=0.0)
    with pytest.raises(ValueError, match="concentration"):
        problems.TwoMoons(concentration=-1.0)


# --- VBMC toy suite: Lumpy, Cigar, Student-t ----------------------------------------------------

TOY_PROBLEMS = list(problems.VBMC_TOY_PROBLEMS.values())


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


@pytest.mark.parametrize("problem", TOY_PROBLEMS, ids=list(problems.VBMC_TOY_PROBLEMS))
def test_vbmc_toy_problems_in_one_dimension_match_scipy_quadrature(problem, getkey):
    target = problem(getkey(), 1)
    log_density = jax.jit(jax.vmap(lambda t: target.log_density(t[None])))
    log_normalizer, mean, variance = tanh_sinh_log_integral_and_moments(log_density)
    np.testing.assert_allclose(target.log_normalizer, log_normalizer, atol=1e-10)
    np.testing.assert_allclose(target.mean, [mean], atol=1e-10)
    # rtol 1e-6: for the Student-t (ν = 2.5 at worst) the second-moment integrand decays only like |x|^{1−ν}.
    np.testing.assert_allclose(target.covariance, [[variance]], rtol=1e-6)


@pytest.mark.parametrize("problem", TOY_PROBLEMS[:2], ids=list(problems.VBMC_TOY_PROBLEMS)[:2])
def test_lumpy_and_cigar_in_two_dimensions_match_dense_quadrature(problem, getkey):
    """Trapezoid rule on [−20, 20]² (the Cigar's long standard deviation is √10, so ±6.3 of them)."""
    target = problem(getkey(), 2)
    axis = np.linspace(-20.0, 20.0, 801)
    log_normalizer, mean, covariance = grid_log_integral_and_moments(target.log_density, axis, axis)
    np.testing.assert_allclose(target.log_normalizer, log_normalizer, atol=1e-8)
    np.testing.assert_allclose(target.mean, mean, atol=1e-8)
    np.testing.assert_allclose(target.covariance, covariance, atol=1e-7)


def test_student_t_factorises_and_each_factor_matches_scipy_quadrature(getkey):
    """log f(x) = Σ_d log f(x_d e_d) with log f(0) = 0, so log Z, the mean and the covariance follow from one
    1-D quadrature per coordinate (a tensor grid would truncate the t tails)."""
    dimension = 3
    target = problems.StudentT(getkey(), dimension)
    log_density = jax.jit(jax.vmap(target.log_density))
    points = 3.0 * jax.random.normal(getkey(), (10, dimension))
    slices = sum(log_density(points * jnp.eye(dimension)[d][None, :]) for d in range(dimension))
    np.testing.assert_allclose(log_density(points), slices, rtol=1e-13)
    assert float(target.log_density(jnp.zeros(dimension))) == 0.0
    along_axis = jax.jit(jax.vmap(lambda d, t: target.log_density(t * jnp.eye(dimension)[d]), in_axes=(None, 0)))
    factors = [tanh_sinh_log_integral_and_moments(lambda t, d=d: along_axis(d, t)) for d in range(dimension)]
    np.testing.assert_allclose(target.log_normalizer, sum(f[0] for f in factors), atol=1e-10)
    np.testing.assert_allclose(target.mean, [f[1] for f in factors], atol=1e-10)
    np.testing.assert_allclose(jnp.diag(target.covariance), [f[2] for f in factors], rtol=1e-6)
    np.testing.assert_array_equal(target.covariance, jnp.diag(jnp.diag(target.covariance)))


def test_lumpy_moments_match_samples_in_six_dimensions(getkey):
    target = problems.Lumpy(getkey(), 6)
    samples = eqx.filter_jit(target.mixture.sample)(getkey(), 50_000)
    assert_moments_within_monte_carlo_error(samples, target.mean, target.covariance)


@pytest.mark.parametrize("dimension", [2, 6])
def test_cigar_rotation_is_in_so_d_and_sets_the_spectrum(dimension, getkey):
    """Eight instances at once (`vmap` over keys): Q orthogonal with det Q = +1, spec Σ = {10, 0.1, …},
    and the log density equals −½ xᵀ Σ⁻¹ x with Σ⁻¹ by dense inversion."""
    targets = jax.vmap(lambda key: problems.Cigar(key, dimension))(jax.random.split(getkey(), 8))
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


@pytest.mark.parametrize("problem", TOY_PROBLEMS, ids=list(problems.VBMC_TOY_PROBLEMS))
def test_vbmc_toy_problem_shapes_draws_and_transforms(problem, getkey):
    key, dimension = getkey(), 3
    target = problem(key, dimension)
    assert target.dimension == dimension
    assert target.mean.shape == (dimension,) and target.covariance.shape == (dimension, dimension)
    assert target.log_normalizer.shape == ()
    np.testing.assert_array_equal(problem(key, dimension).covariance, target.covariance)  # same key, same instance
    points = 3.0 * jax.random.normal(getkey(), (4, dimension))
    batched = jax.jit(jax.vmap(target.log_density))(points)
    np.testing.assert_allclose(batched, [target.log_density(point) for point in points], rtol=1e-13)
    assert np.all(np.isfinite(jax.jit(jax.vmap(jax.grad(target.log_density)))(points)))
    with pytest.raises(ValueError, match="`x` must have shape"):
        target.log_density(jnp.zeros(dimension + 1))
    if problem is problems.StudentT:
        dof = target.degrees_of_freedom
        assert np.all((dof >= 2.5) & (dof <= 2.0 + 0.5 * dimension))
    if problem is problems.Lumpy:
        assert float(target.log_normalizer) == 0.0 and target.mixture.weights.shape == (12,)


def test_vbmc_toy_initial_points_are_scaled_half_normal_radii_on_the_sphere(getkey):
    points = problems.vbmc_toy_initial_points(getkey(), 20_000, 3)
    assert points.shape == (20_000, 3)
    radius = np.linalg.norm(points, axis=1)
    # |r| with r ~ N(0, 1): E|r| = √(2/π), E r² = 1; directions uniform, so the mean direction is ~0.
    np.testing.assert_allclose(radius.mean(), 5.0 * math.sqrt(2.0 / math.pi), rtol=0.02)
    np.testing.assert_allclose(np.mean(radius**2), 25.0, rtol=0.03)
    np.testing.assert_allclose(np.mean(points / radius[:, None], axis=0), 0.0, atol=0.03)
