"""The PRNG key of the update that ends a round, derived from the evaluations."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, PRNGKeyArray, UInt32

from ._evaluations import Evaluations

# Odd multipliers of the two position-weighted sums that summarise the initial evaluations.
_MULTIPLIERS = (0x9E3779B1, 0x85EBCA77)


def _words(values) -> UInt32[Array, " W"]:
    """The bits of a floating array rounded to bfloat16 (8 significant bits), one uint32 word
    per entry: the same evaluations computed by another program (batched by `vmap`, traced),
    equal up to the last bits, give the same words."""
    rounded = jnp.ravel(values).astype(jnp.float32).astype(jnp.bfloat16).astype(jnp.float32)
    return jax.lax.bitcast_convert_type(rounded, jnp.uint32)


def _digest(words: UInt32[Array, " W"], multiplier: int) -> UInt32[Array, ""]:
    """Σ_i words_i · (multiplier · (2i + 1)) modulo 2³², a position-sensitive summary."""
    weights = (2 * jnp.arange(words.shape[0], dtype=jnp.uint32) + 1) * jnp.uint32(multiplier)
    return jnp.sum(words * weights, dtype=jnp.uint32)


def update_key(evaluations: Evaluations) -> PRNGKeyArray:
    """The key of the update (a refit, a boosting step) after the n-th evaluation, in `tell`.

    `tell(state, x, y)` takes no key, and no key is stored in a state: the update's
    randomness is seeded by the initial evaluations (the rows given to `init`) and n. Runs
    from different initial evaluations draw independent updates; runs from the same ones
    share their update draws and differ through the points `ask` chooses with their keys.
    The key does not depend on the evaluations made since `init`, whose last bits a batched
    or traced program can compute differently, so a resumed, traced or `vmap`ped run makes
    the same draws as the host loop.
    """
    initial = slice(0, evaluations.num_initial)
    words = jnp.concatenate(
        [
            _words(evaluations.inputs[initial]),
            _words(evaluations.values[initial]),
            _words(evaluations.succeeded[initial]),
        ]
    )
    key = jax.random.key(0)
    for multiplier in _MULTIPLIERS:
        key = jax.random.fold_in(key, _digest(words, multiplier))
    return jax.random.fold_in(key, evaluations.num_evaluations.astype(jnp.uint32))
