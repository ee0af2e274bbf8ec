"""The PRNG key of the update that ends a round, derived from the evaluations."""

import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray

from ._evaluations import Evaluations


def _as_words(values) -> jax.Array:
    """The bits of a floating array as a flat vector of uint32 words."""
    values = jnp.ravel(values)
    if values.dtype.itemsize == 8:
        return jnp.ravel(jax.lax.bitcast_convert_type(values, jnp.uint32))
    return jax.lax.bitcast_convert_type(values.astype(jnp.float32), jnp.uint32)


def update_key(evaluations: Evaluations) -> PRNGKeyArray:
    """The key of a round's update (a refit, a boosting step) in `tell`.

    `tell(state, x, y)` takes no key, and no key is stored in a state: the update's
    randomness is seeded by the newest stored evaluation and the number told so far. Its
    point came from `ask(state, key)`, so the caller's keys drive every random choice of the
    run, and `tell` is a deterministic function of the state and the evaluation; a resumed
    or `vmap`ped run repeats it exactly.
    """
    x, value = evaluations.last_row()
    words = jnp.concatenate([_as_words(x), _as_words(value), evaluations.num_evaluations.astype(jnp.uint32)[None]])
    return jax.lax.fori_loop(
        0, words.shape[0], lambda index, key: jax.random.fold_in(key, words[index]), jax.random.key(0)
    )
