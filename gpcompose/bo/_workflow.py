"""Bounded Bayesian optimisation as init/ask/tell on fixed-capacity buffers, a traceable
`run`, and the `maximize`/`minimize` drivers for black-box (Python) targets."""

import dataclasses
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._black_box import call_black_box
from .._jit import public_jit
from .._validation import check_box
from ._options import BOOptions
from ._propose import propose
from ._state import BOState, split_key


class BOResult(eqx.Module):
    """Outcome of a BO run: the best evaluation (`x_best`, `y_best`), every successful
    evaluation (`X`, `y`, in the original space and sign) and the number that failed."""

    x_best: Float[Array, " D"]
    y_best: Float[Array, ""]
    X: Float[Array, "N D"]
    y: Float[Array, " N"]
    num_failed: int = eqx.field(static=True)


def _optional_scalar(value, name: str, dtype):
    if value is None:
        return None
    value = jnp.asarray(value, dtype)
    if value.shape != ():
        raise ValueError(f"`{name}` must be a scalar, got shape {value.shape}.")
    if not isinstance(value, jax.core.Tracer) and not bool(jnp.isfinite(value)):
        raise ValueError(f"`{name}` must be finite, got {value}.")
    return value


def init(
    lower: Float[ArrayLike, " D"],
    upper: Float[ArrayLike, " D"],
    *,
    budget: int,
    f_plus: Float[ArrayLike, ""] | None = None,
    f_minus: Float[ArrayLike, ""] | None = None,
    eta_plus: Float[ArrayLike, ""] | None = None,
    eta_minus: Float[ArrayLike, ""] | None = None,
    num_initial: int | None = None,
    options: BOOptions | None = None,
) -> BOState:
    """Start a maximisation of a function on the box [`lower`, `upper`].

    **Arguments:**

    - `budget`: total number of evaluations (initial design included); the buffers hold
      this many rows.
    - `f_plus`, `f_minus`: approximate max and min of f (raw units); `eta_plus`,
      `eta_minus`: their looseness (sd, raw units; default: the document's η₊² = 0.02d,
      η₋² = 0.5d in standardised units).
    - `num_initial`: uniform random points before the model is used (default max(d, 2);
      the document uses d).
    - `options`: a `BOOptions` (acquisition, sample counts, search settings).

    `ValueError` for lower ≥ upper, f⁻ ≥ f⁺, η ≤ 0, a budget not above `num_initial`, or
    an acquisition that needs a missing bound (BES: f⁺ or f⁻; ERM: f⁺).
    """
    options = BOOptions() if options is None else options
    lower, upper = check_box(lower, upper)
    dtype = lower.dtype
    dimension = lower.shape[0]
    num_initial = max(dimension, 2) if num_initial is None else int(num_initial)
    if num_initial < 1 or budget <= num_initial:
        raise ValueError(f"`budget` ({budget}) must exceed `num_initial` ({num_initial}) ≥ 1.")
    f_plus, f_minus = _optional_scalar(f_plus, "f_plus", dtype), _optional_scalar(f_minus, "f_minus", dtype)
    eta_plus = _optional_scalar(eta_plus, "eta_plus", dtype)
    eta_minus = _optional_scalar(eta_minus, "eta_minus", dtype)
    for eta, name in ((eta_plus, "eta_plus"), (eta_minus, "eta_minus")):
        if eta is not None and not isinstance(eta, jax.core.Tracer) and not bool(eta > 0):
            raise ValueError(f"`{name}` must be strictly positive, got {eta}.")
    concrete = not any(isinstance(v, jax.core.Tracer) for v in (f_plus, f_minus))
    if f_plus is not None and f_minus is not None and concrete and not bool(f_minus < f_plus):
        raise ValueError(f"`f_minus` ({f_minus}) must be smaller than `f_plus` ({f_plus}).")
    if options.acquisition == "bes" and f_plus is None and f_minus is None:
        raise ValueError("acquisition 'bes' needs `f_plus`, `f_minus` or both.")
    if options.acquisition == "erm" and f_plus is None:
        raise ValueError("acquisition 'erm' needs `f_plus` (the known optimum).")
    return BOState(
        inputs=jnp.zeros((budget, dimension), dtype),
        targets=jnp.zeros((budget,), dtype),
        evaluated=jnp.zeros((budget,), bool),
        succeeded=jnp.zeros((budget,), bool),
        num_evaluations=jnp.zeros((), jnp.int32),
        num_initial=jnp.asarray(num_initial, jnp.int32),
        lower=lower,
        upper=upper,
        f_plus=f_plus,
        f_minus=f_minus,
        eta_plus=eta_plus,
        eta_minus=eta_minus,
        options=options,
    )


