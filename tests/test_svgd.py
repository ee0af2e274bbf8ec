import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree
from scipy.optimize import brentq

import gpcompose
from gpcompose.svgd import (
    RBF,
    SVGD,
    AbstractParticleKernel,
    median_squared_lengthscale,
    stein_variational_direction,
)

from .helpers import autodiff_gradient, finite_difference_gradient


def standard_normal_log_density(x):
    return -0.5 * jnp.sum(x**2)


def gaussian_log_density(mean, variance):
    return lambda x: -0.5 * jnp.sum((x - mean) ** 2) / variance


def dense_rbf_direction_and_discrepancy(particles, scores, lengthscale):
    """Closed-form RBF terms: R_i = (2/ℓ²) Σ_j (λ_i − λ_j) κ_ij (Liu & Wang 2016, eq. 8)."""
    particles, scores = np.asarray(particles), np.asarray(scores)
    num_particles, dimension = particles.shape
    squared_lengthscale = lengthscale**2
    differences = particles[:, None, :] - particles[None, :, :]
    squared_distances = np.sum(differences**2, axis=-1)
    gram = np.exp(-squared_distances / squared_lengthscale)
    repulsion = (2 / squared_lengthscale) * (np.diag(gram.sum(axis=1)) @ particles - gram @ particles)
    direction = (gram @ scores + repulsion) / num_particles
    gradient_first = -2 * differences / squared_lengthscale * gram[..., None]
    stein_kernel = (
        (scores @ scores.T) * gram
        + np.einsum("ip,ijp->ij", scores, -gradient_first)
        + np.einsum("ijp,jp->ij", gradient_first, scores)
        + (2 * dimension / squared_lengthscale - 4 * squared_distances / squared_lengthscale**2) * gram
    )
    return direction, stein_kernel.mean()


class InverseMultiquadric(AbstractParticleKernel):
    """A user kernel κ = (1 + ‖x − y‖²/c²)^(−1/2) with a fixed scale, defined outside the library."""

    scale: float

    def bandwidth(self, particles):
        return jnp.asarray(self.scale, dtype=particles.dtype)

    def __call__(self, x, y, bandwidth):
        return (1 + jnp.sum((x - y) ** 2) / bandwidth**2) ** -0.5


def test_one_particle_is_gradient_ascent_to_the_mode():
    mean = jnp.array([1.5, -0.5])
    svgd = SVGD(gaussian_log_density(mean, 2.0), optimizer=optax.sgd(0.5))
    state = svgd.init(jnp.zeros((1, 2)))
    state, info = gpcompose.run(svgd, state, jax.random.key(0), 200)
    np.testing.assert_allclose(state.particles[0], mean, atol=1e-8)
    assert bool(jnp.all(info.finite))
    assert bool(jnp.all(jnp.isfinite(info.bandwidth)))

    particle = jnp.array([[0.3, 0.1]])
    score = jax.vmap(jax.grad(gaussian_log_density(mean, 2.0)))(particle)
    direction, _ = stein_variational_direction(particle, score, RBF(), RBF().bandwidth(particle))
    np.testing.assert_array_equal(direction, score)


def test_two_particle_fixed_point_on_standard_normal():
    # φ(a) = ½[−a + a e + 4a e/ℓ²] with e = exp(−4a²/ℓ²) for particles ±a and ℓ = 1.
    def direction_at_a(a):
        kernel_value = np.exp(-4 * a**2)
        return 0.5 * (-a + a * kernel_value + 4 * a * kernel_value)

    fixed_point = brentq(direction_at_a, 0.1, 2.0, xtol=1e-14)
    np.testing.assert_allclose(fixed_point, 0.634318, atol=5e-7)
    np.testing.assert_allclose(fixed_point**2, 0.25 * np.log(5.0), rtol=1e-12)

    svgd = SVGD(standard_normal_log_density, kernel=RBF(1.0), optimizer=optax.sgd(0.1))
    state = svgd.init(jnp.array([[-1.0], [0.2]]))
    state, _ = gpcompose.run(svgd, state, jax.random.key(0), 500)
    np.testing.assert_allclose(jnp.sort(state.particles[:, 0]), [-fixed_point, fixed_point], atol=1e-8)


def test_flat_target_pushes_particles_apart(getkey):
    svgd = SVGD(lambda x: jnp.zeros(()), optimizer=optax.sgd(0.1))
    particles = jax.random.normal(getkey(), (4, 2))
    state, info = jax.jit(svgd.step)(svgd.init(particles), getkey())

    def pairwise_distances(points):
        return jnp.sqrt(jnp.sum((points[:, None, :] - points[None, :, :]) ** 2, axis=-1))

    upper = np.triu_indices(4, k=1)
    assert bool(info.finite)
    assert np.all(
        np.asarray(pairwise_distances(state.particles))[upper] > np.asarray(pairwise_distances(particles))[upper]
    )


