"""The shared active-learning layer on a toy learner: the buffer, the update key, both
drivers, checkpoints (save, interrupt, resume, refusal) and reading a vmapped batch."""

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose.active_learning import (
    AbstractActiveLearner,
    Checkpoint,
    Evaluations,
    buffer_rows,
    censor_failures,
    failure_value,
    load_checkpoint,
    read_checkpoint_header,
    repeats_failure,
    require_single_run,
    run_black_box,
    run_traceable,
    save_checkpoint,
    update_key,
)


class ToyState(eqx.Module):
    evaluations: Evaluations
    centre: jax.Array  # refitted at the end of each round: the mean of the successful values' inputs
    num_updates: jax.Array
    noise: jax.Array  # a random draw of every update, to see the update key


class ToyInfo(eqx.Module):
    centre: jax.Array


class ToyLearner(AbstractActiveLearner[ToyState]):
    """Asks uniformly around its centre; every `batch` evaluations the centre moves to the
    best successful input so far."""

    batch: int = eqx.field(static=True, default=3)
    spread: float = 0.5

    @property
    def round_size(self) -> int:
        return self.batch

    def init(self, X, y, *, budget):
        X = jnp.asarray(X)
        y = jnp.asarray(y, X.dtype)
        evaluations = Evaluations.start(X, y, jnp.ones_like(y), jnp.isfinite(y), budget)
        return ToyState(evaluations, jnp.zeros(X.shape[1], X.dtype), jnp.zeros((), jnp.int32), jnp.zeros((), X.dtype))

    @eqx.filter_jit
    def ask(self, state, key):
        step = self.spread * jax.random.normal(key, state.centre.shape, state.centre.dtype)
        return state.centre + step, jnp.linalg.norm(step)

    def record(self, state, x, y, noise_sd):
        dtype = state.evaluations.values.dtype
        x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
        good = jnp.isfinite(y) & jnp.all(jnp.isfinite(x))
        evaluations = state.evaluations.record(
            jnp.where(good, x, 0.0), jnp.where(good, y, 0.0), jnp.ones((), dtype), good
        )
        return eqx.tree_at(lambda s: s.evaluations, state, evaluations), good

    def update(self, state, key):
        ev = state.evaluations
        best = jnp.argmax(jnp.where(ev.succeeded, ev.values, -jnp.inf))
        centre = ev.inputs[best]
        noise = jax.random.normal(key, (), ev.values.dtype)
        state = ToyState(ev, centre, state.num_updates + 1, noise)
        return state, ToyInfo(centre)

    def result(self, state):
        require_single_run(state, "toy")
        return state.centre


def target(x):
    return -float(np.sum((np.asarray(x) - 1.0) ** 2))


def jax_target(x):
    return -jnp.sum((x - 1.0) ** 2)


X0 = np.array([[0.0, 0.0], [0.5, -0.5]])
Y0 = np.array([target(x) for x in X0])


def test_buffer_counts_and_full_error():
    ev = Evaluations.start(jnp.asarray(X0), jnp.asarray(Y0), jnp.ones(2), jnp.array([True, True]), budget=2)
    assert ev.capacity == 10 and ev.budget == 2 and int(ev.num_evaluations) == 0
    ev = ev.record(jnp.ones(2), jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(True))
    ev = ev.record(jnp.zeros(2), jnp.asarray(0.0), jnp.asarray(1.0), jnp.asarray(False))
    assert int(ev.num_evaluations) == 2 and int(ev.num_failed) == 1 and bool(ev.finished)
    with pytest.raises(Exception, match="budget is exhausted"):
        ev.record(jnp.ones(2), jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(True))
    with pytest.raises(ValueError, match="budget"):
        Evaluations.start(jnp.asarray(X0), jnp.asarray(Y0), jnp.ones(2), jnp.ones(2, bool), budget=2.5)


def test_succeeded_rows_select_the_successful_rows_of_each_array():
    ev = Evaluations.start(jnp.asarray(X0), jnp.asarray(Y0), jnp.ones(2), jnp.array([True, True]), budget=3)
    ev = ev.record(jnp.ones(2), jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(True))
    ev = ev.record(jnp.zeros(2), jnp.asarray(0.0), jnp.asarray(1.0), jnp.asarray(False))
    inputs, doubled = ev.succeeded_rows(ev.inputs, 2.0 * ev.values)
    assert isinstance(inputs, jax.Array) and isinstance(doubled, jax.Array)
    np.testing.assert_array_equal(inputs, np.concatenate([X0, np.ones((1, 2))]))
    np.testing.assert_array_equal(doubled, 2.0 * np.concatenate([Y0, [1.0]]))