def _ask_unit(state: BOState, key: PRNGKeyArray) -> Float[Array, " D"]:
    initial_key, model_key = split_key(key, 2)
    random_point = jax.random.uniform(initial_key, (state.dimension,), state.inputs.dtype)
    design = jnp.sum(state.succeeded, dtype=jnp.int32) < state.num_initial
    return jax.lax.cond(design, lambda: random_point, lambda: propose(state, model_key)[0])


@public_jit()
def ask(state: BOState, key: PRNGKeyArray) -> Float[Array, " D"]:
    """The next point to evaluate (original space): uniform while fewer than `num_initial`
    evaluations succeeded, then the maximiser of the acquisition on a surrogate refitted
    by ML-II (document Alg. 2; BES falls back to EI when no sample is accepted)."""
    return state.scale_from_unit(_ask_unit(state, key))


def _record(state: BOState, x, y) -> BOState:
    dtype = state.inputs.dtype
    x = jnp.asarray(x, dtype)
    y = jnp.asarray(y, dtype)
    if x.shape != (state.dimension,) or y.shape != ():
        raise ValueError(f"`x` must have shape ({state.dimension},) and `y` be a scalar, got {x.shape}, {y.shape}.")
    u = state.scale_to_unit(x)
    good = jnp.isfinite(y) & jnp.all(jnp.isfinite(u))
    slot = eqx.error_if(
        state.num_evaluations, state.num_evaluations >= state.capacity, "bo.tell: the evaluation budget is exhausted."
    )
    return eqx.tree_at(
        lambda s: (s.inputs, s.targets, s.evaluated, s.succeeded, s.num_evaluations),
        state,
        (
            state.inputs.at[slot].set(jnp.where(good, jnp.clip(u, 0.0, 1.0), 0.0)),
            state.targets.at[slot].set(jnp.where(good, y, 0.0)),
            state.evaluated.at[slot].set(True),
            state.succeeded.at[slot].set(good),
            state.num_evaluations + 1,
        ),
    )


@public_jit()
def tell(state: BOState, x: Float[ArrayLike, " D"], y: Float[ArrayLike, ""]) -> BOState:
    """Record the evaluation y = f(x) (original space). A NaN/±inf `y` is recorded as a
    failed evaluation and never used."""
    return _record(state, x, y)


@eqx.filter_jit
def run(function: Callable[[Float[Array, " D"]], Float[Array, ""]], state: BOState, key: PRNGKeyArray) -> BOState:
    """Spend the rest of the budget on a JAX-traceable `function` (maximised) in one
    compiled program (`lax.scan` of ask/evaluate/tell). Vmaps over seeds:
    `jax.vmap(lambda k: bo.run(f, state, k))(keys)`."""

    def step(state, index):
        x = state.scale_from_unit(_ask_unit(state, jax.random.fold_in(key, index)))
        active = state.num_evaluations < state.capacity
        return jax.lax.cond(active, lambda s: _record(s, x, function(x)), lambda s: s, state), None

    state, _ = jax.lax.scan(step, state, jnp.arange(state.capacity))
    return state


