"""BVBMC learner: log-space acquisitions against their direct formulae, the raw-units
surrogate against the scaled GP, end-to-end accuracy on a Gaussian target, ask/tell
tracing and resume, the drivers (failures, checkpoints, interrupt and resume, vmap over
seeds) and bad input. Problem sizes are small; the thesis's problems are in
benchmarks/bvbmc_*.py."""

import math
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose import acquisition, boosting, bvbmc, gp, kernels, mixtures, quadrature
from gpcompose.active_learning import Checkpoint, load_checkpoint, run_black_box, run_traceable, save_checkpoint
from gpcompose.bvbmc._learner import refit_surrogate
from gpcompose.bvbmc._surrogate import initial_prior, raw_units_posterior
from gpcompose.problems.metrics import gskl

MEAN = jnp.array([0.5, -1.0])
SD = jnp.array([1.0, 0.6])
LOG_Z = 1.7


def gaussian_log_density(x):
    """log Z + log N(x; MEAN, diag(SD²)), so the evidence is exactly e^{LOG_Z}."""
    standardised = (x - MEAN) / SD
    return LOG_Z - 0.5 * jnp.sum(standardised**2) - jnp.sum(jnp.log(SD)) - math.log(2 * math.pi)


FAST = boosting.Boosting(
    relbo_steps=60, relbo_samples=64, weight_samples=128, joint_update_every=2, joint_steps=60,
    joint_samples_per_component=32,
)  # fmt: skip
KERNEL = kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0)  # fastest embeddings to compile
LEARNER = bvbmc.BVBMC(
    max_components=6,
    fit_steps=100,
    initial_joint_steps=150,
    num_candidates=32,
    num_search_starts=2,
    search_steps=10,
    final_entropy_samples=8192,
    boosting=FAST,
    kernel=KERNEL,
)
NUM_INITIAL, BUDGET = 12, 6  # one shape for every test: compiled programs are shared


def initial_points(key):
    X = MEAN[None, :] + 2.0 * jax.random.normal(key, (NUM_INITIAL, 2))
    return np.asarray(X), np.asarray(jax.vmap(gaussian_log_density)(X))


def start(key, X=None, y=None):
    if X is None:
        X, y = initial_points(jax.random.key(0))
    return LEARNER.init(X, y, budget=BUDGET, key=key)


def target(x):
    return float(gaussian_log_density(jnp.asarray(x)))


def test_log_space_acquisitions_match_their_direct_formulae(getkey):
    mean = jax.random.uniform(getkey(), (50,), minval=-5.0, maxval=3.0)
    variance = jax.random.uniform(getkey(), (50,), minval=1e-3, maxval=3.0)
    log_q = jax.random.uniform(getkey(), (50,), minval=-5.0, maxval=0.0)
    q = np.exp(np.asarray(log_q))
    m, k = np.asarray(mean), np.asarray(variance)
    direct = {
        "us": k * q**2,
        "prop": k * np.exp(m) * q**2,
        "soft_prop": k * np.log1p(np.exp(m)) * q**2,
        "mmlt": np.exp(2 * m + k) * (np.exp(k) - 1),
        "mmlt_p": np.exp(2 * m + k) * (np.exp(k) - 1) * q**2,
    }
    modules = {
        "us": bvbmc.UncertaintySampling(),
        "prop": bvbmc.Prospective(),
        "soft_prop": bvbmc.SoftProspective(),
        "mmlt": bvbmc.MomentMatchedLogTransform(),
        "mmlt_p": bvbmc.ProspectiveMomentMatchedLogTransform(),
    }
    for name, function in acquisition.LOG_BMC_ACQUISITIONS.items():
        values = jax.vmap(function)(mean, variance, log_q)
        np.testing.assert_allclose(np.exp(values), direct[name], rtol=1e-12, err_msg=name)
        np.testing.assert_array_equal(jax.vmap(modules[name])(mean, variance, log_q), values, err_msg=name)
        # where e^m, e^{2m+k} overflow or the variance is zero the logs stay finite
        extreme = jax.vmap(function)(jnp.array([800.0, -800.0, 0.0]), jnp.array([50.0, 1e-300, 0.0]), jnp.zeros(3))
        assert bool(jnp.all(jnp.isfinite(extreme))), name
    threshold = jnp.asarray(0.1)
    regulariser = jax.vmap(lambda k: acquisition.log_variance_regularizer(k, threshold))(variance)
    np.testing.assert_allclose(regulariser, np.where(k < 0.1, 1.0 - 0.1 / k, 0.0), rtol=1e-12)