def test_buffer_rows_are_the_budget_rounded_up_to_four_steps_per_octave():
    budgets = np.arange(0, 5000)
    rows = np.array([buffer_rows(int(budget)) for budget in budgets])
    assert np.all(rows[:9] == 8) and [buffer_rows(b) for b in (9, 11, 17, 200)] == [10, 12, 20, 224]
    assert np.all(rows >= budgets) and np.all(rows <= np.maximum(1.25 * budgets, 8)) and np.all(np.diff(rows) >= 0)
    # at most four distinct sizes per octave: a handful of shapes for every budget
    assert len(set(rows[(budgets > 1024) & (budgets <= 2048)])) == 4


def test_a_budget_below_the_buffer_rows_ends_the_run_at_the_budget():
    """Budget 9 gets 10 free rows; the run is finished after 9 evaluations and a 10th raises."""
    ev = Evaluations.start(jnp.asarray(X0), jnp.asarray(Y0), jnp.ones(2), jnp.array([True, True]), budget=9)
    assert ev.capacity == 12 and ev.free_rows == 10 and ev.budget == 9
    record = jax.jit(lambda ev: ev.record(jnp.ones(2), jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(True)))
    for _ in range(9):
        assert not bool(ev.finished)
        ev = record(ev)
    assert bool(ev.finished) and int(ev.num_evaluations) == 9
    with pytest.raises(Exception, match="budget is exhausted"):
        record(ev)
    assert record._cache_size() == 1


def test_censoring_fits_a_failure_at_the_lowest_fitted_value():
    """ỹ = min over the fitted rows; each failed row takes it and joins the mask; free rows and
    rows that are neither stay out; without a fitted row nothing is censored."""
    values = jnp.array([3.0, -1.0, 0.0, 7.0, 0.0, 0.0])
    fitted = jnp.array([True, True, False, False, False, False])  # row 3: trimmed away
    failed = jnp.array([False, False, True, False, True, False])
    censored, mask = censor_failures(values, fitted, failed)
    np.testing.assert_array_equal(censored, [3.0, -1.0, -1.0, 7.0, -1.0, 0.0])
    np.testing.assert_array_equal(mask, [True, True, True, False, True, False])
    assert float(failure_value(values, fitted)) == -1.0
    nothing = jnp.zeros(6, bool)
    censored, mask = censor_failures(values, nothing, failed)
    np.testing.assert_array_equal(censored, values)
    np.testing.assert_array_equal(mask, nothing)


def test_a_failed_row_keeps_its_input_and_a_repeat_of_it_is_detected():
    evaluations = Evaluations.start(jnp.zeros((1, 2)), jnp.zeros(1), jnp.ones(1), jnp.ones(1, bool), 3)
    evaluations = evaluations.record(
        jnp.array([0.5, -0.25]), jnp.asarray(jnp.nan), jnp.asarray(0.1), jnp.asarray(False)
    )
    evaluations = evaluations.record(jnp.array([jnp.inf, 1.0]), jnp.asarray(2.0), jnp.asarray(0.1), jnp.asarray(False))
    np.testing.assert_array_equal(evaluations.inputs[1], [0.5, -0.25])
    np.testing.assert_array_equal(evaluations.values[1:3], [0.0, 0.0])  # placeholders
    np.testing.assert_array_equal(
        evaluations.censored[:4], [False, True, False, False]
    )  # an infinite input tells nothing
    assert float(evaluations.noise_variance[2]) == np.inf
    assert bool(repeats_failure(jnp.array([0.5, -0.25]), evaluations.inputs, evaluations.censored))
    assert not bool(repeats_failure(jnp.array([0.5, -0.2499]), evaluations.inputs, evaluations.censored))
    assert not bool(repeats_failure(jnp.zeros(2), evaluations.inputs, evaluations.censored))  # a successful row


