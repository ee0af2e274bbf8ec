"""Boosting step of BVBMC: the RELBO against Monte Carlo, the weight step against a dense
grid, re-weighting and pruning, the δ_D stabiliser, boosting against an exact log density
(a GP with no data whose prior mean is the target) and the transform matrix."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose import boosting, gp, kernels, means, mixtures
from gpcompose._observations import input_span
from gpcompose.quadrature import elbo

from .helpers import autodiff_gradient, finite_difference_gradient

relbo = eqx.filter_jit(boosting.relbo)
weight_problem = eqx.filter_jit(boosting.weight_problem)
fit_component = eqx.filter_jit(boosting.fit_component)


class LogDensityMean(means.AbstractMean):
    """m(x) = log p(x) of a Gaussian mixture p: with no data the GP mean is the exact target."""

    target: mixtures.GaussianMixture

    def evaluate(self, x):
        return self.target.log_prob(x)


def oracle(target: mixtures.GaussianMixture) -> gp.ExactPosterior:
    """An exact GP with no (all masked) data and the target's log density as prior mean."""
    dimension = target.dimension
    dtype = target.means.dtype
    return gp.condition(
        kernels.SquaredExponential(jnp.asarray(1.0, dtype), jnp.asarray(1.0, dtype)),
        LogDensityMean(target),
        jnp.zeros((1, dimension), dtype),
        jnp.zeros((1,), dtype),
        jnp.asarray(1.0, dtype),
        mask=jnp.zeros((1,), bool),
    )


def small_gp(key, num_points=12):
    """A GP of a 2-D log density with a fixed constant mean of −6 (squared-exponential
    kernel: its closed-form embeddings compile fastest)."""
    X = 1.5 * jax.random.normal(key, (num_points, 2))
    y = -0.5 * jnp.sum((X - jnp.array([[0.3, -0.2]])) ** 2 / jnp.array([[1.0, 0.5]]), axis=1)
    kernel = kernels.SquaredExponential(lengthscale=jnp.array([1.2, 0.8]), variance=4.0)
    return gp.condition(kernel, means.Constant(-6.0), X, y, 1e-6)


def mixture(weights, component_means, variances, slots=None):
    weights, component_means, variances = (jnp.asarray(a, jnp.float64) for a in (weights, component_means, variances))
    count = weights.shape[0]
    slots = count if slots is None else slots
    pad = slots - count
    return mixtures.GaussianMixture.from_moments(
        jnp.concatenate([weights, jnp.ones(pad)]),
        jnp.concatenate([component_means, jnp.zeros((pad, component_means.shape[1]))]),
        jnp.concatenate([variances, jnp.ones((pad, component_means.shape[1]))]),
        mask=jnp.arange(slots) < count,
    )


def test_relbo_matches_monte_carlo(getkey):
    posterior = small_gp(getkey())
    q = mixture([0.7, 0.3], [[0.0, 0.0], [1.0, -1.0]], [[1.0, 0.5], [0.3, 0.3]])
    mean, log_scale = jnp.array([0.4, -0.3]), jnp.log(jnp.array([0.7, 0.9]))
    noise = jax.random.normal(getkey(), (64, 2))
    value = relbo(posterior, q, mean, log_scale, noise, regularization=0.6, log_stabilizer=-20.0)
    # Brute force: ∫ m_D f by Monte Carlo over the GP's predictive mean; the cross-entropy
    # on the same draws; the regulariser λ/4 log|Σ| written out.
    draws = mean[None] + jnp.exp(log_scale)[None] * jax.random.normal(getkey(), (200_000, 2))
    predicted, _ = gp.predict(posterior, draws)
    bmc_mc, bmc_se = float(jnp.mean(predicted)), float(jnp.std(predicted)) / math.sqrt(draws.shape[0])
    samples = mean[None] + jnp.exp(log_scale)[None] * noise
    cross = float(jnp.mean(jnp.logaddexp(q.log_prob(samples), -20.0)))
    regulariser = 0.6 / 4 * float(jnp.sum(2 * log_scale))
    assert abs(float(value) - (bmc_mc - cross + regulariser)) < 4 * bmc_se


