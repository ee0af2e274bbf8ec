"""Adding the new component with its weight, and pruning (BVBMC thesis §6.1.1.4)."""

import jax.numpy as jnp
from jaxtyping import Array, Float

from ..mixtures import GaussianMixture, first_free_slot


def add_and_prune(
    mixture: GaussianMixture,
    weight: Float[Array, ""],
    mean: Float[Array, " D"],
    log_scale: Float[Array, " D"],
    threshold: Float[Array, ""],
) -> tuple[GaussianMixture, Float[Array, ""]]:
    """w_j ← (1 − w) w_j for the old components, the new one gets w; then every component
    with weight below `threshold` (β) is dropped and the rest renormalised (the largest
    always stays). Works on the weights themselves, so w = 0 or w = 1 are exact.

    If the mixture has no free slot the new component is not added.

    **Returns:** the mixture and whether the new component was added (before pruning).
    """
    slot = first_free_slot(mixture.mask)
    has_room = slot < mixture.num_components
    slots = jnp.arange(mixture.num_components)
    is_new = has_room & (slots == slot)
    weights = jnp.where(is_new, weight, jnp.where(has_room, 1.0 - weight, 1.0) * mixture.weights)
    mask = mixture.mask | is_new
    keep = mask & ((weights >= threshold) | (weights == jnp.max(jnp.where(mask, weights, -jnp.inf))))
    pruned = GaussianMixture(
        jnp.log(jnp.where(keep, weights, 1.0)),
        jnp.where(is_new[:, None], mean[None, :], mixture.means),
        jnp.where(is_new[:, None], log_scale[None, :], mixture.log_scales),
        keep,
    )
    return pruned, has_room
