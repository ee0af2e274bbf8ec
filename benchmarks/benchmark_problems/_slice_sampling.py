"""Coordinate-wise slice sampling that records every log-density evaluation (SVBMC initial sets).

Univariate slice sampling with the stepping-out and shrinkage procedures of R. M. Neal, "Slice
sampling", Annals of Statistics 31(3):705–767 (2003), §4 (Figs. 3 and 5), applied to one coordinate
d at a time, cycling d = 0, 1, …, D − 1. One transition from x with f(x) = log p(x):

    level   ℓ = f(x) − E,  E ~ Exp(1)            (log of a height drawn uniformly under p(x));
    place   L = −w_d U, R = L + w_d,  U ~ U(0, 1) (offsets along coordinate d);
    step out: while f(x + L e_d) > ℓ: L ← L − w_d;  then while f(x + R e_d) > ℓ: R ← R + w_d;
    shrink: t ~ U(L, R); if f(x + t e_d) > ℓ accept x ← x + t e_d, else L ← t if t < 0, R ← t otherwise.

Stepping out has no limit on the number of steps. The sampler is a state machine with exactly one
evaluation per `lax.scan` step, so that every evaluation (x₀, step-out ends, rejected and accepted
proposals) is recorded, as SVBMC uses all of them (Li, Clarté & Acerbi 2023, §5), and the buffer of static
size `num_evaluations` is filled exactly. The chain states are the recorded points flagged
`is_chain_state`: x₀ first, then every accepted proposal.
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from gpcompose._errors import error_if
from gpcompose._jit import public_jit
from gpcompose._select import select_tree

_STEPPING_OUT_LEFT = 0
_STEPPING_OUT_RIGHT = 1
_SHRINKING = 2


class _SliceState(eqx.Module):
    position: Float[Array, " D"]
    log_density_value: Float[Array, ""]
    coordinate: Int[Array, ""]
    level: Float[Array, ""]
    left: Float[Array, ""]
    right: Float[Array, ""]
    phase: Int[Array, ""]


def _start_transition(key, position, log_density_value, coordinate, widths) -> _SliceState:
    """Draw the slice level ℓ = f(x) − E and place an interval of width w_d around offset 0."""
    level_key, placement_key = jax.random.split(key)
    level = log_density_value - jax.random.exponential(level_key, (), position.dtype)
    left = -widths[coordinate] * jax.random.uniform(placement_key, (), position.dtype)
    return _SliceState(
        position, log_density_value, coordinate, level, left, left + widths[coordinate], jnp.array(_STEPPING_OUT_LEFT)
    )


@public_jit(static_argnames=("num_evaluations",))
def slice_sampling_evaluations(
    log_density: Callable[[Float[Array, " D"]], Float[Array, ""]],
    key: PRNGKeyArray,
    x0: Float[ArrayLike, " D"],
    num_evaluations: int,
    width: Float[ArrayLike, "*D"] = 1.0,
) -> tuple[Float[Array, "num_evaluations D"], Float[Array, " num_evaluations"], Bool[Array, " num_evaluations"]]:
    """Run one coordinate-wise slice-sampling chain from `x0` until `num_evaluations` evaluations are made.

    **Arguments:**
    - `log_density`: JAX-traceable function of one point (D,) to a scalar; log p(x₀) must be finite.
    - `key`: PRNG key. `x0`: initial state, shape (D,), floating.
    - `num_evaluations`: static size of the evaluation buffer (x₀ is the first evaluation).
    - `width`: initial interval width w, a scalar or one per coordinate (D,), > 0.

    **Returns:** `(points, values, is_chain_state)` of shapes (num_evaluations, D), (num_evaluations,),
    (num_evaluations,): every evaluated point in order, its log density, and whether it is a chain state
    (the chain is `points[is_chain_state]`). Vmap over keys and x₀ for several chains.
    """
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"`x0` must have shape (D,), got shape {x0.shape}.")
    if not jnp.issubdtype(x0.dtype, jnp.floating):
        raise ValueError(f"`x0` must be floating, got dtype {x0.dtype}.")
    if num_evaluations < 1:
        raise ValueError(f"`num_evaluations` must be positive, got {num_evaluations}.")
    dimension = x0.shape[0]
    widths = jnp.asarray(width, x0.dtype)
    if widths.ndim == 0:
        widths = jnp.full((dimension,), widths)
    if widths.shape != (dimension,):
        raise ValueError(f"`width` must be a scalar or have shape ({dimension},), got shape {widths.shape}.")
    widths = error_if(widths, ~jnp.all(widths > 0), "`width` must be positive.")

    def evaluate_once(state: _SliceState, step_key):
        proposal_key, transition_key = jax.random.split(step_key)
        proposal = state.left + (state.right - state.left) * jax.random.uniform(proposal_key, (), x0.dtype)
        offset = jnp.select(
            [state.phase == _STEPPING_OUT_LEFT, state.phase == _STEPPING_OUT_RIGHT], [state.left, state.right], proposal
        )
        point = state.position.at[state.coordinate].add(offset)
        value = log_density(point)
        is_inside = value > state.level
        is_shrinking = state.phase == _SHRINKING
        is_accepted = is_shrinking & is_inside
        extend_left = (state.phase == _STEPPING_OUT_LEFT) & is_inside
        extend_right = (state.phase == _STEPPING_OUT_RIGHT) & is_inside
        shrink_left = is_shrinking & ~is_inside & (offset < 0)
        shrink_right = is_shrinking & ~is_inside & (offset >= 0)
        left = jnp.where(extend_left, state.left - widths[state.coordinate], state.left)
        left = jnp.where(shrink_left, offset, left)
        right = jnp.where(extend_right, state.right + widths[state.coordinate], state.right)
        right = jnp.where(shrink_right, offset, right)
        phase = jnp.where(is_inside | is_shrinking, state.phase, state.phase + 1)
        continuing = _SliceState(
            state.position, state.log_density_value, state.coordinate, state.level, left, right, phase
        )
        restarted = _start_transition(transition_key, point, value, (state.coordinate + 1) % dimension, widths)
        new_state = select_tree(is_accepted, restarted, continuing)
        return new_state, (point, value, is_accepted)

    first_key, scan_key = jax.random.split(key)
    initial_value = log_density(x0)
    initial = _start_transition(first_key, x0, initial_value, jnp.array(0), widths)
    _, (points, values, is_chain_state) = jax.lax.scan(
        evaluate_once, initial, jax.random.split(scan_key, num_evaluations - 1)
    )
    points = jnp.concatenate([x0[None, :], points])
    values = jnp.concatenate([initial_value[None], values])
    is_chain_state = jnp.concatenate([jnp.array([True]), is_chain_state])
    return points, values, is_chain_state
