"""SVBMC's mixture growth: where `grow` adds components, when it keeps them, the
build-up's stopping rules (a stage within ±tolerance ends it; a stage that loses more is
discarded and the next one tried), and the stages of an active round (`optimise_then_grow`).
The optimiser is the identity and the score a function of K (except in the last test), so
every decision is known in advance."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose.mixtures import VBMCMixture
from gpcompose.svbmc._variational import Growth, build_up, grow, optimise_then_grow

SITES = jnp.linspace(-3.0, 3.0, 7)[:, None]
# gap f̄ − log q = 2x + const against the starting N(0, 1): largest at x = 3
SITE_LOG_DENSITY = -0.5 * (SITES[:, 0] - 2.0) ** 2
ELIGIBLE = SITES[:, 0] < 2.5  # x = 3 is not eligible, so the first new component goes to x = 2


def one_component(capacity):
    return VBMCMixture(
        logits=jnp.zeros(capacity),
        means=jnp.zeros((capacity, 1)),
        log_sigma=jnp.zeros(capacity),
        log_lambda=jnp.zeros(1),
        mask=jnp.zeros(capacity, bool).at[0].set(True),
    )


def growth_scored_by(score_of_k):
    """Growth whose optimiser leaves the mixture as it is and whose score is score_of_k[K]."""
    table = jnp.asarray(score_of_k, jnp.float64)
    return Growth(
        SITES,
        SITE_LOG_DENSITY,
        ELIGIBLE,
        optimise=lambda mixture, key: mixture,
        score=lambda mixture: table[jnp.sum(mixture.mask.astype(jnp.int32))],
    )


def active_count(mixture):
    return int(np.sum(np.asarray(mixture.mask)))


def test_grow_keeps_a_better_stage_with_the_new_component_at_the_largest_eligible_gap():
    growth = growth_scored_by([0.0, 0.0, 1.0, 0.0, 0.0])
    start = one_component(4)
    kept, score, gain = jax.jit(lambda m: grow(m, growth.score(m), jnp.asarray(1), jax.random.key(0), growth))(start)
    assert active_count(kept) == 2
    np.testing.assert_allclose(kept.means[1], [2.0])  # x = 3 has the larger gap but is not eligible
    np.testing.assert_allclose(kept.weights[:2], [0.5, 0.5], rtol=1e-14)  # weight 1/(K + 1)
    np.testing.assert_allclose(kept.log_sigma[1], 0.0, atol=1e-14)  # the current components' mean scale
    assert float(score) == 1.0 and float(gain) == 1.0


def test_grow_discards_a_worse_stage():
    growth = growth_scored_by([0.0, 0.0, -1.0, -2.0, -3.0])
    start = one_component(4)
    kept, score, gain = jax.jit(lambda m: grow(m, growth.score(m), jnp.asarray(2), jax.random.key(0), growth))(start)
    for new, old in zip(jax.tree_util.tree_leaves(kept), jax.tree_util.tree_leaves(start)):
        np.testing.assert_array_equal(new, old)
    assert float(score) == 0.0 and float(gain) == -2.0


@pytest.mark.parametrize(
    "score_of_k, capacity, expected_k",
    [
        # every stage gains: K doubles 1 → 2 → 4 = K_max
        ([0.0, 0.0, 1.0, 0.0, 3.0], 4, 4),
        # K = 2 gains by less than the tolerance: the build-up stops there although K = 4 would score more
        ([0.0, 0.0, 0.001, 0.0, 10.0], 4, 2),
        # K = 2 loses more than the tolerance: discarded, the next stage (+2) starts from K = 1,
        # K = 3 gains, then K = 7 gains less than the tolerance and ends the build-up
        ([0.0, 0.0, -1.0, 5.0, 0.0, 0.0, 0.0, 5.005, 0.0], 8, 7),
    ],
)
def test_build_up_stopping_rules(score_of_k, capacity, expected_k):
    growth = growth_scored_by(score_of_k)
    built = jax.jit(lambda mixture, key: build_up(mixture, key, growth, tolerance=0.01))(
        one_component(capacity), jax.random.key(0)
    )
    assert active_count(built) == expected_k


def test_the_first_stage_keeps_its_optimisation_and_a_stage_of_no_component_is_skipped():
    """Stage 0 keeps the optimised mixture although its score fell (it has nothing to beat); a
    later stage of 0 components (an active round's fall-back) does not optimise again; a stage
    that adds a component and loses is discarded. The optimiser shifts every mean by +1 and the
    score falls with the means, so each optimisation is counted and every stage loses."""
    growth = Growth(
        SITES,
        SITE_LOG_DENSITY,
        ELIGIBLE,
        optimise=lambda mixture, key: eqx.tree_at(lambda m: m.means, mixture, mixture.means + 1.0),
        score=lambda mixture: -jnp.sum(jnp.where(mixture.mask, mixture.means[:, 0], 0.0)),
    )
    keys = jax.random.split(jax.random.key(0), 2)
    run = jax.jit(lambda counts: optimise_then_grow(one_component(4), keys, counts, growth, tolerance=0.01))
    for growth_counts in ([0], [1]):
        kept = run(jnp.asarray(growth_counts, jnp.int32))
        assert active_count(kept) == 1
        np.testing.assert_allclose(kept.means[0], [1.0])  # optimised once, by stage 0