def test_relbo_gradient_matches_finite_differences(getkey):
    posterior = small_gp(getkey())
    q = mixture([1.0], [[0.0, 0.0]], [[1.0, 0.5]])
    noise = jax.random.normal(getkey(), (16, 2))

    @jax.jit
    def objective(parameters):
        return boosting.relbo(posterior, q, *parameters, noise, regularization=1.0, log_stabilizer=-20.0)

    parameters = (jnp.array([0.4, -0.3]), jnp.log(jnp.array([0.7, 0.9])))
    np.testing.assert_allclose(
        autodiff_gradient(objective, parameters), finite_difference_gradient(objective, parameters), rtol=1e-6
    )


def test_weight_objective_is_concave_and_bisection_matches_a_dense_grid(getkey):
    posterior = small_gp(getkey())
    q = mixture([0.6, 0.4], [[-1.0, 0.5], [1.5, -1.0]], [[0.4, 0.4], [0.5, 0.3]])
    mean, log_scale = jnp.array([0.3, -0.2]), jnp.log(jnp.array([0.9, 0.6]))
    problem = weight_problem(posterior, q, mean, log_scale, getkey(), 300)
    grid = jnp.linspace(0.0, 1.0, 4001)
    values = np.asarray(jax.vmap(problem.objective)(grid))
    assert np.all(np.diff(values, 2) <= 1e-12)
    weight = float(boosting.solve_weight(problem))
    assert 0.05 < weight < 0.95  # an interior optimum, so the test is not about clipping
    assert abs(weight - float(grid[np.argmax(values)])) <= 2.5e-4
    for w in (0.1, 0.5, 0.9):
        np.testing.assert_allclose(problem.derivative(w), jax.grad(problem.objective)(jnp.asarray(w)), rtol=1e-10)


def test_weight_derivative_vanishes_when_the_new_component_is_the_mixture(getkey):
    posterior = small_gp(getkey())
    mean, variance = jnp.array([0.2, 0.1]), jnp.array([0.8, 0.5])
    q = mixture([1.0], mean[None], variance[None], slots=3)
    problem = weight_problem(posterior, q, mean, 0.5 * jnp.log(variance), getkey(), 200)
    derivatives = jax.vmap(problem.derivative)(jnp.linspace(0.0, 1.0, 11))
    np.testing.assert_allclose(derivatives, 0.0, atol=1e-12)


def test_weight_of_a_disjoint_component_is_the_logistic_of_its_elbo_gain(getkey):
    # For disjoint q and f, H[q_w] = (1 − w) H[q] + w H[f] − w log w − (1 − w) log(1 − w), so
    # 𝓛′(w) = 0 at w = σ(A_f + H[f] − A_q − H[q]): small but never zero. The estimator sees
    # the entropies as averages over its own draws (the first half from q, the second from f).
    posterior = small_gp(getkey())
    q = mixture([1.0], [[0.3, -0.2]], [[1.0, 0.5]])
    mean, log_scale = jnp.array([15.0, 15.0]), jnp.log(jnp.array([0.5, 0.7]))
    problem = weight_problem(posterior, q, mean, log_scale, getkey(), 200)
    entropy_q = -float(jnp.mean(problem.log_q[:100]))
    entropy_f = -float(jnp.mean(problem.log_f[100:]))
    gain = float(problem.component_integral) + entropy_f - float(problem.mixture_integral) - entropy_q
    expected = 1.0 / (1.0 + math.exp(-gain))
    assert 1e-4 < expected < 0.5
    np.testing.assert_allclose(boosting.solve_weight(problem), expected, rtol=1e-6)