def test_update_key_depends_on_the_initial_evaluations_and_the_count_only():
    def start(y):
        return Evaluations.start(jnp.asarray(X0), jnp.asarray(y), jnp.ones(2), jnp.ones(2, bool), budget=2)

    ev = start(Y0)
    a = ev.record(jnp.ones(2), jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(True))
    b = ev.record(jnp.ones(2), jnp.asarray(1.5), jnp.asarray(1.0), jnp.asarray(True))
    c = start(Y0 + 0.5).record(jnp.ones(2), jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(True))
    near = start(Y0 * (1 + 1e-12)).record(jnp.ones(2), jnp.asarray(1.0), jnp.asarray(1.0), jnp.asarray(True))
    data = {name: jax.random.key_data(update_key(e)) for name, e in dict(ev=ev, a=a, b=b, c=c, near=near).items()}
    assert not np.array_equal(data["ev"], data["a"])  # another count
    assert not np.array_equal(data["a"], data["c"])  # other initial evaluations
    assert np.array_equal(data["a"], data["b"])  # the evaluations since init do not enter
    assert np.array_equal(data["a"], data["near"])  # nor rounding in the initial ones


def faulty(x):
    faulty.calls += 1
    if faulty.calls == 2:
        raise RuntimeError("simulator crashed")
    if faulty.calls == 4:
        return float("nan")
    if faulty.calls == 5:
        return float("inf")
    if faulty.calls == 6:
        return float("-inf")
    return target(x)


def test_host_loop_records_failures_and_tells_info():
    learner = ToyLearner()
    state = learner.init(X0, Y0, budget=9)
    faulty.calls = 0
    seen = []
    with pytest.warns(RuntimeWarning, match="recorded as failed"):
        final = run_black_box(learner, faulty, state, jax.random.key(1), callback=seen.append)
    assert len(seen) == 9 and faulty.calls == 9
    assert int(final.evaluations.num_failed) == 4 and int(final.evaluations.num_evaluations) == 9
    assert [bool(p.tell_info.updated) for p in seen] == [False, False, True] * 3
    assert [bool(p.tell_info.succeeded) for p in seen] == [True, False, True, False, False, False, True, True, True]
    assert int(final.num_updates) == 3 and np.all(np.isfinite(learner.result(final)))


def test_traced_loop_equals_host_loop_and_vmaps():
    learner = ToyLearner()
    state = learner.init(X0, Y0, budget=7)  # the last round is short
    key = jax.random.key(2)
    host = run_black_box(learner, target, state, key)
    traced = run_traceable(learner, jax_target, state, key)
    for a, b in zip(jax.tree.leaves(host), jax.tree.leaves(traced)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    keys = jax.random.split(jax.random.key(3), 4)
    batch = jax.vmap(lambda k: run_traceable(learner, jax_target, state, k))(keys)
    with pytest.raises(ValueError, match="unstack"):
        learner.result(batch)
    members = gpcompose.unstack(batch)
    assert len(members) == 4
    for k, member in zip(keys, members):
        alone = run_traceable(learner, jax_target, state, k)
        for a, b in zip(jax.tree.leaves(alone), jax.tree.leaves(member)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


class EarlyRoundLearner(ToyLearner):
    """`ToyLearner` whose round also ends at a failed evaluation (as SVBMC's does)."""

    def round_complete(self, state):
        evaluations = state.evaluations
        last = jnp.maximum(evaluations.num_initial + evaluations.num_evaluations - 1, 0)
        return super().round_complete(state) | ~evaluations.succeeded[last]


def test_both_drivers_end_a_round_where_the_learner_says():
    """`run_black_box` (through `tell`) and `run_traceable` both update at `round_complete`,
    here also right after each failure, and so make the same run."""
    learner = EarlyRoundLearner()
    state = learner.init(X0, Y0, budget=9)

    def failing(x):
        return jnp.where(x[0] > 0.2, jnp.nan, jax_target(x))

    key = jax.random.key(5)
    seen = []
    with pytest.warns(RuntimeWarning, match="recorded as failed"):
        host = run_black_box(learner, lambda x: float(failing(jnp.asarray(x))), state, key, callback=seen.append)
    traced = run_traceable(learner, failing, state, key)
    failed = [not bool(p.tell_info.succeeded) for p in seen]
    assert any(failed[index] for index in range(9) if (index + 1) % 3)  # a failure mid-round
    assert int(host.num_updates) == sum(bool(p.tell_info.updated) for p in seen) > 3
    for a, b in zip(jax.tree.leaves(host), jax.tree.leaves(traced)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_interrupt_and_resume_from_checkpoint_is_bit_for_bit(tmp_path):
    learner = ToyLearner()
    state = learner.init(X0, Y0, budget=8)
    key = jax.random.key(4)
    full = run_black_box(learner, target, state, key)

    calls = {"n": 0}

    def interrupted(x):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return target(x)

    path = tmp_path / "run.gpc"
    with pytest.warns(RuntimeWarning, match="interrupted after 4 evaluations"):
        partial = run_black_box(learner, interrupted, state, key, checkpoint=Checkpoint(path, every=100))
    assert int(partial.evaluations.num_evaluations) == 4
    assert read_checkpoint_header(path)["num_evaluations"] == 4
    like = eqx.filter_eval_shape(learner.init, X0, Y0, budget=8)
    loaded_learner, loaded, loaded_key = load_checkpoint(path, learner, like)
    resumed = run_black_box(loaded_learner, target, loaded, loaded_key)
    for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed)):
        assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))


