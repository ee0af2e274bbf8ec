"""Gaussian expectations of functions with one kink or narrow feature: Gauss–Legendre
panels with break points at the mean, the kink and around it."""

import math

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

# Half-width, in standard deviations, of the range the rule integrates over (the normal
# mass outside m ± 10 sd is 1.5e-23).
HALF_WIDTH = 10.0
# Break points at kink ± c · scale for these c: they resolve features of the likelihood's
# own width when it is much narrower than the sd of f.
SCALE_MULTIPLES = (1.0, 4.0)


def split_gauss_legendre_nodes(
    kink: Float[Array, "*batch"],
    scale: Float[Array, "*batch"],
    mean: Float[Array, "*batch"],
    variance: Float[Array, "*batch"],
    degree: int,
) -> tuple[Float[Array, "*batch P"], Float[Array, "*batch P"]]:
    """Nodes f_p and log-weights log w_p with E_{f~N(m, v)}[g(f)] ≈ Σ_p w_p g(f_p) for a g
    that is smooth except at f = `kink` and varies on the length `scale` there (the
    super-Gaussian likelihoods: h = a₀ + a₁ f, kink −a₀/a₁ where φ involves |h| (Laplace,
    Matérn, SVM), scale 1/|a₁|).

    The range m ± 10 sd is cut at the mean, the kink and kink ± {1, 4} · scale (all clipped
    to the range) into seven panels (some may be empty), each with a `degree`-point
    Gauss–Legendre rule times the normal density. Every panel is smooth, so the rule
    converges spectrally. Gauss–Hermite across the kink converges only algebraically, and a
    rule without the scale break points misses likelihoods much narrower than the normal.
    P = 7 · `degree`.
    """
    unit_nodes, unit_weights = np.polynomial.legendre.leggauss(degree)
    # Leading singleton axes keep the broadcasting explicit (rank promotion may be disabled).
    node_shape = (1,) * (mean.ndim + 1) + (degree,)
    unit_nodes = jnp.asarray(unit_nodes, mean.dtype).reshape(node_shape)
    log_unit_weights = jnp.asarray(np.log(unit_weights), mean.dtype).reshape(node_shape)
    # The rule is built for z = (f − m)/sd ~ N(0, 1), so that a (near-)zero variance collapses
    # the nodes onto m with weights summing to 1 instead of dividing by sd; the floor keeps
    # sd's derivative finite at v = 0.
    tiny = jnp.finfo(mean.dtype).tiny
    sd = jnp.sqrt(jnp.maximum(variance, tiny))
    around_kink = [kink + sign * multiple * scale for multiple in SCALE_MULTIPLES for sign in (-1.0, 1.0)]
    breaks = jnp.stack([kink, *around_kink], axis=-1)
    inner = jnp.clip((breaks - mean[..., None]) / sd[..., None], -HALF_WIDTH, HALF_WIDTH)
    ends = jnp.broadcast_to(jnp.asarray([-HALF_WIDTH, 0.0, HALF_WIDTH], mean.dtype), mean.shape + (3,))
    # The edges are held constant under differentiation: the exact integral does not depend on
    # where the panels are cut, so the derivative is the same rule applied to the derivative of
    # the integrand (moving edges would add only the derivative of the rule's error, and an
    # empty panel's floored width would cut it off one-sidedly).
    edges = jax.lax.stop_gradient(jnp.sort(jnp.concatenate([ends, inner], axis=-1), axis=-1))
    start, stop = edges[..., :-1, None], edges[..., 1:, None]
    half = (stop - start) / 2
    standardised = (start + stop) / 2 + half * unit_nodes
    points = mean[..., None, None] + sd[..., None, None] * standardised
    log_density = -0.5 * standardised**2 - math.log(math.sqrt(2 * math.pi))
    # An empty panel (coinciding break points) gets weights ≈ 0, not log 0.
    log_weights = jnp.log(jnp.maximum(half, tiny)) + log_unit_weights + log_density
    shape = mean.shape + (-1,)
    return points.reshape(shape), log_weights.reshape(shape)
