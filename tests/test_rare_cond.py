"""`gpcompose._rare_cond.rare_cond`: the values of `lax.cond`; under `vmap` the rare branch
runs only when some member takes it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose._rare_cond import rare_cond


def branches(calls):
    """A (rare, usual) pair of branches closing over `scale`; the rare one records its runs."""

    def make(scale):
        def expensive(x, offset):
            jax.debug.callback(lambda: calls.append(1))
            return {"value": scale * x + offset, "pair": jnp.stack([x, offset])}

        def cheap(x, offset):
            return {"value": x - offset, "pair": jnp.stack([offset, x])}

        return expensive, cheap

    return make


def reference(pred, x, offset, scale):
    return jax.lax.cond(
        pred,
        lambda: {"value": scale * x + offset, "pair": jnp.stack([x, offset])},
        lambda: {"value": x - offset, "pair": jnp.stack([offset, x])},
    )


@pytest.mark.parametrize("pred", [True, False])
def test_unbatched_values_are_those_of_lax_cond(pred):
    expensive, cheap = branches([])(jnp.asarray(3.0))
    out = jax.jit(lambda p, x: rare_cond(p, expensive, cheap, x, 0.5))(pred, 2.0)
    expected = reference(pred, 2.0, 0.5, 3.0)
    np.testing.assert_array_equal(out["value"], expected["value"])
    np.testing.assert_array_equal(out["pair"], expected["pair"])


@pytest.mark.parametrize("threshold, expensive_runs", [(10.0, False), (5.0, True), (-1.0, True)])
def test_vmapped_values_are_those_of_lax_cond_and_the_rare_branch_runs_only_when_taken(threshold, expensive_runs):
    calls = []
    make = branches(calls)
    x = jnp.arange(8.0)
    scales = jnp.linspace(1.0, 2.0, 8)

    def member(x, scale):
        expensive, cheap = make(scale)  # the branches close over a batched value
        return rare_cond(x > threshold, expensive, cheap, x, 0.5)

    out = jax.jit(jax.vmap(member))(x, scales)
    expected = jax.vmap(lambda x, s: reference(x > threshold, x, 0.5, s))(x, scales)
    np.testing.assert_array_equal(out["value"], expected["value"])
    np.testing.assert_array_equal(out["pair"], expected["pair"])
    jax.effects_barrier()
    assert (len(calls) > 0) == expensive_runs


def test_nested_vmap_and_a_loop_carry_equal_a_python_loop():
    def member(start, step):
        def body(carry):
            return rare_cond(carry[0] > 3.0, lambda c: c + jnp.stack([1.0, step]), lambda c: c + 1.0, carry)

        return jax.lax.while_loop(lambda carry: carry[0] < 6.0, body, jnp.stack([start, start]))

    starts = jnp.array([[0.0, 4.0], [2.5, 5.0]])
    steps = jnp.array([[10.0, 20.0], [30.0, 40.0]])
    batched = jax.jit(jax.vmap(jax.vmap(member)))(starts, steps)
    for i in range(2):
        for j in range(2):
            np.testing.assert_array_equal(batched[i, j], member(starts[i, j], steps[i, j]))


def test_keys_pass_through_both_branches_under_vmap():
    def member(key):
        taken = jax.random.uniform(key) > 0.5
        return rare_cond(taken, lambda k: jax.random.normal(k), lambda k: jnp.zeros(()), key)

    keys = jax.random.split(jax.random.key(0), 6)
    batched = jax.vmap(member)(keys)
    np.testing.assert_array_equal(batched, jnp.stack([member(k) for k in keys]))
