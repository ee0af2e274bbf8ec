"""Which round an SVBMC result reports (`gpcompose.svbmc._report`): the last round while its
ELBO's BQ sd is within the tolerance, else the round of the recent window with the highest
ELBO − 5·sd (VBMC's `best_vbmc`), over a ring buffer that holds exactly that window. The
wiring into `SVBMC.result` is tested in `test_svbmc.py` (it needs a fitted state)."""

import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import svbmc
from gpcompose.mixtures import VBMCMixture
from gpcompose.svbmc._report import history_capacity, record_round, reported_slot, start_history

# 10 rounds in a whole run, window fraction 0.25: the window of the last round is rounds 7–10,
# and the ring holds ⌈0.25·10⌉ + 1 = 4 of them
OPTIONS, BUDGET = svbmc.SVBMC(batch_size=2), 20


def mixture_of_round(round_index):
    """A 2-component mixture whose first mean records the round it belongs to."""
    return VBMCMixture(
        logits=jnp.zeros(2),
        means=jnp.array([[float(round_index), 0.0], [0.0, 1.0]]),
        log_sigma=jnp.zeros(2),
        log_lambda=jnp.zeros(2),
        mask=jnp.ones(2, bool),
    )


def history_of(elbos, sds, options=OPTIONS, budget=BUDGET):
    """The history, for a run of `budget` evaluations, after rounds 0 … len(elbos) − 1 with
    these ELBOs and sds."""
    history = start_history(mixture_of_round(0), jnp.asarray(elbos[0]), jnp.asarray(sds[0]), options, budget)
    for index in range(1, len(elbos)):
        evaluations = jnp.asarray(index * options.batch_size, jnp.int32)
        history = record_round(history, mixture_of_round(index), jnp.asarray(elbos[index]), sds[index], evaluations)
    return history


def reported_round(history, options=OPTIONS):
    return int(history.rounds[reported_slot(history, options)])


def test_the_ring_holds_the_last_rounds_in_their_slots():
    history = history_of([float(r) for r in range(11)], [0.01] * 11)
    assert history_capacity(OPTIONS, BUDGET) == history.capacity == 4
    assert int(history.num_rounds) == 11
    assert sorted(np.asarray(history.rounds).tolist()) == [7, 8, 9, 10]
    for slot, round_index in enumerate(np.asarray(history.rounds)):
        assert float(history.elbos[slot]) == round_index
        assert int(history.evaluations[slot]) == 2 * round_index
        assert float(history.mixtures.means[slot, 0, 0]) == round_index


def test_a_settled_last_round_is_reported_even_if_an_earlier_bound_is_higher():
    elbos = [-10.0] * 10 + [-12.0]
    sds = [0.01] * 10 + [0.1]  # the last sd equals the tolerance: settled
    assert reported_round(history_of(elbos, sds)) == 10


def test_an_unsettled_last_round_reports_the_highest_lower_bound_of_the_window():
    """Rounds 7–10 form the window of round 10: round 9 has the highest ELBO − 5 sd there;
    round 8's ELBO is higher but so uncertain that its bound is lower, and round 3's bound,
    the highest of all, lies outside the window (and the ring)."""
    elbos = [-10.0, -10.0, -10.0, -5.0, -10.0, -10.0, -10.0, -9.8, -9.0, -9.6, -3.0]
    sds = [0.05, 0.05, 0.05, 0.01, 0.05, 0.05, 0.05, 0.05, 0.5, 0.02, 1.5]
    history = history_of(elbos, sds)
    assert reported_round(history) == 9
    # the same window with more rounds in the ring: round 3 would still be outside it
    assert history_capacity(OPTIONS, 100) > 11
    assert reported_round(history_of(elbos, sds, budget=100)) == 9


def test_early_in_a_run_the_window_is_a_quarter_of_the_rounds_so_far():
    """After round 4 the window is rounds 3–4 (4 − ⌈0.25·4⌉ = 3), not all five rounds."""
    elbos = [-1.0, -10.0, -10.0, -9.0, -8.0]
    sds = [0.01, 0.01, 0.01, 0.01, 0.9]
    assert reported_round(history_of(elbos, sds)) == 3
    assert reported_round(history_of(elbos[:1], sds[:1])) == 0  # init alone: round 0 whatever its sd


def test_without_a_tolerance_the_last_round_is_reported():
    document = dataclasses.replace(OPTIONS, report_sd_tolerance=None)
    elbos = [-10.0] * 8 + [-9.5, -9.9, -3.0]
    sds = [0.01] * 10 + [5.0]
    assert reported_round(history_of(elbos, sds), document) == 10
    assert reported_round(history_of(elbos, sds)) == 8  # the default


def test_non_finite_bounds_are_never_reported():
    elbos = [-10.0] * 8 + [float("nan"), -9.0, -20.0]
    sds = [0.01] * 8 + [0.01, float("inf"), 3.0]
    assert reported_round(history_of(elbos, sds)) == 7
    nowhere = history_of([float("nan")] * 11, [1.0] * 11)
    assert reported_round(nowhere) == 10  # no finite bound at all: the last round


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("report_sd_tolerance", -0.1, "`report_sd_tolerance` must be None or a finite sd"),
        ("report_sd_tolerance", float("nan"), "`report_sd_tolerance` must be None or a finite sd"),
        ("report_safe_sd", float("inf"), "`report_safe_sd` must be a finite number"),
        ("report_safe_sd", -1.0, "`report_safe_sd` must be a finite number"),
        ("report_window_fraction", 0.0, "`report_window_fraction` must be in"),
        ("report_window_fraction", 1.5, "`report_window_fraction` must be in"),
    ],
)
def test_bad_report_options_raise(name, value, message):
    with pytest.raises(ValueError, match=message):
        svbmc.SVBMC(**{name: value})