def result(state: BOState) -> BOResult:
    """The `BOResult` of a (finished or unfinished) maximisation; for one run, not a batch."""
    succeeded = np.asarray(state.succeeded)
    if not succeeded.any():
        raise ValueError("bo.result: no evaluation has succeeded yet.")
    X = jax.vmap(state.scale_from_unit)(state.inputs)[succeeded]
    y = state.targets[succeeded]
    best = int(jnp.argmax(y))
    num_failed = int(np.sum(np.asarray(state.evaluated) & ~succeeded))
    return BOResult(X[best], y[best], X, y, num_failed)


def maximize(
    function: Callable,
    lower: Float[ArrayLike, " D"],
    upper: Float[ArrayLike, " D"],
    *,
    key: PRNGKeyArray,
    budget: int,
    acquisition: str = "bes",
    f_plus: Float[ArrayLike, ""] | None = None,
    f_minus: Float[ArrayLike, ""] | None = None,
    eta_plus: Float[ArrayLike, ""] | None = None,
    eta_minus: Float[ArrayLike, ""] | None = None,
    num_initial: int | None = None,
    options: BOOptions | None = None,
    callback: Callable[[BOState], None] | None = None,
    state: BOState | None = None,
) -> BOResult:
    """Maximise a black-box `function(x)` (x a NumPy array of shape (d,)) on the box
    [`lower`, `upper`] with `budget` evaluations, using approximate bounds f⁺ ≥ max f and
    f⁻ ≤ min f with looseness η₊, η₋ (Nguyen, Deisenroth & Osborne 2021).

    `acquisition` is one of "bes" (default; needs a bound), "ei", "ucb", "mes", "ts",
    "erm" (needs f⁺) or "random"; it replaces `options.acquisition`. The target is called
    from Python between the jitted `ask` and `tell`; an exception or a NaN is recorded as a
    failed evaluation (with a `RuntimeWarning`) and the run goes on. `callback(state)` is
    called after every evaluation (progress, checkpoints with `eqx.tree_serialise_leaves`);
    pass a saved `state` to resume a run without losing an evaluation. See `init` for the
    other arguments.
    """
    if state is None:
        state = init(
            lower,
            upper,
            budget=budget,
            f_plus=f_plus,
            f_minus=f_minus,
            eta_plus=eta_plus,
            eta_minus=eta_minus,
            num_initial=num_initial,
            options=dataclasses.replace(BOOptions() if options is None else options, acquisition=acquisition),
        )
    for index in range(int(state.num_evaluations), state.capacity):
        x = ask(state, jax.random.fold_in(key, index))
        state = tell(state, x, call_black_box(function, np.asarray(x), description="bo: the target"))
        if callback is not None:
            callback(state)
    return result(state)


def minimize(
    function: Callable,
    lower: Float[ArrayLike, " D"],
    upper: Float[ArrayLike, " D"],
    *,
    key: PRNGKeyArray,
    budget: int,
    acquisition: str = "bes",
    f_plus: Float[ArrayLike, ""] | None = None,
    f_minus: Float[ArrayLike, ""] | None = None,
    eta_plus: Float[ArrayLike, ""] | None = None,
    eta_minus: Float[ArrayLike, ""] | None = None,
    num_initial: int | None = None,
    options: BOOptions | None = None,
    callback: Callable[[BOState], None] | None = None,
    state: BOState | None = None,
) -> BOResult:
    """Minimise `function` by maximising −f: the bounds are still f⁺ ≥ max f and
    f⁻ ≤ min f of the original function (f⁻ is the one that matters for minimisation);
    results are in the original sign. A `state` to resume holds −f (as `maximize` saw it)."""

    def negate(value):
        return None if value is None else -np.asarray(value)

    found = maximize(
        lambda x: -np.asarray(function(x)),
        lower,
        upper,
        key=key,
        budget=budget,
        acquisition=acquisition,
        f_plus=negate(f_minus),
        f_minus=negate(f_plus),
        eta_plus=eta_minus,
        eta_minus=eta_plus,
        num_initial=num_initial,
        options=options,
        callback=callback,
        state=state,
    )
    return BOResult(found.x_best, -found.y_best, found.X, -found.y, found.num_failed)
