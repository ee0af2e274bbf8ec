"""The benchmarks' own code (`benchmarks/benchmark_problems`, not installed): CMA-ES on known maxima,
slice sampling invariance, both recording every evaluation, and the loader of the two-moons reference
samples."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from benchmark_problems import cma_es_evaluations, load_two_moons_reference_samples, slice_sampling_evaluations

from gpcompose.problems import TwoMoons

from .helpers import assert_moments_within_monte_carlo_error

# --- Two-moons reference samples ----------------------------------------------------------------


def test_load_two_moons_reference_samples_reads_a_headed_csv(tmp_path):
    folder = tmp_path / "vsbq"
    folder.mkdir()
    (folder / "bimodal_reference_samples.csv").write_text("x1,x2\n0.5,-0.25\n-0.7,0.125\n")
    samples = load_two_moons_reference_samples(tmp_path)
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
    points, values = cma_es_evaluations(counted, getkey(), jnp.zeros(4), 1.0, 1203)
    jax.effects_barrier()
    assert points.shape == (1203, 4) and values.shape == (1203,)
    assert count[0] == 1203
    np.testing.assert_allclose(values, jax.vmap(quadratic)(points), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(points[jnp.argmax(values)], centre, atol=1e-5)


def test_cma_es_finds_the_rosenbrock_factor_maximum(getkey):
    """R(a, b) = −(a² − b)² − (b − 1)²/100 is maximal (= 0) at (±1, 1), along a curved flat valley."""

    def rosenbrock(x):
        return -((x[0] ** 2 - x[1]) ** 2) - (x[1] - 1.0) ** 2 / 100.0

    points, values = cma_es_evaluations(rosenbrock, getkey(), jnp.array([-2.0, 3.0]), 1.0, 1000)
    best = points[jnp.argmax(values)]
    np.testing.assert_allclose(jnp.abs(best), jnp.array([1.0, 1.0]), atol=1e-4)
    assert values.max() > -1e-8


def test_cma_es_restarts_by_vmap_equal_a_loop(getkey):
    def quadratic(x):
        return -0.5 * jnp.sum((x - 1.0) ** 2)

    keys = jax.random.split(getkey(), 2)
    starts = jax.random.uniform(getkey(), (2, 2), minval=-3.0, maxval=3.0)
    batched_points, batched_values = jax.vmap(
        lambda key, start: cma_es_evaluations(quadratic, key, start, 0.5, 40, population_size=8)
    )(keys, starts)
    for key, start, points, values in zip(keys, starts, batched_points, batched_values):
        single_points, single_values = cma_es_evaluations(quadratic, key, start, 0.5, 40, population_size=8)
        np.testing.assert_allclose(points, single_points, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(values, single_values, rtol=1e-10, atol=1e-12)


def test_cma_es_float32_and_argument_errors(getkey):
    points, values = cma_es_evaluations(lambda x: -jnp.sum(x**2), getkey(), jnp.ones(3, jnp.float32), 1.0, 50)
    assert points.dtype == jnp.float32 and values.dtype == jnp.float32
    assert np.all(np.isfinite(values))
    with pytest.raises(ValueError, match="x0"):
        cma_es_evaluations(lambda x: -jnp.sum(x**2), getkey(), jnp.ones((2, 3)), 1.0, 50)
    with pytest.raises(ValueError, match="population_size"):
        cma_es_evaluations(lambda x: -jnp.sum(x**2), getkey(), jnp.ones(3), 1.0, 50, population_size=1)


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
        lambda chain_key, start: slice_sampling_evaluations(log_density, chain_key, start, num_evaluations, width)
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
    points, values, is_chain_state = slice_sampling_evaluations(counted, getkey(), jnp.zeros(2), 250)
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
    problem = TwoMoons()
    starts = jnp.tile(jnp.array([[0.0, 0.7]]), (4, 1))
    points, values, is_chain_state = run_chains(problem.log_density, getkey(), starts, 250, 1.0)
    assert points.shape == (4, 250, 2)
    np.testing.assert_allclose(values, jax.jit(jax.vmap(jax.vmap(problem.log_density)))(points), rtol=1e-12)
    assert np.all(np.isfinite(values)) and np.all(is_chain_state.sum(axis=1) > 10)


def test_slice_sampling_float32_and_argument_errors(getkey):
    points, values, _ = slice_sampling_evaluations(
        lambda x: -0.5 * jnp.sum(x**2), getkey(), jnp.zeros(2, jnp.float32), 30
    )
    assert points.dtype == jnp.float32 and values.dtype == jnp.float32
    with pytest.raises(ValueError, match="width"):
        slice_sampling_evaluations(lambda x: -jnp.sum(x**2), getkey(), jnp.zeros(2), 30, jnp.ones(3))