def test_alternations_pick_an_acquisition_index():
    """Cyclic: evaluations so far mod the number of acquisitions; random: uniform, from `key`."""
    key = jax.random.key(0)
    assert [int(bvbmc.CyclicAlternation()(3, jnp.asarray(n), key)) for n in range(12, 16)] == [0, 1, 2, 0]
    drawn = [int(bvbmc.RandomAlternation()(3, jnp.asarray(12), k)) for k in jax.random.split(key, 30)]
    assert set(drawn) == {0, 1, 2}


@pytest.mark.parametrize(
    "mean", [bvbmc.ConstantPriorMean(), bvbmc.NegativeQuadraticPriorMean()], ids=["constant", "negative_quadratic"]
)
@pytest.mark.parametrize("scaling", [bvbmc.Normalize(), bvbmc.ZeroMax()], ids=["normalize", "zeromax"])
def test_raw_units_surrogate_is_the_rescaled_gp_of_the_scaled_outputs(getkey, scaling, mean):
    X = jax.random.normal(getkey(), (10, 2))
    y = -3.0 * jnp.sum(X**2, axis=1) + 40.0
    mask = jnp.ones(10, bool)
    options = bvbmc.BVBMC(scaling=scaling, mean=mean)
    shift, scale = scaling(y, mask)
    if isinstance(scaling, bvbmc.Normalize):
        np.testing.assert_allclose([shift, scale], [np.mean(y), np.std(np.asarray(y), ddof=1)], rtol=1e-12)
    else:
        np.testing.assert_allclose([shift, scale], [np.max(y), 1.0], rtol=1e-12)
    scaled = (y - shift) / scale
    np.testing.assert_allclose(mean.constant(scaled, mask), 2 * jnp.min(scaled) - jnp.max(scaled))
    # eq. 6.11 with K_C = 2, and a C fixed in scaled units
    np.testing.assert_allclose(
        bvbmc.ConstantPriorMean(offset=2.0).constant(scaled, mask), 3 * jnp.min(scaled) - 2 * jnp.max(scaled)
    )
    np.testing.assert_array_equal(bvbmc.ConstantPriorMean(value=-20.0).constant(scaled, mask), -20.0)
    assert isinstance(initial_prior(X, scaled, mask, None, options)[0], kernels.ProductMatern)  # the default
    prior = initial_prior(X, scaled, mask, KERNEL, options)
    raw = raw_units_posterior(prior, X, y, mask, shift, scale, options)
    reference = gp.condition(prior[0], prior[1], X, scaled, options.jitter)
    X_new = jax.random.normal(getkey(), (5, 2))
    raw_mean, raw_variance = gp.predict(raw, X_new)
    scaled_mean, scaled_variance = gp.predict(reference, X_new)
    np.testing.assert_allclose(raw_mean, scale * scaled_mean + shift, rtol=1e-9)
    np.testing.assert_allclose(raw_variance, scale**2 * scaled_variance, rtol=1e-7, atol=1e-12)
    # BMC integrals rescale as a·E + b and a²·Var (thesis eqs. 6.8–6.9).
    q = mixtures.GaussianMixture.from_moments(jnp.array([0.3, 0.7]), X[:2], jnp.full((2, 2), 0.5))
    raw_integral, raw_integral_variance = quadrature.integrate(raw, q)
    integral, integral_variance = quadrature.integrate(reference, q)
    np.testing.assert_allclose(raw_integral, scale * integral + shift, rtol=1e-9)
    np.testing.assert_allclose(raw_integral_variance, scale**2 * integral_variance, rtol=1e-6, atol=1e-12)


def test_refit_on_the_initial_data_reproduces_the_initial_fit():
    state = start(jax.random.key(3))
    refitted = eqx.filter_jit(refit_surrogate)(LEARNER, state)
    X_new = MEAN[None, :] + jax.random.normal(jax.random.key(11), (6, 2))
    for a, b in zip(gp.predict(refitted, X_new), gp.predict(state.boosting.surrogate, X_new)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-8)