def test_buffer_with_budget_keeps_every_evaluation():
    ev = Evaluations.start(jnp.asarray(X0), jnp.asarray(Y0), jnp.ones(2), jnp.array([True, True]), budget=2)
    ev = ev.record(jnp.ones(2), jnp.asarray(-1.0), jnp.asarray(1.0), jnp.asarray(True))
    longer = ev.with_budget(9)
    assert longer.capacity == 12 and longer.budget == 9 and int(longer.num_evaluations) == 1
    np.testing.assert_array_equal(longer.inputs[:3], ev.inputs[:3])
    np.testing.assert_array_equal(longer.values[:3], ev.values[:3])
    assert not bool(longer.evaluated[3:].any()) and not bool(longer.finished)
    shorter = longer.with_budget(1)
    assert shorter.capacity == 10 and bool(shorter.finished)
    with pytest.raises(ValueError, match=r"`budget` \(0\) is below the evaluations already told"):
        ev.with_budget(0)


def test_resume_with_a_larger_budget_runs_the_extra_evaluations(tmp_path):
    """A finished run of budget 6, loaded with budget 9, makes 3 more evaluations; its
    first 6 are the saved ones, and it equals a run of budget 9 from the start (the keys of
    each evaluation depend only on its index). Loaded without a budget, it keeps its own."""
    learner = ToyLearner()
    key = jax.random.key(5)
    path = tmp_path / "run.gpc"
    first = run_black_box(learner, target, learner.init(X0, Y0, budget=6), key, checkpoint=Checkpoint(path))
    assert read_checkpoint_header(path)["budget"] == 6
    like = eqx.filter_eval_shape(learner.init, X0, Y0, budget=1)
    _, kept, _ = load_checkpoint(path, learner, like)
    assert kept.evaluations.budget == 6 and bool(kept.evaluations.finished)
    loaded_learner, loaded, loaded_key = load_checkpoint(path, learner, like, budget=9)
    assert loaded.evaluations.budget == 9 and int(loaded.evaluations.num_evaluations) == 6
    calls = {"n": 0}

    def counted(x):
        calls["n"] += 1
        return target(x)

    extended = run_black_box(loaded_learner, counted, loaded, loaded_key)
    assert calls["n"] == 3 and int(extended.evaluations.num_evaluations) == 9
    np.testing.assert_array_equal(extended.evaluations.inputs[:8], first.evaluations.inputs[:8])
    whole = run_black_box(learner, target, learner.init(X0, Y0, budget=9), key)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(extended)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="holds 6 evaluations, more than the `budget` of 4"):
        load_checkpoint(path, learner, like, budget=4)


def test_checkpoint_refuses_other_method_settings_or_shapes(tmp_path):
    learner = ToyLearner()
    state = learner.init(X0, Y0, budget=3)
    path = tmp_path / "run.gpc"
    save_checkpoint(path, learner, state, jax.random.key(0))

    class OtherLearner(ToyLearner):
        pass

    with pytest.raises(ValueError, match="of a ToyLearner run, not of a OtherLearner run"):
        load_checkpoint(path, OtherLearner(), state)
    with pytest.raises(ValueError, match="other settings"):
        load_checkpoint(path, ToyLearner(batch=2), state)
    with pytest.raises(ValueError, match="other shapes"):
        load_checkpoint(path, learner, learner.init(X0[:1], Y0[:1], budget=3))
    bad = tmp_path / "bad.gpc"
    bad.write_bytes(b"not a checkpoint\n")
    with pytest.raises(ValueError, match="not a gpcompose checkpoint"):
        load_checkpoint(bad, learner, state)
    header, payload = path.read_bytes().split(b"\n", 1)
    record = json.loads(header)
    del record["budget"]  # as an earlier version's file without the budget
    old = tmp_path / "old.gpc"
    old.write_bytes(json.dumps(record).encode() + b"\n" + payload)
    with pytest.raises(ValueError, match="records no budget"):
        load_checkpoint(old, learner, state)
