from typing import Any, TypeVar

import equinox as eqx
import jax
from jaxtyping import PRNGKeyArray, PyTree

from ._validation import check_key

State = TypeVar("State")


@eqx.filter_jit
def run(algorithm: eqx.Module, state: State, key: PRNGKeyArray, num_steps: int, *args: Any) -> tuple[State, PyTree]:
    """`num_steps` calls of `algorithm.step(state, key, *args)` under one `jax.lax.scan`.

    `key` is split into one key per step. The same `args` (e.g. data) are passed at every step.
    This is the driver of the step protocol (docs/step-protocol.md), and it is the same as the
    hand-written loop

        for step_key in jax.random.split(key, num_steps):
            state, info = algorithm.step(state, step_key, *args)

    compiled once. The whole call can be `vmap`ped over seeds.

    **Returns:** `(state, infos)`: the final state and every step's `Info`, stacked along a
    new leading axis of length `num_steps`.
    """
    if not isinstance(num_steps, int) or num_steps < 0:
        raise ValueError(f"`num_steps` must be a non-negative int, got {num_steps!r}.")
    check_key(key)

    def body(carry, step_key):
        return algorithm.step(carry, step_key, *args)

    return jax.lax.scan(body, state, jax.random.split(key, num_steps))
