"""The progress display of every long loop (gpcompose/_progress.py): each host driver
(`svbmc.fit`, `bvbmc.fit`, `bo.maximize`, `steingp.fit`, `aaci.fit`) with `progress=True`
shows the steps done / total and its key quantity on stderr, and with `progress=False` prints
nothing; `progress=None` follows the terminal; the traced display of `run_traceable` prints
every k evaluations, one line per seed under `vmap`. A run is the same with the display on
and off. Runs are tiny: only the display is checked here, the methods in their own files."""

import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose import aaci, bo, bvbmc, kernels, steingp, svbmc
from gpcompose.likelihoods import Bernoulli, Logistic

NUMBER = r"-?(?:inf|[0-9.]+(?:e[+-]?[0-9]+)?)"
ELBO_AND_SD = rf"ELBO={NUMBER} ± {NUMBER}"


def run_with_and_without_display(capsys, run):
    """(stderr of `run(True)`, `run(True)`, `run(False)`), asserting that `run(False)` prints
    nothing at all and `run(True)` nothing on stdout."""
    capsys.readouterr()
    shown = run(True)
    jax.effects_barrier()
    output = capsys.readouterr()
    assert output.out == ""
    hidden = run(False)
    jax.effects_barrier()
    assert capsys.readouterr() == ("", "")
    return output.err, shown, hidden


def gaussian_log_density(x):
    return -0.5 * jnp.sum((x - 0.5) ** 2)


def python_gaussian(x):
    return float(gaussian_log_density(jnp.asarray(x)))


def test_svbmc_fit_shows_the_evaluations_the_elbo_and_its_components(capsys):
    X = 2.0 * jax.random.normal(jax.random.key(0), (40, 2))
    y = jax.vmap(gaussian_log_density)(X)
    learner = svbmc.SVBMC(
        batch_size=2,
        max_components=2,
        subset_size=40,
        min_inducing=20,
        max_inducing=40,
        exact_fit_steps=20,
        exact_fit_lengthscale_factors=(1.0,),
        sparse_fit_steps=10,
        buildup_steps=20,
        round_steps=10,
        num_candidates=16,
        search_steps=5,
        num_entropy_samples=32,
        final_entropy_samples=1024,
        peak_check_samples=64,
        whitening=False,
    )

    def run(progress):
        return svbmc.fit(python_gaussian, X, y, key=jax.random.key(1), budget=2, learner=learner, progress=progress)

    shown, _, _ = run_with_and_without_display(capsys, run)
    assert "SVBMC" in shown and "2/2" in shown
    assert re.search(ELBO_AND_SD + r", components=[12], failed=0", shown)


def test_bvbmc_fit_shows_the_evaluations_the_elbo_and_its_components(capsys):
    learner = bvbmc.BVBMC(
        max_components=3,
        fit_steps=20,
        initial_joint_steps=20,
        num_candidates=16,
        num_search_starts=2,
        search_steps=5,
        final_entropy_samples=1024,
        boosting=gpcompose.boosting.Boosting(relbo_steps=10, relbo_samples=16, weight_samples=32, joint_update_every=0),
        kernel=kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0),
    )
    X = np.asarray(2.0 * jax.random.normal(jax.random.key(0), (8, 2)))

    def run(progress):
        return bvbmc.fit(python_gaussian, X, key=jax.random.key(1), budget=2, learner=learner, progress=progress)

    shown, _, _ = run_with_and_without_display(capsys, run)
    assert "BVBMC" in shown and "2/2" in shown
    assert re.search(ELBO_AND_SD + r", components=[123], failed=0", shown)


RANDOM_SEARCH = bo.BO(acquisition=bo.RandomSearch())


def maximize(**progress):
    """Three evaluations of random search on [0, 1]²."""
    key = jax.random.key(0)
    return bo.maximize(python_gaussian, np.zeros(2), np.ones(2), key=key, budget=3, learner=RANDOM_SEARCH, **progress)


