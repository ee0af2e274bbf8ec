"""A vmapped multi-start Adam maximiser, shared by the acquisition maximisers and the
search for the extrema of GP sample paths."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ._finite import finite_optimiser_step
from ._validation import check_box


class MultistartResult(eqx.Module):
    """Best point and value over all starts, and every start's best point and value."""

    x: Float[Array, " D"]
    value: Float[Array, ""]
    start_x: Float[Array, "S D"]
    start_values: Float[Array, " S"]


def _finite_or_worst(value: Float[Array, ""]) -> Float[Array, ""]:
    return jnp.where(jnp.isfinite(value), value, -jnp.inf)


def maximize_multistart(
    objective: Callable[[Float[Array, " D"]], Float[Array, ""]],
    starts: Float[Array, "S D"],
    *,
    scale: Float[Array, " D"] | None = None,
    num_steps: int = 50,
    learning_rate: float = 0.05,
    lower: Float[Array, " D"] | None = None,
    upper: Float[Array, " D"] | None = None,
) -> MultistartResult:
    """Maximise `objective` by Adam from every start in parallel (`vmap`), keeping the
    best iterate of each trajectory, and return the best over starts.

    Each search moves in the coordinates u = (x − start)/`scale`, so one learning rate
    suits inputs of any scale; iterates are clipped to [`lower`, `upper`] when given. A
    non-finite value counts as −∞ and a non-finite gradient as zero, so a bad region
    cannot poison the batch. `num_steps = 0` just evaluates the starts.
    """
    starts = jnp.asarray(starts)
    if starts.ndim != 2:
        raise ValueError(f"`starts` must have shape (num_starts, dimension), got shape {starts.shape}.")
    if scale is None:
        scale = jnp.ones(starts.shape[1], starts.dtype)
    optimiser = optax.adam(learning_rate)

    def project(x):
        if lower is not None:
            x = jnp.maximum(x, lower)
        if upper is not None:
            x = jnp.minimum(x, upper)
        return x

    def search(start):
        def loss(u):
            return -objective(project(start + scale * u))

        def step(carry, _):
            u, optimiser_state, best_u, best_value = carry
            negative_value, gradient = jax.value_and_grad(loss)(u)
            value = _finite_or_worst(-negative_value)
            improved = value > best_value
            best_u = jnp.where(improved, u, best_u)
            best_value = jnp.where(improved, value, best_value)
            u, optimiser_state = finite_optimiser_step(optimiser, gradient, optimiser_state, u)
            return (u, optimiser_state, best_u, best_value), None

        u0 = jnp.zeros_like(start)
        initial = (u0, optimiser.init(u0), u0, jnp.asarray(-jnp.inf, start.dtype))
        (u, _, best_u, best_value), _ = jax.lax.scan(step, initial, None, length=num_steps)
        final_value = _finite_or_worst(objective(project(start + scale * u)))
        best_u = jnp.where(final_value > best_value, u, best_u)
        best_value = jnp.maximum(final_value, best_value)
        return project(start + scale * best_u), best_value

    start_x, start_values = jax.vmap(search)(starts)
    best = jnp.argmax(start_values)
    return MultistartResult(start_x[best], start_values[best], start_x, start_values)


def maximize_from_candidates(
    objective: Callable[[Float[Array, " D"]], Float[Array, ""]],
    candidates: Float[Array, "P D"],
    *,
    num_starts: int,
    values: Float[Array, " P"] | None = None,
    scale: Float[Array, " D"] | None = None,
    num_steps: int = 50,
    learning_rate: float = 0.05,
    lower: Float[Array, " D"] | None = None,
    upper: Float[Array, " D"] | None = None,
) -> MultistartResult:
    """Maximise `objective` from the `num_starts` best of `candidates`: their `values` (the
    objective at every candidate, vmapped, unless given; non-finite ones rank last) pick the
    starts of `maximize_multistart`, which takes the remaining arguments."""
    if num_starts > candidates.shape[0]:
        raise ValueError(f"`num_starts` ({num_starts}) must not exceed the {candidates.shape[0]} candidates.")
    if values is None:
        values = jax.vmap(objective)(candidates)
    _, rows = jax.lax.top_k(jnp.where(jnp.isfinite(values), values, -jnp.inf), num_starts)
    return maximize_multistart(
        objective,
        candidates[rows],
        scale=scale,
        num_steps=num_steps,
        learning_rate=learning_rate,
        lower=lower,
        upper=upper,
    )


def maximize_on_box(
    key: PRNGKeyArray,
    objective: Callable[[Float[Array, " D"]], Float[Array, ""]],
    lower: Float[ArrayLike, " D"],
    upper: Float[ArrayLike, " D"],
    *,
    num_candidates: int = 1000,
    num_starts: int = 5,
    num_steps: int = 50,
    learning_rate: float = 0.05,
    extra_candidates: Float[Array, "E D"] | None = None,
) -> MultistartResult:
    """Maximise `objective` on the box [`lower`, `upper`] by `maximize_from_candidates` from
    `num_candidates` uniform points plus any `extra_candidates` (clipped to the box), with
    steps in units of the box width and iterates clipped to the box."""
    lower, upper = check_box(lower, upper)
    if num_starts > num_candidates:
        raise ValueError(f"`num_starts` ({num_starts}) must not exceed `num_candidates` ({num_candidates}).")
    unit = jax.random.uniform(key, (num_candidates, lower.shape[0]), lower.dtype)
    candidates = lower[None, :] + (upper - lower)[None, :] * unit
    if extra_candidates is not None:
        candidates = jnp.concatenate(
            [candidates, jnp.clip(extra_candidates.astype(lower.dtype), lower[None, :], upper[None, :])]
        )
    return maximize_from_candidates(
        objective,
        candidates,
        num_starts=num_starts,
        scale=upper - lower,
        num_steps=num_steps,
        learning_rate=learning_rate,
        lower=lower,
        upper=upper,
    )
