"""The VBMC toy suite of the BVBMC thesis §7.2 — Lumpy, Cigar and Student-t by name — and its initial
design: n points x = 5|r| u with r ~ N(0, 1) and u uniform on the unit sphere S^{D−1} (the thesis's code).
"""

import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._cigar import Cigar
from ._lumpy import Lumpy
from ._student_t import StudentT

VBMC_TOY_PROBLEMS = {"lumpy": Lumpy, "cigar": Cigar, "student_t": StudentT}
"""The toy targets of thesis §7.2 by name: a class per problem, each built with the dimension D."""

_RADIUS_SCALE = 5.0


def vbmc_toy_initial_points(key: PRNGKeyArray, count: int, dimension: int) -> Float[Array, "count dimension"]:
    """`count` points 5|r| u, r ~ N(0, 1), u = z/‖z‖ with z ~ N(0, I_D)."""
    radius_key, direction_key = jax.random.split(key)
    radius = _RADIUS_SCALE * jnp.abs(jax.random.normal(radius_key, (count, 1)))
    direction = jax.random.normal(direction_key, (count, dimension))
    return radius * direction / jnp.linalg.norm(direction, axis=1, keepdims=True)