def test_bo_maximize_shows_the_evaluations_and_the_best_value_and_runs_the_same_either_way(capsys):
    shown, with_display, without = run_with_and_without_display(capsys, lambda progress: maximize(progress=progress))
    assert "BO" in shown and "3/3" in shown
    best = re.findall(rf"best=({NUMBER})", shown)[-1]
    assert float(best) == pytest.approx(float(with_display.y_best), rel=1e-3)
    for field in ("x_best", "y_best", "X", "y"):
        np.testing.assert_array_equal(getattr(with_display, field), getattr(without, field))


def test_progress_none_shows_the_display_only_where_stderr_is_a_terminal(capsys, monkeypatch):
    maximize()
    assert capsys.readouterr() == ("", "")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    maximize()
    assert "3/3" in capsys.readouterr().err
    with pytest.raises(ValueError, match="`progress` must be True, False or None"):
        maximize(progress=1)


X_LINE = jnp.linspace(-2.0, 2.0, 10)[:, None]
LABELS = jnp.array([0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0])
KERNEL = kernels.SquaredExponential(lengthscale=0.8, variance=1.5)


def test_steingp_fit_shows_the_steps_and_the_stein_discrepancy_and_gives_the_same_particles(capsys):
    def run(progress):
        return steingp.fit(
            X_LINE, LABELS, key=jax.random.key(0), kernel=KERNEL, likelihood=Bernoulli(), num_particles=3, num_steps=3,
            progress=progress,
        )  # fmt: skip

    shown, with_display, without = run_with_and_without_display(capsys, run)
    assert "SteinGP" in shown and "3/3" in shown and re.search(rf"KSD²={NUMBER}", shown)
    # one compiled scan serves the display on and off: the same numbers, bit for bit
    for shown_leaf, hidden_leaf in zip(jax.tree.leaves(with_display.particles), jax.tree.leaves(without.particles)):
        np.testing.assert_array_equal(shown_leaf, hidden_leaf)


def test_aaci_fit_shows_the_steps_and_the_elbo(capsys):
    def run(progress):
        return aaci.fit(
            X_LINE, 2 * LABELS - 1, key=jax.random.key(0), likelihood=Logistic(), kernel=KERNEL, num_steps=3,
            progress=progress,
        )  # fmt: skip

    shown, with_display, without = run_with_and_without_display(capsys, run)
    assert "CAVI" in shown and "3/3" in shown
    assert float(re.findall(rf"ELBO=({NUMBER})", shown)[-1]) == pytest.approx(float(with_display.elbo[-1]), rel=1e-3)
    np.testing.assert_array_equal(with_display.elbo, without.elbo)


def test_run_traceable_prints_every_k_evaluations_one_line_per_seed_under_vmap(capsys):
    """Budget 5, a line every 2 evaluations: at 2, 4 and at the end, 5; one per seed."""
    state = RANDOM_SEARCH.init(jnp.zeros((0, 2)), jnp.zeros(0), jnp.zeros(2), jnp.ones(2), budget=5)

    def run(key, progress):
        return gpcompose.run_traceable(RANDOM_SEARCH, gaussian_log_density, state, key, progress=progress)

    keys = jax.random.split(jax.random.key(0), 2)
    capsys.readouterr()
    states = jax.vmap(lambda key: run(key, 2))(keys)
    jax.effects_barrier()
    lines = capsys.readouterr().err.splitlines()
    assert sorted(line.split(":")[0] for line in lines) == ["BO 2/5"] * 2 + ["BO 4/5"] * 2 + ["BO 5/5"] * 2
    best = np.max(np.asarray(states.evaluations.values)[:, :5], axis=1)
    final = sorted(float(re.search(rf"best=({NUMBER})", line)[1]) for line in lines if line.startswith("BO 5/5"))
    np.testing.assert_allclose(final, np.sort(best), rtol=1e-3)
    quiet = jax.vmap(lambda key: run(key, False))(keys)
    jax.effects_barrier()
    assert capsys.readouterr() == ("", "")
    # the display is compiled in only when on: the same run to rounding
    np.testing.assert_allclose(quiet.evaluations.values, states.evaluations.values, rtol=1e-12)
