"""The contamination-source problem (BVBMC thesis §7.3): the heat solver against the exact cosine series
and a spatially uniform source, first-order convergence in Δt, the warping's log-Jacobian against a
numerical Jacobian and a normalisation check, and jit/vmap/grad of the log density."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from benchmark_problems import (
    OBSERVATION_TIMES,
    TRUE_PARAMETERS,
    ContaminationSource,
    heat_observations,
    simulate_observations,
)


def cosine_series_observations(parameters, num_modes=400, num_grid=20001):
    """Exact u(x, t) at x ∈ {0, 1} by the Neumann eigenfunctions cos(kπx): each coefficient solves
    a_k′ = −(kπ)² a_k + s_k 1[t ≤ t_s], with s_k the cosine coefficients of the source profile."""
    x0, source_end, strength, width = parameters
    x = np.linspace(0.0, 1.0, num_grid)
    profile = strength * np.exp(-0.5 * ((x - x0) / width) ** 2)
    modes = np.arange(num_modes)
    coefficients = np.trapezoid(profile * np.cos(np.pi * np.outer(modes, x)), x, axis=1)
    coefficients *= np.where(modes == 0, 1.0, 2.0)
    rates = (np.pi * modes) ** 2
    rows = []
    for time in OBSERVATION_TIMES:
        on = min(time, source_end)
        safe_rates = np.where(modes == 0, 1.0, rates)
        growth = np.where(modes == 0, on, -np.expm1(-rates * on) / safe_rates)
        amplitude = coefficients * growth * np.exp(-rates * max(time - source_end, 0.0))
        rows.append([np.sum(amplitude), np.sum(amplitude * np.cos(np.pi * modes))])
    return np.array(rows)


@pytest.mark.parametrize("parameters", [TRUE_PARAMETERS, (0.7, 0.1234, 5.0, 0.2)])
def test_solver_converges_to_the_cosine_series_at_first_order(parameters):
    exact = cosine_series_observations(parameters)
    errors = [
        np.max(np.abs(np.asarray(heat_observations(jnp.asarray(parameters), cells, step)) - exact))
        for cells, step in ((100, 1e-3), (200, 5e-4))
    ]
    assert errors[0] < 1e-3 * np.max(np.abs(exact)) * 2
    assert 1.7 < errors[0] / errors[1] < 2.3  # implicit Euler: O(Δt), space O(h²) is smaller here


def test_uniform_source_and_no_source_are_exact():
    # A spatially constant source (ρ → ∞) keeps u uniform, and A·1 = 0, so implicit Euler gives
    # u(t) = q₀ min(t, t_s) exactly, t_s between grid times included; q₀ = 0 gives u = 0.
    strength, source_end = 3.0, 0.2345
    observations = heat_observations(jnp.array([0.5, source_end, strength, 1e8]))
    expected = strength * np.minimum(np.asarray(OBSERVATION_TIMES), source_end)
    np.testing.assert_allclose(observations, np.stack([expected, expected], axis=1), rtol=1e-10)
    np.testing.assert_array_equal(heat_observations(jnp.array([0.3, 0.3, 0.0, 0.05])), np.zeros((5, 2)))


def test_default_data_and_simulation():
    problem = ContaminationSource()
    np.testing.assert_array_equal(problem.observations, simulate_observations(jax.random.key(100)))
    clean = simulate_observations(jax.random.key(0), noise_sd=0.0)
    np.testing.assert_array_equal(clean, heat_observations(jnp.asarray(TRUE_PARAMETERS)))
    with pytest.raises(ValueError, match="observations"):
        ContaminationSource(jnp.zeros((5, 3)))
    with pytest.raises(ValueError, match="time_step"):
        heat_observations(jnp.asarray(TRUE_PARAMETERS), time_step=7e-3)


def test_warping_round_trip_and_log_jacobian(getkey):
    z = jax.random.normal(getkey(), (5, 4)) * 2.0
    round_trip = jax.jit(lambda point: ContaminationSource.to_unconstrained(ContaminationSource.to_constrained(point)))
    np.testing.assert_allclose(round_trip(z), z)
    log_determinants = jax.jit(
        jax.vmap(lambda point: jnp.linalg.slogdet(jax.jacfwd(ContaminationSource.to_constrained)(point))[1])
    )(z)
    np.testing.assert_allclose(jax.jit(jax.vmap(ContaminationSource.log_jacobian))(z), log_determinants, rtol=1e-12)


def test_prior_in_unconstrained_space_is_normalised():
    # f(z) = p(θ(z)) |dθ/dz| = Π_d g_d(z_d); its line integrals through z* are I_d = f(z*) ∫g_d / g_d(z*_d),
    # so Π_d I_d / f(z*)³ = Π_d ∫g_d, which is 1 for a normalised prior and a correct Jacobian.
    def log_prior_density(z):
        return ContaminationSource.log_prior(ContaminationSource.to_constrained(z)) + ContaminationSource.log_jacobian(
            z
        )

    centre = jnp.array([0.3, -0.2, 1.0, -1.5])
    line = jnp.linspace(-60.0, 60.0, 24001)
    line_integrals = []
    for d in range(4):
        points = jnp.tile(centre, (line.shape[0], 1)).at[:, d].set(line)
        line_integrals.append(np.trapezoid(np.exp(np.asarray(jax.vmap(log_prior_density)(points))), np.asarray(line)))
    total = np.prod(line_integrals) / math.exp(3 * float(log_prior_density(centre)))
    np.testing.assert_allclose(total, 1.0, rtol=1e-6)


def test_log_density_jit_vmap_grad(getkey):
    problem = ContaminationSource()
    centre = problem.to_unconstrained(jnp.asarray(TRUE_PARAMETERS)) + 0.3 * jax.random.normal(getkey(), (4,))
    step = 1e-6
    offsets = step * jnp.concatenate([jnp.eye(4), -jnp.eye(4)])
    points = centre[None, :] + offsets

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def log_density(model, point):
        return model.log_density(point)

    loop = np.array([log_density(problem, point) for point in points])
    assert np.all(np.isfinite(loop))
    batched = eqx.filter_jit(eqx.filter_vmap(lambda model, point: model.log_density(point), in_axes=(None, 0)))
    np.testing.assert_allclose(batched(problem, points), loop, rtol=1e-12)
    gradient = eqx.filter_jit(jax.grad(lambda point: problem.log_density(point)))(centre)
    np.testing.assert_allclose(gradient, (loop[:4] - loop[4:]) / (2 * step), rtol=1e-5, atol=1e-7)
    samples = ContaminationSource.sample_prior(getkey(), 8)
    assert samples.shape == (8, 4) and bool(jnp.all(samples > 0)) and bool(jnp.all(samples[:, 1] < 0.4))
    with pytest.raises(ValueError, match="shape"):
        problem.log_density(jnp.zeros(3))
