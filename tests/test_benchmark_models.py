"""Real-model benchmark problems (Lotka–Volterra, Bayesian timing) on small synthetic data:
the RK4 solution against SciPy's adaptive solver, the log densities against independent
NumPy/SciPy implementations, bounds, jit/vmap/grad, and the loaders on files written here."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.io
import scipy.stats
from benchmark_problems import (
    LotkaVolterra,
    Timing,
    TimingReference,
    load_lotka_volterra,
    load_lotka_volterra_reference,
    load_timing,
    load_timing_reference,
)
from scipy.integrate import solve_ivp

# --------------------------------------------------------------------------- Lotka–Volterra

# Near the Hudson's Bay posterior mode, and the prior's centre.
LOTKA_VOLTERRA_POINTS = np.array(
    [
        [0.55, 0.028, 0.80, 0.024, 33.9, 5.9, 0.25, 0.25],
        [1.0, 0.05, 1.0, 0.05, 10.0, 10.0, 0.37, 0.37],
    ]
)


def solve_lotka_volterra(parameters, times):
    """(u, v) at `times` from SciPy's DOP853 at tight tolerances, the reference solution."""
    alpha, beta, gamma, delta, prey, predator = parameters[:6]

    def vector_field(_, state):
        u, v = state
        return [alpha * u - beta * u * v, -gamma * v + delta * u * v]

    solution = solve_ivp(
        vector_field, (times[0], times[-1]), [prey, predator], t_eval=times, method="DOP853", rtol=1e-13, atol=1e-10
    )
    return solution.y.T


def lotka_volterra_log_density_by_hand(parameters, times, hare, lynx):
    """log prior + log likelihood with SciPy distributions: truncated normals on (0, ∞) for
    α, β, γ, δ, log-normals for the initial populations, the noise scales and the data."""
    alpha, beta, gamma, delta, prey, predator, sigma_prey, sigma_predator = parameters
    log_prior = (
        sum(scipy.stats.truncnorm.logpdf(value, -2.0, np.inf, loc=1.0, scale=0.5) for value in (alpha, gamma))
        + sum(scipy.stats.truncnorm.logpdf(value, -1.0, np.inf, loc=0.05, scale=0.05) for value in (beta, delta))
        + sum(scipy.stats.lognorm.logpdf(value, 1.0, scale=10.0) for value in (prey, predator))
        + sum(scipy.stats.lognorm.logpdf(value, 1.0, scale=np.exp(-1.0)) for value in (sigma_prey, sigma_predator))
    )
    populations = solve_lotka_volterra(parameters, times)
    log_likelihood = np.sum(scipy.stats.lognorm.logpdf(hare, sigma_prey, scale=populations[:, 0])) + np.sum(
        scipy.stats.lognorm.logpdf(lynx, sigma_predator, scale=populations[:, 1])
    )
    return log_prior + log_likelihood


@pytest.fixture(scope="module")
def synthetic_lotka_volterra():
    """Eleven yearly observations simulated from the first test point with LogNormal noise."""
    times = np.arange(11.0)
    parameters = LOTKA_VOLTERRA_POINTS[0]
    populations = solve_lotka_volterra(parameters, times)
    noise = np.random.default_rng(0).normal(size=populations.shape) * parameters[6:8]
    hare, lynx = (populations * np.exp(noise)).T
    return LotkaVolterra(times, lynx, hare), times, hare, lynx


def test_lotka_volterra_ode_matches_solve_ivp():
    """50 RK4 steps a year agree with DOP853 (rtol 1e-13) to 1e-6 relative, also on uneven intervals."""
    for times in (np.arange(21.0), np.array([0.0, 0.4, 1.0, 2.5, 4.0, 7.25, 9.0])):
        model = LotkaVolterra(times, np.ones_like(times), np.ones_like(times))
        for parameters in LOTKA_VOLTERRA_POINTS:
            expected = solve_lotka_volterra(parameters, times)
            actual = np.exp(np.asarray(model.log_populations(jnp.asarray(parameters))))
            np.testing.assert_allclose(actual, expected, rtol=1e-6)


def test_lotka_volterra_log_density_matches_scipy(synthetic_lotka_volterra):
    model, times, hare, lynx = synthetic_lotka_volterra
    log_density = eqx.filter_jit(model.log_density)
    for parameters in LOTKA_VOLTERRA_POINTS:
        expected = lotka_volterra_log_density_by_hand(parameters, times, hare, lynx)
        np.testing.assert_allclose(log_density(jnp.asarray(parameters)), expected, rtol=1e-8)
        split = model.log_prior(jnp.asarray(parameters)) + model.log_likelihood(jnp.asarray(parameters))
        np.testing.assert_allclose(split, expected, rtol=1e-8)