def test_reweighting_and_pruning_keep_a_normalised_mixture():
    q = mixture([0.5, 0.4995, 0.0005], [[0.0], [1.0], [2.0]], [[1.0], [1.0], [1.0]], slots=5)
    new, added = boosting.add_and_prune(q, jnp.asarray(0.2), jnp.array([3.0]), jnp.zeros(1), jnp.asarray(1e-3))
    expected = np.array([0.8 * 0.5, 0.8 * 0.4995, 0.0, 0.2, 0.0])
    np.testing.assert_allclose(new.weights, expected / expected.sum(), rtol=1e-12)
    assert bool(added) and np.all(np.asarray(new.mask) == [True, True, False, True, False])
    np.testing.assert_allclose(new.means[3], [3.0])
    # w = 0: the new component is pruned at once; w = 1: it replaces the mixture.
    unchanged, _ = boosting.add_and_prune(q, jnp.asarray(0.0), jnp.array([3.0]), jnp.zeros(1), jnp.asarray(1e-3))
    assert int(jnp.sum(unchanged.mask)) == 2 and abs(float(jnp.sum(unchanged.weights)) - 1.0) < 1e-12
    replaced, _ = boosting.add_and_prune(q, jnp.asarray(1.0), jnp.array([3.0]), jnp.zeros(1), jnp.asarray(1e-3))
    np.testing.assert_allclose(replaced.weights, [0, 0, 0, 1, 0])
    full = mixture([0.5, 0.5], [[0.0], [1.0]], [[1.0], [1.0]])
    same, added = boosting.add_and_prune(full, jnp.asarray(0.3), jnp.array([3.0]), jnp.zeros(1), jnp.asarray(1e-3))
    assert not bool(added)
    np.testing.assert_allclose(same.weights, full.weights, rtol=1e-12)


def test_stabiliser_bounds_the_relbo_and_the_new_component_in_the_tail(getkey):
    posterior = small_gp(getkey())  # data near the origin, constant mean −6 far away
    q = mixture([1.0], [[6.0, 6.0]], [[0.25, 0.25]], slots=2)  # the f-step starts from a draw of q, in the tail
    noise = jax.random.normal(getkey(), (256, 2))

    def value(location, log_stabilizer):
        mean = jnp.array([location, location])
        return float(relbo(posterior, q, mean, jnp.zeros(2), noise, regularization=1.0, log_stabilizer=log_stabilizer))

    assert value(40.0, -jnp.inf) - value(20.0, -jnp.inf) > 500.0  # −log q grows without bound
    assert abs(value(40.0, -20.0) - value(20.0, -20.0)) < 1e-9  # flat: δ_D caps −log(q + δ_D)
    mean, log_scale, _ = fit_component(
        posterior,
        q,
        getkey(),
        regularization=jnp.asarray(1.0),
        log_stabilizer=jnp.asarray(-20.0),
        num_steps=200,
        learning_rate=jnp.asarray(0.05),
        num_samples=64,
    )
    # Only the mean is bounded: with a flat m_D in the tail, λ/4 log|Σ| still widens the component.
    assert float(jnp.max(jnp.abs(mean))) < 8.0


def test_bounded_steps_keep_the_components_in_the_data_box_where_unbounded_ones_run_away():
    """With a constant prior mean, exp m_D is not integrable: far from the data m_D is flat and
    a wider component only gains entropy. Unbounded, the f-step widens the new component without
    limit and the exact w-step takes it (w = 1); bounded, every mean stays in the box of the
    training inputs and every standard deviation at most its width."""
    posterior = small_gp(jax.random.key(3))
    observations = posterior.observations
    lower, upper = (np.asarray(bound) for bound in input_span(observations.inputs, observations.mask))
    start = mixture([1.0], [[0.0, 0.0]], [[1.0, 1.0]], slots=6)
    settings = dict(
        relbo_steps=100, relbo_samples=64, weight_samples=100, joint_update_every=2, joint_steps=50,
        joint_samples_per_component=20,
    )  # fmt: skip
    runaway = boosting.Boosting(bounded=False, **settings)
    _, infos = gpcompose.run(runaway, runaway.init(posterior, start), jax.random.key(0), 3)
    assert float(jnp.max(infos.variance)) > 1e6 and float(infos.weight[-1]) == 1.0
    bounded = boosting.Boosting(**settings)
    state, infos = gpcompose.run(bounded, bounded.init(posterior, start), jax.random.key(0), 3)
    active = np.asarray(state.mixture.mask)
    component_means = np.asarray(state.mixture.means)[active]
    component_sds = np.sqrt(np.asarray(state.mixture.component_variances)[active])
    assert np.all((component_means >= lower - 1e-12) & (component_means <= upper + 1e-12))
    assert np.all(component_sds <= upper - lower + 1e-12)
    assert np.all(np.sqrt(np.asarray(infos.variance)) <= upper - lower + 1e-12)


TARGET_CENTRES = 5.0 * jax.random.normal(jax.random.key(100), (12, 1))