def test_gaussian_moments_with_one_hundred_particles(getkey):
    svgd = SVGD(gaussian_log_density(2.0, 1.5**2), optimizer=optax.sgd(0.5))
    state = svgd.init(jax.random.normal(getkey(), (100, 1)))
    state, info = gpcompose.run(svgd, state, getkey(), 500)
    particles = np.asarray(state.particles[:, 0])
    assert bool(jnp.all(info.finite))
    assert abs(particles.mean() - 2.0) < 0.05
    assert abs(particles.var() / 1.5**2 - 1.0) < 0.1


@pytest.mark.parametrize("lengthscale", [None, 0.8])
def test_direction_and_discrepancy_match_the_closed_rbf_form(getkey, lengthscale):
    kernel = RBF(lengthscale)
    particles = jax.random.normal(getkey(), (6, 3))
    scores = jax.random.normal(getkey(), (6, 3))
    bandwidth = kernel.bandwidth(particles)
    direction, discrepancy = eqx.filter_jit(stein_variational_direction)(particles, scores, kernel, bandwidth)
    expected_direction, expected_discrepancy = dense_rbf_direction_and_discrepancy(particles, scores, float(bandwidth))
    np.testing.assert_allclose(direction, expected_direction, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(discrepancy, expected_discrepancy, rtol=1e-12)

    squared_distances = np.sum((np.asarray(particles)[:, None] - np.asarray(particles)[None]) ** 2, axis=-1)
    if lengthscale is None:
        np.testing.assert_allclose(bandwidth**2, np.median(squared_distances) / np.log(7.0), rtol=1e-12)
        np.testing.assert_array_equal(jax.grad(median_squared_lengthscale)(particles), 0.0)


class AutodiffRBF(RBF):
    """`RBF` through the generic autodiff `AbstractParticleKernel.stein_terms`: the reference for its closed form."""

    def stein_terms(self, particles, scores, bandwidth):
        return AbstractParticleKernel.stein_terms(self, particles, scores, bandwidth)


@eqx.filter_jit
def closed_and_generic_rbf_terms(particles, scores, lengthscale):
    """The Stein terms, the direction and KSD² of `RBF(lengthscale)` and of `AutodiffRBF(lengthscale)`."""

    def terms(kernel):
        bandwidth = kernel.bandwidth(particles)
        return kernel.stein_terms(particles, scores, bandwidth), stein_variational_direction(
            particles, scores, kernel, bandwidth
        )

    return terms(RBF(lengthscale)), terms(AutodiffRBF(lengthscale))


def assert_rbf_closed_form_matches_autodiff(particles, scores, lengthscale, rtol):
    closed, generic = closed_and_generic_rbf_terms(particles, scores, lengthscale)
    # Gram, repulsion, Stein kernel matrix, direction, each to rtol of its largest entry; then KSD².
    for closed_array, generic_array in zip(jax.tree.leaves(closed)[:-1], jax.tree.leaves(generic)[:-1]):
        scale = float(jnp.max(jnp.abs(generic_array)))
        np.testing.assert_allclose(closed_array, generic_array, rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(closed[1][1], generic[1][1], rtol=rtol)


@pytest.mark.parametrize("lengthscale", [None, 0.7])
@pytest.mark.parametrize("num_particles, dimension", [(1, 1), (1, 3), (2, 1), (2, 3), (7, 1), (7, 3)])
def test_rbf_closed_form_stein_terms_equal_the_generic_autodiff_ones(getkey, num_particles, dimension, lengthscale):
    # Off the origin, so that the closed form's centring matters; particles 1 and 4 coincide.
    particles = 3.0 + jax.random.normal(getkey(), (num_particles, dimension))
    if num_particles == 7:
        particles = particles.at[4].set(particles[1])
    scores = jax.random.normal(getkey(), (num_particles, dimension))
    assert_rbf_closed_form_matches_autodiff(particles, scores, lengthscale, rtol=1e-12)


def test_rbf_closed_form_for_all_coincident_particles(getkey):
    # The median heuristic floors ℓ² at the machine epsilon; both forms then give K = 1 and no repulsion.
    particles = jnp.broadcast_to(jax.random.normal(getkey(), (3,)), (4, 3))
    scores = jax.random.normal(getkey(), (4, 3))
    assert_rbf_closed_form_matches_autodiff(particles, scores, None, rtol=1e-12)


def test_rbf_closed_form_float32_smoke(getkey):
    particles = jax.random.normal(getkey(), (7, 3), dtype=jnp.float32)
    scores = jax.random.normal(getkey(), (7, 3), dtype=jnp.float32)
    closed, _ = closed_and_generic_rbf_terms(particles, scores, None)
    assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(closed))
    assert_rbf_closed_form_matches_autodiff(particles, scores, None, rtol=1e-5)


def test_median_bandwidth_is_finite_for_coincident_particles():
    particles = jnp.ones((5, 2))
    squared_lengthscale = median_squared_lengthscale(particles)
    assert bool(jnp.isfinite(squared_lengthscale)) and float(squared_lengthscale) > 0
    svgd = SVGD(standard_normal_log_density)
    state, info = jax.jit(svgd.step)(svgd.init(particles), jax.random.key(0))
    assert bool(info.finite) and bool(jnp.all(jnp.isfinite(state.particles)))


def test_user_kernel_repels_with_its_own_gradient(getkey):
    scale = 1.3
    kernel = InverseMultiquadric(scale)
    particles = jax.random.normal(getkey(), (5, 2))
    scores = -particles
    direction, discrepancy = eqx.filter_jit(stein_variational_direction)(
        particles, scores, kernel, kernel.bandwidth(particles)
    )

    points = np.asarray(particles)
    differences = points[:, None, :] - points[None, :, :]
    base = 1 + np.sum(differences**2, axis=-1) / scale**2
    gram = base**-0.5
    repulsion = np.sum(differences / scale**2 * base[..., None] ** -1.5, axis=1)
    expected = (gram @ np.asarray(scores) + repulsion) / 5
    np.testing.assert_allclose(direction, expected, rtol=1e-12, atol=1e-12)
    assert float(discrepancy) > 0

    svgd = SVGD(standard_normal_log_density, kernel=kernel, optimizer=optax.sgd(0.1))
    state, info = jax.jit(svgd.step)(svgd.init(particles), getkey())
    np.testing.assert_allclose(state.particles, particles + 0.1 * direction, rtol=1e-12)


def test_one_step_is_permutation_equivariant(getkey):
    svgd = SVGD(gaussian_log_density(1.0, 0.5), optimizer=optax.adam(0.1))
    particles = jax.random.normal(getkey(), (7, 3))
    permutation = jax.random.permutation(getkey(), 7)
    key = getkey()
    step = jax.jit(svgd.step)
    state, info = step(svgd.init(particles), key)
    permuted_state, permuted_info = step(svgd.init(particles[permutation]), key)
    np.testing.assert_allclose(permuted_state.particles, state.particles[permutation], rtol=1e-12)
    np.testing.assert_allclose(
        permuted_info.squared_kernel_stein_discrepancy, info.squared_kernel_stein_discrepancy, rtol=1e-12
    )
    np.testing.assert_allclose(permuted_info.bandwidth, info.bandwidth, rtol=1e-12)


def test_stein_discrepancy_decreases_as_particles_converge(getkey):
    svgd = SVGD(standard_normal_log_density, kernel=RBF(1.0), optimizer=optax.sgd(0.2))
    state = svgd.init(3.0 + 0.5 * jax.random.normal(getkey(), (20, 1)))
    state, info = gpcompose.run(svgd, state, getkey(), 300)
    discrepancy = np.asarray(info.squared_kernel_stein_discrepancy)
    assert np.all(discrepancy >= 0)
    assert np.all(np.diff(discrepancy) <= 1e-12)
    assert discrepancy[-1] < 1e-2 * discrepancy[0]


@pytest.mark.parametrize("bad_value", [jnp.nan, jnp.inf])
def test_non_finite_scores_skip_the_step(getkey, bad_value):
    svgd = SVGD(lambda x, scale: -0.5 * scale * jnp.sum(x**2), optimizer=optax.adam(0.1))
    state = svgd.init(jax.random.normal(getkey(), (4, 2)))
    step = jax.jit(svgd.step)
    state, _ = step(state, getkey(), jnp.asarray(1.0))
    skipped, info = step(state, getkey(), jnp.asarray(bad_value))
    assert not bool(info.finite)
    assert bool(jnp.isnan(info.squared_kernel_stein_discrepancy))
    np.testing.assert_array_equal(skipped.particles, state.particles)
    for new, old in zip(jax.tree.leaves(skipped.optimizer_state), jax.tree.leaves(state.optimizer_state)):
        np.testing.assert_array_equal(new, old)
    assert int(skipped.num_steps) == 2

    resumed, info = step(skipped, getkey(), jnp.asarray(1.0))
    assert bool(info.finite) and not np.array_equal(resumed.particles, state.particles)


def test_mismatched_leading_axes_raise():
    svgd = SVGD(lambda particle: -jnp.sum(particle["a"] ** 2) - jnp.sum(particle["b"] ** 2))
    particles = {"a": jnp.zeros((3, 2)), "b": jnp.zeros((4,))}
    with pytest.raises(ValueError, match=r"`particles`.*\(3, 2\).*\(4,\)"):
        svgd.init(particles)
    state = svgd.init({"a": jnp.zeros((3, 2)), "b": jnp.zeros((3,))})
    bad_state = eqx.tree_at(lambda s: s.particles, state, particles)
    with pytest.raises(ValueError, match="`state.particles`"):
        svgd.step(bad_state, jax.random.key(0))
    with pytest.raises(ValueError, match="`particles`"):
        svgd.init({"a": jnp.zeros(())})


def test_pytree_particles_match_flat_particles(getkey):
    means = {"a": jnp.array([1.0, -1.0]), "b": jnp.arange(6.0).reshape(3, 2) / 6}

    def log_density(particle):
        assert particle["a"].shape == (2,) and particle["b"].shape == (3, 2)
        return -0.5 * sum(jnp.sum((particle[name] - means[name]) ** 2) for name in means)

    particles = {"a": jax.random.normal(getkey(), (6, 2)), "b": jax.random.normal(getkey(), (6, 3, 2))}
    flat_particles = jax.vmap(lambda particle: ravel_pytree(particle)[0])(particles)
    flat_means = ravel_pytree(means)[0]

    tree_svgd = SVGD(log_density, optimizer=optax.adam(0.05))
    flat_svgd = SVGD(gaussian_log_density(flat_means, 1.0), optimizer=optax.adam(0.05))
    key = getkey()
    tree_state, tree_info = gpcompose.run(tree_svgd, tree_svgd.init(particles), key, 20)
    flat_state, flat_info = gpcompose.run(flat_svgd, flat_svgd.init(flat_particles), key, 20)

    assert jax.tree.map(jnp.shape, tree_state.particles) == {"a": (6, 2), "b": (6, 3, 2)}
    raveled = jax.vmap(lambda particle: ravel_pytree(particle)[0])(tree_state.particles)
    np.testing.assert_allclose(raveled, flat_state.particles, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        tree_info.squared_kernel_stein_discrepancy, flat_info.squared_kernel_stein_discrepancy, rtol=1e-12
    )


def test_jitted_step_traces_once(getkey):
    svgd = SVGD(standard_normal_log_density, optimizer=optax.adam(0.1))
    step = jax.jit(eqx.debug.assert_max_traces(svgd.step, max_traces=1))
    state = svgd.init(jax.random.normal(getkey(), (5, 2)))
    state, _ = step(state, getkey())
    state, info = step(state, getkey())
    assert int(state.num_steps) == 2 and bool(info.finite)


def test_vmap_of_run_over_seeds_equals_a_python_loop():
    svgd = SVGD(gaussian_log_density(0.5, 2.0), optimizer=optax.adam(0.1))

    def run_from_seed(key):
        initial_key, run_key = jax.random.split(key)
        state = svgd.init(jax.random.normal(initial_key, (8, 2)))
        state, info = gpcompose.run(svgd, state, run_key, 30)
        return state.particles, info.squared_kernel_stein_discrepancy

    keys = jax.random.split(jax.random.key(3), 4)
    batched_particles, batched_discrepancy = jax.vmap(run_from_seed)(keys)
    for index, key in enumerate(keys):
        particles, discrepancy = run_from_seed(key)
        np.testing.assert_allclose(batched_particles[index], particles, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(batched_discrepancy[index], discrepancy, rtol=1e-10)


def test_gradient_through_one_step_matches_finite_differences(getkey):
    svgd = SVGD(gaussian_log_density(0.3, 0.7), kernel=RBF(0.9), optimizer=optax.sgd(0.2))
    key = getkey()

    @jax.jit
    def objective(particles):
        state, info = svgd.step(svgd.init(particles), key)
        return jnp.sum(jnp.sin(state.particles)) + info.squared_kernel_stein_discrepancy

    particles = jax.random.normal(getkey(), (3, 2))
    np.testing.assert_allclose(
        autodiff_gradient(objective, particles), finite_difference_gradient(objective, particles), rtol=1e-6, atol=1e-8
    )


def test_float32_smoke_run(getkey):
    svgd = SVGD(gaussian_log_density(2.0, 1.5), optimizer=optax.adam(0.05))
    state = svgd.init(jax.random.normal(getkey(), (10, 3), dtype=jnp.float32))
    state, info = gpcompose.run(svgd, state, getkey(), 50)
    assert state.particles.dtype == jnp.float32
    assert info.squared_kernel_stein_discrepancy.dtype == jnp.float32
    assert bool(jnp.all(jnp.isfinite(state.particles))) and bool(jnp.all(info.finite))
