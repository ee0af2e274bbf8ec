"""Tests of `gpcompose.bo`: a BES run on Branin reaches the minimum region, a run vmapped
over seeds equals single runs, BES falls back to EI exactly when no sample is accepted,
the drivers record failed evaluations and keep the original sign, the default learner (EI)
needs no bounds, checkpoints resume a run bit for bit and refuse other shapes, and bad input."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose import bo, bounded
from gpcompose.active_learning import Checkpoint, load_checkpoint, save_checkpoint
from gpcompose.bo import _propose as bo_propose
from gpcompose.problems import optimization_functions

BRANIN = optimization_functions()["branin"]
BRANIN_MINIMUM = BRANIN.minimum
BRANIN_LOWER, BRANIN_UPPER = np.asarray(BRANIN.lower), np.asarray(BRANIN.upper)
SEARCH = dict(num_candidates=64, num_starts=2, search_steps=15, extrema_steps=10, fit_steps=40)
SMALL_BES = bo.BO(acquisition=bo.BoundedEntropySearch(num_samples=16, num_features=40), **SEARCH)
SMALL_EI = bo.BO(acquisition=bo.ExpectedImprovement(), **SEARCH)
RANDOM = bo.BO(acquisition=bo.RandomSearch())
NO_X, NO_Y = np.zeros((0, 2)), np.zeros(0)  # no evaluations before the run


def branin(x):
    return BRANIN(jnp.asarray(x))


def negative_branin(x):
    return -branin(x)


def test_bes_run_vmapped_over_seeds_equals_loop_and_finds_branin_minimum():
    # f⁺ = −min Branin (maximising −Branin), f⁻ = −max Branin on the box; document η defaults
    state = SMALL_BES.init(
        NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=14, f_plus=-BRANIN_MINIMUM, f_minus=-BRANIN.maximum
    )
    keys = jax.random.split(jax.random.key(3), 4)
    batched = jax.jit(jax.vmap(lambda key: gpcompose.run_traceable(SMALL_BES, negative_branin, state, key)))(keys)
    for index in (0, 1):
        single = gpcompose.run_traceable(SMALL_BES, negative_branin, state, keys[index])
        np.testing.assert_array_equal(batched.evaluations.succeeded[index], single.evaluations.succeeded)
        # Batched and single programs round differently (1e-16); each ML-II fit (BFGS, rtol
        # 1e-8) and Adam search carries that forward, so the proposals drift apart by about
        # a factor 10 per iteration (1e-9 at the first model-based proposal, 1e-4 at the
        # tenth). The first four model-based proposals must agree to 1e-5.
        np.testing.assert_allclose(batched.evaluations.inputs[index, :6], single.evaluations.inputs[:6], atol=1e-5)
    best = np.max(np.asarray(batched.evaluations.values), axis=1)
    regret = -best - BRANIN_MINIMUM
    # Random search with 14 points has a median regret of ≈ 2.5 on Branin (1 − (1 − p)^14 over the
    # area fraction p within regret 1 is ≈ 0.25); BES must reach regret < 1 in most seeds.
    assert np.median(regret) < 1.0, regret


def test_bes_falls_back_to_ei_when_nothing_is_accepted():
    # With η₊, η₋ tiny no sample's extrema lie within 2η of the bounds, so the BES proposal
    # must be the EI argmax on the same square-root GP surrogate.
    points = np.array([[0.0, 5.0], [5.0, 10.0], [-3.0, 12.0], [8.0, 2.0]])
    values = -np.array([float(branin(point)) for point in points])
    state = SMALL_BES.init(
        points, values, BRANIN_LOWER, BRANIN_UPPER, budget=4, f_plus=10.0, f_minus=-400.0, eta_plus=1e-8, eta_minus=1e-8
    )

    @jax.jit
    def bes_and_ei(state, key):
        x, info = bo._propose.propose(SMALL_BES, state, key)
        _, sample_key, search_key = jax.random.split(key, 3)
        evaluations = state.evaluations
        location, scale = bo._propose.standardisation(evaluations)
        y = jnp.where(evaluations.succeeded, (evaluations.values - location) / scale, 0.0)
        bounds = bo._propose.standardised_bounds(SMALL_BES, state, location, scale)
        offset = bounded.square_root_offset(bounds)
        surrogate = bo.fit_surrogate(evaluations.inputs, y, evaluations.succeeded, offset, SEARCH["fit_steps"])
        best = jnp.max(jnp.where(evaluations.succeeded, y, -jnp.inf))
        search = {name: SEARCH[name] for name in ("num_candidates", "num_starts", "search_steps", "extrema_steps")}
        context = bo.ProposalContext(evaluations.inputs, evaluations.succeeded, surrogate, bounds, best, **search)
        return x, info, bo.ExpectedImprovement().propose(context, sample_key, search_key).x

    x, info, ei_argmax = bes_and_ei(state, jax.random.key(7))
    assert int(info.num_accepted) == 0 and bool(info.fell_back) and not bool(info.design)
    np.testing.assert_allclose(x, ei_argmax, rtol=1e-12)


def test_square_root_center_reaches_the_surrogate():
    X = jax.random.uniform(jax.random.key(3), (6, 2))
    y = jnp.sin(3.0 * X[:, 0]) - X[:, 1]
    offset = jnp.asarray(2.0)
    for center, root_mean in (("data", 2.0), ("bound", 0.0)):
        surrogate = bo.fit_surrogate(X, y, jnp.ones(6, bool), offset, 5, center)
        np.testing.assert_allclose(surrogate.posterior.root.mean.constant.value, root_mean, rtol=1e-12)


def test_a_second_run_on_new_data_and_a_new_budget_compiles_nothing(backend_compilations):
    """`init` and `run_black_box` from another initial design of the same size, with another key
    and another budget of the same buffer rows (`active_learning.buffer_rows`), after a first
    run: no program is compiled (or read from the cache) again."""

    def run(design_key, run_key, budget):
        X = jax.random.uniform(design_key, (3, 2), minval=BRANIN_LOWER, maxval=BRANIN_UPPER)
        y = -jax.vmap(branin)(X)
        state = SMALL_EI.init(np.asarray(X), np.asarray(y), BRANIN_LOWER, BRANIN_UPPER, budget=budget)
        return gpcompose.run_black_box(SMALL_EI, lambda x: -float(branin(x)), state, run_key)

    run(jax.random.key(1), jax.random.key(2), 5)
    before = len(backend_compilations)
    second = run(jax.random.key(3), jax.random.key(4), 6)
    assert len(backend_compilations) == before
    assert int(second.evaluations.num_evaluations) == 6


def test_minimize_records_failures_and_keeps_the_sign():
    calls = []

    def target(x):
        calls.append(x)
        if len(calls) == 3:
            return float("nan")
        if len(calls) == 4:
            raise RuntimeError("simulator crashed")
        return float(branin(x))

    with pytest.warns(RuntimeWarning, match="recorded as failed"):
        found = bo.minimize(target, BRANIN_LOWER, BRANIN_UPPER, key=jax.random.key(0), budget=8, learner=RANDOM)
    assert found.num_failed == 2 and found.X.shape == (6, 2) and found.y.shape == (6,)
    np.testing.assert_allclose(found.y, [float(branin(np.asarray(x))) for x in found.X], rtol=1e-10)
    assert float(found.y_best) == float(np.min(found.y))
    np.testing.assert_allclose(found.x_best, found.X[int(np.argmin(found.y))])
    assert np.all((np.asarray(found.X) >= BRANIN_LOWER) & (np.asarray(found.X) <= BRANIN_UPPER))
    # resume from a state saved after five evaluations: the same run, no evaluation lost
    saved = []
    calls.clear()

    def save_fifth(progress):
        if int(progress.state.evaluations.num_evaluations) == 5:
            saved.append(progress.state)

    with pytest.warns(RuntimeWarning, match="recorded as failed"):
        bo.minimize(
            target, BRANIN_LOWER, BRANIN_UPPER, key=jax.random.key(0), budget=8, learner=RANDOM, callback=save_fifth
        )
    resumed = RANDOM.result(gpcompose.run_black_box(RANDOM, negative_branin, saved[0], jax.random.key(0)))
    assert resumed.num_failed == 2
    np.testing.assert_allclose(resumed.X, found.X, rtol=1e-12)


def test_minimize_runs_with_the_default_learner_and_no_bounds():
    # `BO()` is expected improvement, which needs neither f⁺ nor f⁻ (BES must be chosen explicitly).
    assert isinstance(bo.BO().acquisition, bo.ExpectedImprovement)
    found = bo.minimize(branin, BRANIN_LOWER, BRANIN_UPPER, key=jax.random.key(0), budget=3)
    assert found.num_failed == 0 and found.X.shape == (3, 2)
    np.testing.assert_allclose(found.y, [float(branin(np.asarray(x))) for x in found.X], rtol=1e-10)
    assert float(found.y_best) == float(np.min(found.y))


def test_given_evaluations_count_towards_the_initial_design():
    X = np.array([[0.0, 5.0], [5.0, 10.0], [-3.0, 12.0]])
    y = np.array([float(branin(x)) for x in X])
    y[1] = np.nan  # a failed evaluation made before the run: kept, never fitted, not counted
    state = RANDOM.init(X, -y, BRANIN_LOWER, BRANIN_UPPER, budget=2)
    evaluations = state.evaluations
    assert evaluations.num_initial == 3 and evaluations.budget == 2 and int(evaluations.num_evaluations) == 0
    np.testing.assert_array_equal(evaluations.succeeded[:5], [True, False, True, False, False])
    np.testing.assert_allclose(evaluations.inputs[0], [5.0 / 15.0, 5.0 / 15.0], rtol=1e-12)
    _, info = RANDOM.ask(state, jax.random.key(0))
    assert not bool(info.design)  # two successful given evaluations are the whole design
    _, info = RANDOM.ask(RANDOM.init(X[:2], -y[:2], BRANIN_LOWER, BRANIN_UPPER, budget=2), jax.random.key(0))
    assert bool(info.design)
    found = bo.minimize(branin, BRANIN_LOWER, BRANIN_UPPER, key=jax.random.key(1), budget=2, learner=RANDOM, X=X, y=y)
    assert found.num_failed == 0 and found.X.shape == (4, 2)
    np.testing.assert_allclose(found.X[:2], X[[0, 2]], rtol=1e-12)
    np.testing.assert_allclose(found.y[:2], y[[0, 2]], rtol=1e-12)


def faulty(x):
    """−Branin, except that the 2nd call raises and the 4th, 5th and 6th return NaN, +inf, −inf."""
    faulty.calls += 1
    if faulty.calls == 2:
        raise RuntimeError("simulator crashed")
    if faulty.calls in (4, 5, 6):
        return {4: float("nan"), 5: float("inf"), 6: float("-inf")}[faulty.calls]
    return float(negative_branin(x))


def test_failed_evaluations_are_recorded_and_counted():
    state = SMALL_EI.init(NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=8)
    faulty.calls = 0
    seen = []
    with pytest.warns(RuntimeWarning, match="recorded as failed"):
        final = gpcompose.run_black_box(SMALL_EI, faulty, state, jax.random.key(1), callback=seen.append)
    evaluations = final.evaluations
    assert faulty.calls == 8 and int(evaluations.num_evaluations) == 8 and int(evaluations.num_failed) == 4
    assert [bool(p.tell_info.succeeded) for p in seen] == [True, False, True, False, False, False, True, True]
    # the initial design is two successful evaluations: failed ones do not count
    assert [bool(p.ask_info.design) for p in seen] == [True, True, True, False, False, False, False, False]
    assert all(np.isfinite(float(p.ask_info.value)) for p in seen[3:])
    failed = ~np.asarray(evaluations.succeeded)
    # a failed row keeps its input (in the unit cube), fitted as censored; its value is a placeholder
    asked = np.stack([np.asarray(p.x) for p in seen])[failed]
    np.testing.assert_allclose(
        np.asarray(jax.vmap(state.scale_from_unit)(evaluations.inputs[failed])), asked, rtol=1e-12
    )
    assert np.all(np.asarray(evaluations.values)[failed] == 0.0) and np.all(np.asarray(evaluations.censored) == failed)
    found = SMALL_EI.result(final)
    assert found.num_failed == 4 and found.X.shape == (4, 2)
    assert np.all(np.isfinite(found.X)) and np.all(np.isfinite(found.y)) and np.isfinite(float(found.y_best))


def test_a_failed_point_is_fitted_low_and_never_asked_again():
    """The point EI asks fails (NaN): with the same key, the next ask moves away from it,
    and the surrogate fitted for that ask (the failure censored at the lowest standardised
    value, `active_learning.censor_failures`) predicts at most that value there."""
    X = BRANIN_LOWER + (BRANIN_UPPER - BRANIN_LOWER) * np.asarray(jax.random.uniform(jax.random.key(3), (6, 2)))
    y = np.asarray(jax.vmap(negative_branin)(jnp.asarray(X)))
    state = SMALL_EI.init(X, y, BRANIN_LOWER, BRANIN_UPPER, budget=2)  # capacity 8, as above
    key = jax.random.key(5)
    x, _ = SMALL_EI.ask(state, key)
    failed, info = SMALL_EI.tell(state, x, float("nan"))
    assert not bool(info.succeeded) and bool(failed.evaluations.censored[6])
    again, _ = SMALL_EI.ask(failed, key)
    assert np.max(np.abs(np.asarray(again) - np.asarray(x))) > 1e-3
    lowest = float(np.min((y - np.mean(y)) / np.std(y)))
    before, after = (bo_propose.proposal_context(SMALL_EI, s)[0].surrogate for s in (state, failed))
    unit_x = state.scale_to_unit(x)[None]
    mean_before, mean_after = float(before.predict(unit_x)[0][0]), float(after.predict(unit_x)[0][0])
    assert mean_after <= lowest + 0.2 and mean_after < mean_before - 0.5


def test_interrupt_and_resume_from_checkpoint_is_bit_for_bit(tmp_path):
    state = SMALL_EI.init(NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=5)
    key = jax.random.key(4)
    full = gpcompose.run_black_box(SMALL_EI, negative_branin, state, key)
    calls = {"n": 0}

    def interrupted(x):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return negative_branin(x)

    path = tmp_path / "bo.gpc"
    with pytest.warns(RuntimeWarning, match="interrupted after 3 evaluations"):
        gpcompose.run_black_box(SMALL_EI, interrupted, state, key, checkpoint=Checkpoint(path, every=100))
    like = eqx.filter_eval_shape(SMALL_EI.init, NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=5)
    learner, loaded, loaded_key = load_checkpoint(path, SMALL_EI, like)
    assert int(loaded.evaluations.num_evaluations) == 3
    resumed = gpcompose.run_black_box(learner, negative_branin, loaded, loaded_key)
    leaves, resumed_leaves = jax.tree.leaves(full), jax.tree.leaves(resumed)
    assert len(leaves) == len(resumed_leaves)
    for a, b in zip(leaves, resumed_leaves):
        assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))


def test_resume_with_a_larger_budget_runs_the_extra_evaluations(tmp_path):
    """A finished run of budget 4, loaded with budget 6, makes two more evaluations and
    keeps the first four."""
    key = jax.random.key(8)
    path = tmp_path / "bo.gpc"
    state = SMALL_EI.init(NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=4)
    first = gpcompose.run_black_box(SMALL_EI, negative_branin, state, key, checkpoint=Checkpoint(path))
    like = eqx.filter_eval_shape(SMALL_EI.init, NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=4)
    learner, loaded, loaded_key = load_checkpoint(path, SMALL_EI, like, budget=6)
    calls = {"n": 0}

    def counted(x):
        calls["n"] += 1
        return negative_branin(x)

    extended = gpcompose.run_black_box(learner, counted, loaded, loaded_key)
    assert calls["n"] == 2 and int(extended.evaluations.num_evaluations) == 6
    np.testing.assert_array_equal(extended.evaluations.inputs[:4], first.evaluations.inputs[:4])
    assert SMALL_EI.result(extended).X.shape == (6, 2)


def test_checkpoint_of_other_shapes_or_settings_is_refused(tmp_path):
    state = SMALL_EI.init(NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=5)
    path = tmp_path / "bo.gpc"
    save_checkpoint(path, SMALL_EI, state, jax.random.key(0))
    one_given = np.zeros((1, 2)), np.zeros(1)  # the buffer has one more row, not a larger budget
    other_data = eqx.filter_eval_shape(SMALL_EI.init, *one_given, BRANIN_LOWER, BRANIN_UPPER, budget=5)
    with pytest.raises(ValueError, match="other shapes"):
        load_checkpoint(path, SMALL_EI, other_data)
    with pytest.raises(ValueError, match="other settings"):
        load_checkpoint(path, RANDOM, state)
    bounded_like = eqx.filter_eval_shape(SMALL_EI.init, NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=5, f_plus=1.0)
    with pytest.raises(ValueError, match="other shapes"):
        load_checkpoint(path, SMALL_EI, bounded_like)


def test_vmapped_traceable_runs_equal_separate_runs():
    # Two design points and one EI proposal per seed. The batched and single programs round
    # differently (1e-16), and the ML-II refit (BFGS, which stops within rtol = atol = 1e-8 of
    # the optimum) carries that into the proposal (up to 1.2e-8 measured at the first, 1e-7 at
    # the second, see the BES test above), so one proposal is what rtol 1e-7 can check.
    state = SMALL_EI.init(NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=3)
    keys = jax.random.split(jax.random.key(5), 8)
    batch = jax.vmap(lambda key: gpcompose.run_traceable(SMALL_EI, negative_branin, state, key))(keys)
    with pytest.raises(ValueError, match="unstack"):
        SMALL_EI.result(batch)
    members = gpcompose.unstack(batch)
    assert len(members) == 8
    for key, member in zip(keys, members):
        alone = SMALL_EI.result(gpcompose.run_traceable(SMALL_EI, negative_branin, state, key))
        found = SMALL_EI.result(member)
        assert found.num_failed == alone.num_failed == 0
        for name in ("X", "y", "x_best", "y_best"):
            np.testing.assert_allclose(getattr(found, name), getattr(alone, name), rtol=1e-7)


def test_bad_input_is_rejected():
    def start(learner=SMALL_BES, lower=BRANIN_LOWER, upper=BRANIN_UPPER, **kwargs):
        return learner.init(NO_X, NO_Y, lower, upper, **({"budget": 10} | kwargs))

    with pytest.raises(ValueError, match="`lower` must be < `upper`"):
        start(lower=BRANIN_UPPER, upper=BRANIN_LOWER, f_plus=1.0)
    with pytest.raises(ValueError, match="`f_minus`.*smaller"):
        start(f_plus=0.0, f_minus=1.0)
    with pytest.raises(ValueError, match="`eta_plus` must be strictly positive"):
        start(f_plus=1.0, eta_plus=-1.0)
    with pytest.raises(ValueError, match="BoundedEntropySearch needs `f_plus`, `f_minus`"):
        start()
    with pytest.raises(ValueError, match="BoundedEntropySearch needs `f_plus`, `f_minus`"):
        bo.maximize(negative_branin, BRANIN_LOWER, BRANIN_UPPER, key=jax.random.key(0), budget=10, learner=SMALL_BES)
    with pytest.raises(ValueError, match="ExpectedRegretMinimization needs `f_plus`"):
        start(learner=bo.BO(acquisition=bo.ExpectedRegretMinimization()), f_minus=0.0)
    with pytest.raises(ValueError, match="`budget`"):
        start(budget=2, f_plus=1.0)
    with pytest.raises(ValueError, match="`X` must have shape"):
        SMALL_EI.init(np.zeros((3, 3)), np.zeros(3), BRANIN_LOWER, BRANIN_UPPER, budget=4)
    with pytest.raises(ValueError, match="`acquisition` must be an acquisition module"):
        bo.BO(acquisition="pi")
    with pytest.raises(ValueError, match="`square_root_center`"):
        bo.BoundedEntropySearch(square_root_center="middle")
    with pytest.raises(ValueError, match="`num_samples` must be positive"):
        bo.MaxValueEntropySearch(num_samples=0)
    with pytest.raises(ValueError, match="`extrema_steps` must be ≥ 0"):
        bo.BO(extrema_steps=-1)
    state = RANDOM.init(NO_X, NO_Y, BRANIN_LOWER, BRANIN_UPPER, budget=3)
    with pytest.raises(ValueError, match="`noise_sd`"):
        RANDOM.tell(state, jnp.zeros(2), 1.0, noise_sd=0.1)