def twelve_component_target(dtype=jnp.float64):
    """The 1-D mixture of thesis §7.1: 12 equal-weight unit-variance components, μ_i ~ N(0, 5²)."""
    return mixtures.GaussianMixture.from_moments(
        jnp.full((12,), 1 / 12, dtype), TARGET_CENTRES.astype(dtype), jnp.ones((12, 1), dtype)
    )


FAST = boosting.Boosting(
    relbo_steps=150, relbo_samples=100, weight_samples=200, joint_update_every=10, joint_steps=150,
    joint_samples_per_component=40,
)  # fmt: skip


def start_mixture(dtype=jnp.float64, slots=16):
    return mixtures.GaussianMixture.from_moments(
        jnp.ones((slots,), dtype), jnp.zeros((slots, 1), dtype), jnp.full((slots, 1), 30.0, dtype),
        mask=jnp.arange(slots) < 1,
    )  # fmt: skip


# One compiled step for every float64 test below; it fails if anything re-traces it.
STEP = eqx.filter_jit(eqx.debug.assert_max_traces(FAST.step, max_traces=1))


def test_boosting_with_the_exact_log_density_recovers_the_moments_and_traces_once():
    target = twelve_component_target()
    state = FAST.init(oracle(target), start_mixture())
    divergence_key = jax.random.key(7)

    def kl(state):  # KL(q‖p) = −ELBO for a normalised target with m_D = log p exactly
        return -float(elbo(state.surrogate, state.mixture, divergence_key, 20_000)[0])

    initial_kl = kl(state)
    weights_used, joint_updates = [], 0
    for key in jax.random.split(jax.random.key(8), 30):
        state, info = STEP(state, key)
        weights_used.append(float(info.weight))
        joint_updates += int(info.joint_update)
    q = state.mixture
    assert int(state.num_steps) == 30 and joint_updates == 3
    assert kl(state) < 0.05 < initial_kl
    target_sd = float(jnp.sqrt(target.covariance()[0, 0]))
    assert abs(float(q.mean()[0] - target.mean()[0])) < 0.02 * target_sd
    assert abs(float(q.covariance()[0, 0] / target.covariance()[0, 0]) - 1.0) < 0.02
    weights = np.asarray(q.weights)
    assert np.all(weights[np.asarray(q.mask)] >= 1e-3) and abs(weights.sum() - 1.0) < 1e-12
    assert min(weights_used) >= 0.0 and max(weights_used) <= 1.0


def test_vmap_over_seeds_equals_a_loop():
    state = FAST.init(oracle(twelve_component_target()), start_mixture())
    keys = jax.random.split(jax.random.key(9), 3)
    batched_state, batched_info = jax.vmap(FAST.step, in_axes=(None, 0))(state, keys)
    for index, key in enumerate(keys):
        single_state, single_info = STEP(state, key)
        for batched_leaf, leaf in zip(
            jax.tree.leaves((batched_state, batched_info)), jax.tree.leaves((single_state, single_info))
        ):
            np.testing.assert_allclose(batched_leaf[index], leaf, rtol=1e-9, atol=1e-10)


def test_float32_smoke_run():
    target = twelve_component_target(jnp.float32)
    state = FAST.init(oracle(target), start_mixture(jnp.float32))
    state, infos = gpcompose.run(FAST, state, jax.random.key(10), 2)
    assert state.mixture.means.dtype == jnp.float32 and infos.relbo.dtype == jnp.float32
    assert bool(jnp.all(jnp.isfinite(state.mixture.means))) and bool(jnp.all(jnp.isfinite(infos.relbo)))


def test_bad_input_raises_value_errors(getkey):
    with pytest.raises(ValueError, match="relbo_steps"):
        boosting.Boosting(relbo_steps=0)
    with pytest.raises(ValueError, match="joint_update_every"):
        boosting.Boosting(joint_update_every=-1)
    posterior = small_gp(getkey())
    with pytest.raises(ValueError, match="dimension"):
        FAST.init(posterior, start_mixture())
    with pytest.raises(ValueError, match="GaussianMixture"):
        FAST.init(posterior, mixtures.MultivariateNormal(jnp.zeros(2), jnp.eye(2)))
    with pytest.raises(ValueError, match="surrogate"):
        FAST.init(None, start_mixture())