def test_gaussian_target_end_to_end():
    X0, _ = initial_points(jax.random.key(0))
    result = bvbmc.fit(target, X0, key=jax.random.key(1), budget=BUDGET, learner=LEARNER)
    assert isinstance(result.posterior, mixtures.GaussianMixture)
    divergence = gskl(result.posterior.mean(), result.posterior.covariance(), MEAN, jnp.diag(SD**2))
    assert float(divergence) < 0.01
    assert abs(float(result.elbo) - LOG_Z) < 0.1 and 0 < float(result.elbo_sd) < 0.1
    assert result.X.shape == (NUM_INITIAL + BUDGET, 2) and result.num_failed == 0
    np.testing.assert_allclose(result.y, jax.vmap(gaussian_log_density)(result.X), rtol=1e-12)
    samples = result.posterior.sample(jax.random.key(2), 10)
    assert samples.shape == (10, 2) and bool(jnp.all(jnp.isfinite(result.posterior.log_prob(samples))))


def test_a_second_run_on_new_data_and_a_new_budget_compiles_nothing(backend_compilations):
    """`init` and `run_black_box` on other initial evaluations of the same shape, with another
    key and another budget of the same buffer rows (`active_learning.buffer_rows`), after a
    first run: no program is compiled (or read from the cache) again."""
    run_black_box(LEARNER, target, start(jax.random.key(3)), jax.random.key(4))
    before = len(backend_compilations)
    X, y = initial_points(jax.random.key(21))
    state = LEARNER.init(X, y, budget=BUDGET - 1, key=jax.random.key(22))
    second = run_black_box(LEARNER, target, state, jax.random.key(23))
    assert len(backend_compilations) == before
    assert int(second.evaluations.num_evaluations) == BUDGET - 1


@eqx.filter_jit
@eqx.debug.assert_max_traces(max_traces=1)
def ask_and_tell(state, key):
    x, _ = LEARNER.ask(state, key)
    return LEARNER.tell(state, x, gaussian_log_density(x))[0]


def ask_tell_loop(state, key, count):
    for _ in range(count):
        state = ask_and_tell(state, jax.random.fold_in(key, state.evaluations.num_evaluations))
    return state


def test_ask_tell_trace_once_and_resume_equals_uninterrupted(tmp_path):
    state = start(jax.random.key(3))
    key = jax.random.key(4)
    uninterrupted = ask_tell_loop(state, key, 3)
    halfway = ask_tell_loop(state, key, 1)
    path = tmp_path / "bvbmc.eqx"
    eqx.tree_serialise_leaves(path, halfway)
    resumed = ask_tell_loop(eqx.tree_deserialise_leaves(path, state), key, 2)
    assert int(resumed.evaluations.num_evaluations) == 3 and int(resumed.boosting.num_steps) == 3
    for a, b in zip(jax.tree.leaves(resumed), jax.tree.leaves(uninterrupted)):
        np.testing.assert_array_equal(a, b)


def leaves_close(a, b, rtol, atol):
    for leaf_a, leaf_b in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(leaf_a, leaf_b, rtol=rtol, atol=atol)


def test_run_traceable_vmapped_over_seeds_equals_single_runs():
    """8 seeds of `init` + `run_traceable` in one vmapped call: each member
    (`gpcompose.unstack`) and its `result` equal that seed's run alone, traced (to 1e-9) and
    by ask/tell (to 1e-7)."""
    X, y = initial_points(jax.random.key(0))
    keys = jax.random.split(jax.random.key(5), 8)
    states = jax.vmap(lambda key: run_traceable(LEARNER, gaussian_log_density, start(key, X, y), key))(keys)
    with pytest.raises(ValueError, match="unstack"):
        LEARNER.result(states)
    members = gpcompose.unstack(states)
    assert len(members) == 8
    for key, member in zip(keys, members):
        assert int(member.evaluations.num_evaluations) == BUDGET and int(member.boosting.num_steps) == BUDGET
        state = start(key, X, y)
        alone = run_traceable(LEARNER, gaussian_log_density, state, key)
        leaves_close(member, alone, rtol=1e-9, atol=1e-9)
        leaves_close(LEARNER.result(member), LEARNER.result(alone), rtol=1e-9, atol=1e-9)
        leaves_close(member, ask_tell_loop(state, key, BUDGET), rtol=1e-7, atol=1e-9)