def test_lotka_volterra_bounds(synthetic_lotka_volterra):
    model = synthetic_lotka_volterra[0]
    log_density = eqx.filter_jit(model.log_density)
    gradient = jax.jit(jax.grad(lambda x: model.log_density(x)))
    np.testing.assert_array_equal(model.lower_bounds, np.zeros(8))
    np.testing.assert_array_equal(model.upper_bounds, np.full(8, np.inf))
    inside = jnp.asarray(LOTKA_VOLTERRA_POINTS[0])
    assert np.isfinite(log_density(inside))
    for coordinate in range(8):
        for value in (0.0, -0.3):
            outside = inside.at[coordinate].set(value)
            assert log_density(outside) == -np.inf
            assert np.all(np.isfinite(gradient(outside)))
    # Explosive dynamics overflow the solver: zero density, not NaN (the gradient is not finite there).
    explosive = jnp.array([500.0, 1e-4, 0.1, 10.0, 1e3, 1e3, 0.3, 0.3])
    assert log_density(explosive) == -np.inf


def test_lotka_volterra_transforms(synthetic_lotka_volterra):
    """One trace under jit, vmap equals a loop, gradient equals central differences."""
    model = synthetic_lotka_volterra[0]
    points = jnp.asarray(LOTKA_VOLTERRA_POINTS)

    @eqx.debug.assert_max_traces(max_traces=1)
    def log_density(x):
        return model.log_density(x)

    jitted = jax.jit(log_density)
    batched = jax.jit(jax.vmap(lambda x: model.log_density(x)))(points)
    looped = jnp.stack([jitted(point) for point in points])
    np.testing.assert_allclose(batched, looped, rtol=1e-12)
    point = points[0]
    gradient = jax.jit(jax.grad(lambda x: model.log_density(x)))(point)
    step = 1e-6 * point
    central = jnp.stack(
        [(jitted(point.at[i].add(step[i])) - jitted(point.at[i].add(-step[i]))) / (2 * step[i]) for i in range(8)]
    )
    np.testing.assert_allclose(gradient, central, rtol=1e-5, atol=1e-3)


def test_load_lotka_volterra(tmp_path, synthetic_lotka_volterra):
    _, times, hare, lynx = synthetic_lotka_volterra
    folder = tmp_path / "lotka_volterra"
    folder.mkdir()
    table = np.stack([1900 + times, lynx, hare], axis=1)
    np.savetxt(folder / "hudson_bay.csv", table, delimiter=",", header="year,lynx,hare", comments="")
    model = load_lotka_volterra(tmp_path)
    np.testing.assert_allclose(model.years, times)
    np.testing.assert_allclose(model.hare, hare)
    np.testing.assert_allclose(model.lynx, lynx)


