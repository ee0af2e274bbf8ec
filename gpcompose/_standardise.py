"""Output standardisation of a masked buffer of values, shared by the active learners."""

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float


def location_and_scale(
    values: Float[Array, " C"], mask: Bool[Array, " C"], *, ddof: int = 0
) -> tuple[Float[Array, ""], Float[Array, ""]]:
    """Mean and standard deviation of the `values` marked by `mask`, with `ddof` subtracted
    from the count in the variance (0: the population sd, 1: the unbiased one). The scale
    is 1 when fewer than `ddof + 2` values are used or they are all (nearly) equal, so that
    (values − location)/scale is always finite."""
    count = jnp.sum(mask).astype(values.dtype)
    location = jnp.sum(jnp.where(mask, values, 0.0)) / jnp.maximum(count, 1.0)
    squares = jnp.sum(jnp.where(mask, (values - location) ** 2, 0.0))
    variance = squares / jnp.maximum(count - ddof, 1.0)
    usable = (count >= ddof + 2) & (variance > 1e-24)
    return location, jnp.where(usable, jnp.sqrt(jnp.maximum(variance, 1e-24)), 1.0)