def test_failed_evaluations_are_recorded_and_the_run_goes_on():
    state = start(jax.random.key(6))
    x, _ = LEARNER.ask(state, jax.random.key(7))
    failed, info = LEARNER.tell(state, x, jnp.nan)
    assert not bool(info.succeeded) and bool(info.updated)
    assert int(failed.evaluations.num_evaluations) == 1 and not bool(failed.evaluations.succeeded[NUM_INITIAL])
    # the failure joins the GP as a censored observation at the lowest successful value
    assert int(failed.boosting.surrogate.observations.num_used) == NUM_INITIAL + 1
    assert bool(failed.evaluations.censored[NUM_INITIAL]) and LEARNER.result(failed).num_failed == 1
    lowest = float(jnp.min(state.evaluations.values[:NUM_INITIAL]))
    mean_before = float(gp.predict(state.boosting.surrogate, x[None])[0][0])
    mean_after = float(gp.predict(failed.boosting.surrogate, x[None])[0][0])
    assert lowest < mean_after < mean_before - 1.0  # pulled down, softly: the shaped noise
    again, _ = LEARNER.ask(failed, jax.random.key(7))
    assert float(jnp.max(jnp.abs(again - x))) > 1e-3  # the same key no longer asks the failed point
    calls = []

    def flaky(x):
        calls.append(x)
        if len(calls) == NUM_INITIAL + 2:
            raise RuntimeError("simulator crashed")
        return target(x)

    X0, _ = initial_points(jax.random.key(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = bvbmc.fit(flaky, X0, key=jax.random.key(1), budget=BUDGET, learner=LEARNER)
    assert result.num_failed == 1 and result.X.shape == (NUM_INITIAL + BUDGET - 1, 2)
    assert any("simulator crashed" in str(warning.message) for warning in caught)


def test_bad_input_raises_value_errors():
    X, y = initial_points(jax.random.key(0))
    with pytest.raises(ValueError, match="`X`"):
        LEARNER.init(X[:, 0], y, budget=BUDGET, key=jax.random.key(0))
    with pytest.raises(ValueError, match="`y`"):
        LEARNER.init(X, y[:-1], budget=BUDGET, key=jax.random.key(0))
    with pytest.raises(ValueError, match="`budget`"):
        LEARNER.init(X, y, budget=2.5, key=jax.random.key(0))
    with pytest.raises(ValueError, match="kernel"):
        bvbmc.BVBMC(kernel="matern")
    with pytest.raises(ValueError, match="acquisitions"):
        bvbmc.BVBMC(acquisitions=("prop", "ei"))
    with pytest.raises(ValueError, match="acquisitions"):
        bvbmc.BVBMC(acquisitions=())
    with pytest.raises(ValueError, match="`scaling` must be a bvbmc.AbstractOutputScaling"):
        bvbmc.BVBMC(scaling="standardise")
    with pytest.raises(ValueError, match="`mean` must be a bvbmc.AbstractPriorMean"):
        bvbmc.BVBMC(mean=bvbmc.ZeroMax())
    with pytest.raises(ValueError, match="`alternation` must be a bvbmc.AbstractAlternation"):
        bvbmc.BVBMC(alternation="cyclic")
    with pytest.raises(ValueError, match="boosting"):
        bvbmc.BVBMC(boosting=None)
    with pytest.raises(ValueError, match="at least 2"), pytest.warns(RuntimeWarning, match="dropped 1"):
        LEARNER.init(X[:2], np.array([np.nan, 1.0]), budget=BUDGET, key=jax.random.key(0))
    state = start(jax.random.key(6))
    with pytest.raises(ValueError, match="`x`"):
        LEARNER.tell(state, jnp.zeros(3), 0.0)
    with pytest.raises(ValueError, match="noise_sd"):
        LEARNER.tell(state, jnp.zeros(2), 0.0, noise_sd=0.1)


def test_acquisitions_stay_in_the_box_of_the_initial_design():
    """With `search_in_box` (the default) every asked point lies in the box of the initial
    points, so the box that bounds the components cannot grow from run to run (the
    runaway of the Student-t toy runs). From this narrow design (0.3 of the target's sd),
    the asks of `search_in_box=False` leave the box (checked by hand: 3 of 4)."""
    X = np.asarray(MEAN[None, :] + 0.3 * SD[None, :] * jax.random.normal(jax.random.key(8), (NUM_INITIAL, 2)))
    y = np.asarray(jax.vmap(gaussian_log_density)(X))
    state = ask_tell_loop(start(jax.random.key(9), X, y), jax.random.key(10), BUDGET)
    asked = np.asarray(state.evaluations.inputs[NUM_INITIAL : NUM_INITIAL + BUDGET])
    assert np.all((asked >= X.min(axis=0)) & (asked <= X.max(axis=0)))


def faulty(x):
    """Raises on the 1st call, returns NaN, +inf and −inf on the 3rd, 4th and 6th."""
    faulty.calls += 1
    if faulty.calls == 1:
        raise RuntimeError("simulator crashed")
    return {3: float("nan"), 4: float("inf"), 6: float("-inf")}.get(faulty.calls, target(x))


def test_black_box_run_records_every_failure_and_goes_on():
    state = start(jax.random.key(12))
    faulty.calls = 0
    seen = []
    with pytest.warns(RuntimeWarning, match="recorded as failed"):
        final = run_black_box(LEARNER, faulty, state, jax.random.key(13), callback=seen.append)
    evaluations = final.evaluations
    assert faulty.calls == BUDGET and int(evaluations.num_evaluations) == BUDGET
    assert int(evaluations.num_failed) == 4 and bool(jnp.all(evaluations.evaluated[: NUM_INITIAL + BUDGET]))
    assert [bool(progress.tell_info.succeeded) for progress in seen] == [False, True, False, False, True, False]
    assert all(bool(progress.tell_info.updated) for progress in seen) and int(final.boosting.num_steps) == BUDGET
    assert all(isinstance(progress.tell_info.update, boosting.BoostingInfo) for progress in seen)
    assert int(final.boosting.surrogate.observations.num_used) == NUM_INITIAL + BUDGET  # failures censored
    result = LEARNER.result(final)
    assert result.num_failed == 4 and result.X.shape == (NUM_INITIAL + 2, 2)
    assert np.isfinite(float(result.elbo)) and np.isfinite(float(result.elbo_sd))
    assert bool(jnp.all(jnp.isfinite(result.posterior.means))) and bool(jnp.all(jnp.isfinite(result.y)))


def test_interrupt_and_resume_from_a_checkpoint_is_bit_for_bit(tmp_path):
    X, y = initial_points(jax.random.key(0))
    state = start(jax.random.key(14), X, y)
    key = jax.random.key(15)
    full = run_black_box(LEARNER, target, state, key)
    calls = {"n": 0}

    def interrupted(x):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return target(x)

    path = tmp_path / "bvbmc.gpc"
    with pytest.warns(RuntimeWarning, match="interrupted after 3 evaluations"):
        partial = run_black_box(LEARNER, interrupted, state, key, checkpoint=Checkpoint(path, every=2))
    assert int(partial.evaluations.num_evaluations) == 3
    like = eqx.filter_eval_shape(LEARNER.init, X, y, budget=BUDGET, key=jax.random.key(14))
    learner, loaded, loaded_key = load_checkpoint(path, LEARNER, like)
    resumed = run_black_box(learner, target, loaded, loaded_key)
    for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed), strict=True):
        assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))


def test_a_checkpoint_of_other_shapes_is_refused(tmp_path):
    X, y = initial_points(jax.random.key(0))
    path = tmp_path / "bvbmc.gpc"
    save_checkpoint(path, LEARNER, start(jax.random.key(16), X, y), jax.random.key(17))
    like = eqx.filter_eval_shape(LEARNER.init, X[1:], y[1:], budget=BUDGET, key=jax.random.key(16))
    with pytest.raises(ValueError, match="other shapes"):
        load_checkpoint(path, LEARNER, like)
    with pytest.raises(ValueError, match="other settings"):
        load_checkpoint(path, bvbmc.BVBMC(max_components=5, boosting=FAST, kernel=KERNEL), like)