def test_load_lotka_volterra_reference(tmp_path, getkey):
    samples = np.exp(np.random.default_rng(1).normal(size=(500, 8)))
    path = tmp_path / "lotka_volterra.npz"
    np.savez(path, samples=samples, log_normaliser=np.float64(-146.7), log_normaliser_standard_error=np.float64(0.01))
    reference = load_lotka_volterra_reference(path)
    np.testing.assert_allclose(reference.log_normalizer, -146.7)
    np.testing.assert_allclose(reference.log_normalizer_standard_error, 0.01)
    np.testing.assert_allclose(reference.reference_mean, samples.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(reference.reference_covariance, np.cov(samples, rowvar=False), rtol=1e-12)
    draws = reference.reference_samples(getkey(), 100)
    assert draws.shape == (100, 8)
    assert len({tuple(row) for row in np.asarray(draws)}) == 100
    assert all(np.any(np.all(samples == row, axis=1)) for row in np.asarray(draws))
    with pytest.raises(ValueError, match="num_samples"):
        reference.reference_samples(getkey(), 501)


# --------------------------------------------------------------------------- Bayesian timing

TIMING_LOWER = np.array([0.01, 0.01, 0.3, 0.0375, 0.01])
TIMING_UPPER = np.array([0.5, 0.5, 1.95, 0.75, 0.2])
TIMING_BIN_SIZE = 0.02
TIMING_STIMULI = np.array([0.6, 0.75, 0.9])
# Within the box; the second has w_s ≥ 0.2, so the measurement grid is clipped at 0.
TIMING_POINTS = np.array(
    [
        [0.09, 0.03, 0.70, 0.14, 0.011],
        [0.25, 0.08, 0.85, 0.30, 0.05],
        [0.05, 0.15, 0.60, 0.10, 0.15],
    ]
)


def timing_log_likelihood_by_hand(theta, stimuli, stimulus_index, responses, bin_size):
    """The VSBQ task's definition, one trial at a time with SciPy's normal distribution."""
    measurement_weber, motor_weber, prior_mean, prior_sd, lapse = theta
    intervals = np.linspace(0.0, 2.0, 101)
    total = 0.0
    for index, response in zip(stimulus_index, responses):
        stimulus = stimuli[index]
        sd = measurement_weber * stimulus
        measurements = np.linspace(max(0.0, stimulus - 5 * sd), stimulus + 5 * sd, 401)
        measurement_density = scipy.stats.norm.pdf(measurements, stimulus, sd)
        measurement_density /= np.trapezoid(measurement_density, measurements)
        likelihood = scipy.stats.norm.pdf(
            measurements[:, None], intervals[None, :], measurement_weber * intervals[None, :] + np.finfo(float).eps
        )
        posterior = likelihood * scipy.stats.norm.pdf(intervals, prior_mean, prior_sd)[None, :]
        posterior_mean = np.trapezoid(posterior * intervals, intervals, axis=1) / np.trapezoid(
            posterior, intervals, axis=1
        )
        aim = posterior_mean / (1 + motor_weber**2)
        bin_probability = scipy.stats.norm.cdf(response + bin_size / 2, aim, motor_weber * aim) - scipy.stats.norm.cdf(
            response - bin_size / 2, aim, motor_weber * aim
        )
        probability = np.trapezoid(measurement_density * bin_probability, measurements)
        total += np.log((1 - lapse) * probability + lapse * bin_size / 2.0)
    return total


@pytest.fixture(scope="module")
def synthetic_timing():
    """40 trials on three stimuli: responses simulated from the first test point, on bin centres."""
    rng = np.random.default_rng(2)
    stimulus_index = rng.integers(0, 3, size=40)
    stimulus_index[:3] = [0, 1, 2]
    noisy = TIMING_STIMULI[stimulus_index] * (1 + 0.1 * rng.normal(size=40))
    responses = TIMING_BIN_SIZE * (np.floor(noisy / TIMING_BIN_SIZE) + 0.5)
    responses[-4:] = [0.31, 0.31, 1.95, 0.61]  # repeats, and a response far from every stimulus
    stimulus_index[-4:] = [0, 0, 1, 0]
    model = Timing(TIMING_STIMULI, stimulus_index, responses, TIMING_BIN_SIZE, TIMING_LOWER, TIMING_UPPER)
    return model, stimulus_index, responses


def test_timing_log_likelihood_matches_numpy(synthetic_timing):
    model, stimulus_index, responses = synthetic_timing
    assert model.responses.shape[0] < stimulus_index.shape[0]  # repeated trials are grouped
    log_likelihood = eqx.filter_jit(model.log_likelihood)
    for theta in TIMING_POINTS:
        expected = timing_log_likelihood_by_hand(theta, TIMING_STIMULI, stimulus_index, responses, TIMING_BIN_SIZE)
        np.testing.assert_allclose(log_likelihood(jnp.asarray(theta)), expected, rtol=1e-10)


def test_timing_log_density_and_bounds(synthetic_timing):
    model = synthetic_timing[0]
    log_density = eqx.filter_jit(model.log_density)
    log_likelihood = eqx.filter_jit(model.log_likelihood)
    gradient = jax.jit(jax.grad(lambda x: model.log_density(x)))
    log_volume = np.sum(np.log(TIMING_UPPER - TIMING_LOWER))
    for theta in (*TIMING_POINTS, TIMING_LOWER, TIMING_UPPER):
        theta = jnp.asarray(theta)
        value = log_density(theta)
        assert np.isfinite(value)
        np.testing.assert_allclose(value, log_likelihood(theta) - log_volume, rtol=1e-13)
    inside = jnp.asarray(TIMING_POINTS[0])
    for coordinate in range(5):
        for outside in (
            inside.at[coordinate].set(0.999 * TIMING_LOWER[coordinate]),
            inside.at[coordinate].set(1.001 * TIMING_UPPER[coordinate]),
        ):
            assert log_density(outside) == -np.inf
            assert np.all(np.isfinite(gradient(outside)))
    with pytest.raises(ValueError, match="parameters"):
        model.log_density(jnp.zeros(4))


def test_timing_transforms(synthetic_timing):
    """One trace under jit, vmap equals a loop, gradient equals central differences."""
    model = synthetic_timing[0]
    points = jnp.asarray(TIMING_POINTS)

    @eqx.debug.assert_max_traces(max_traces=1)
    def log_density(x):
        return model.log_density(x)

    jitted = jax.jit(log_density)
    looped = jnp.stack([jitted(point) for point in points])
    batched = jax.jit(jax.vmap(lambda x: model.log_density(x)))(points)
    np.testing.assert_allclose(batched, looped, rtol=1e-12)
    point = points[0]
    gradient = jax.jit(jax.grad(lambda x: model.log_density(x)))(point)
    step = 1e-6 * point
    central = jnp.stack(
        [(jitted(point.at[i].add(step[i])) - jitted(point.at[i].add(-step[i]))) / (2 * step[i]) for i in range(5)]
    )
    np.testing.assert_allclose(gradient, central, rtol=1e-5, atol=1e-4)


def test_timing_marginal_samples(getkey):
    """Draws from tabulated Gaussian marginals have the marginals' means and SDs."""
    means, sds = np.array([0.1, 0.03, 0.7, 0.14, 0.02]), np.array([0.01, 0.005, 0.02, 0.01, 0.003])
    grid = np.linspace(means - 8 * sds, means + 8 * sds, 2048)
    density = scipy.stats.norm.pdf(grid, means, sds)
    reference = TimingReference(
        log_normalizer=jnp.asarray(-10.0),
        reference_mean=jnp.asarray(means),
        reference_covariance=jnp.diag(jnp.asarray(sds**2)),
        mode=jnp.asarray(means),
        mode_log_density=jnp.asarray(-9.0),
        marginal_grid=jnp.asarray(grid),
        marginal_density=jnp.asarray(density),
    )
    draws = np.asarray(reference.marginal_samples(getkey(), 40_000))
    assert draws.shape == (40_000, 5)
    assert np.all(np.abs(draws.mean(axis=0) - means) < 4 * sds / np.sqrt(40_000))
    np.testing.assert_allclose(draws.std(axis=0), sds, rtol=0.02)


def test_load_timing(tmp_path, synthetic_timing):
    """The loaders read a `.mat` file laid out like `vsbq/timing.mat` (1-based stimulus index in column 2)."""
    _, stimulus_index, responses = synthetic_timing
    trials = np.zeros((stimulus_index.shape[0], 6))
    trials[:, 2] = stimulus_index + 1
    grid_size = 64
    marginal_bounds = np.stack([TIMING_LOWER, TIMING_UPPER])
    marginal_pdf = np.ones((5, grid_size)) / (TIMING_UPPER - TIMING_LOWER)[:, None]
    posterior = {
        "Mean": TIMING_POINTS[0],
        "Mode": TIMING_POINTS[1],
        "ModeFval": -123.0,
        "lnZ": -130.5,
        "Cov": np.eye(5),
        "MarginalBounds": marginal_bounds,
        "MarginalPdf": marginal_pdf,
    }
    data = {"X": trials, "S": TIMING_STIMULI, "R": responses, "binsize": TIMING_BIN_SIZE}
    folder = tmp_path / "vsbq"
    folder.mkdir()
    struct = {"D": 5, "LB": TIMING_LOWER, "UB": TIMING_UPPER, "Data": data, "Post": posterior}
    scipy.io.savemat(folder / "timing.mat", {"y": struct})

    model = load_timing(tmp_path)
    expected = Timing(TIMING_STIMULI, stimulus_index, responses, TIMING_BIN_SIZE, TIMING_LOWER, TIMING_UPPER)
    theta = jnp.asarray(TIMING_POINTS[0])
    np.testing.assert_allclose(model.log_density(theta), expected.log_density(theta), rtol=1e-14)
    np.testing.assert_array_equal(model.lower_bounds, TIMING_LOWER)
    np.testing.assert_array_equal(model.upper_bounds, TIMING_UPPER)

    reference = load_timing_reference(tmp_path)
    np.testing.assert_allclose(reference.log_normalizer, -130.5)
    np.testing.assert_allclose(reference.mode_log_density, -123.0)
    np.testing.assert_allclose(reference.reference_mean, TIMING_POINTS[0])
    np.testing.assert_allclose(reference.mode, TIMING_POINTS[1])
    np.testing.assert_allclose(reference.marginal_grid[0], TIMING_LOWER)
    np.testing.assert_allclose(reference.marginal_grid[-1], TIMING_UPPER)
    assert reference.marginal_density.shape == (grid_size, 5)
