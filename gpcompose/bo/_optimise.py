"""`maximize` and `minimize`: `BO.init`, `gpcompose.run_black_box` and `BO.result` in one call."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray

from ..active_learning import Checkpoint, Progress, run_black_box
from ._learner import BO
from ._state import BOResult


def maximize(
    function: Callable[[np.ndarray], float],
    lower: Float[ArrayLike, " D"],
    upper: Float[ArrayLike, " D"],
    *,
    key: PRNGKeyArray,
    budget: int,
    learner: BO | None = None,
    f_plus: Float[ArrayLike, ""] | None = None,
    f_minus: Float[ArrayLike, ""] | None = None,
    eta_plus: Float[ArrayLike, ""] | None = None,
    eta_minus: Float[ArrayLike, ""] | None = None,
    X: Float[ArrayLike, "N D"] | None = None,
    y: Float[ArrayLike, " N"] | None = None,
    callback: Callable[[Progress], None] | None = None,
    checkpoint: Checkpoint | None = None,
    progress: bool | None = None,
) -> BOResult:
    """Maximise a black-box `function(x)` (x a NumPy array of shape (D,)) on the box
    [`lower`, `upper`] with `budget` evaluations, optionally using approximate bounds
    f⁺ ≥ max f and f⁻ ≤ min f with looseness η₊, η₋ (Nguyen, Deisenroth & Osborne 2021).

    Exactly `state = learner.init(X, y, lower, upper, budget=budget, f_plus=…, …)`,
    `state = gpcompose.run_black_box(learner, function, state, key, callback=…,
    checkpoint=…)`, `learner.result(state)`. `learner` defaults to `BO()`, expected
    improvement, which needs no bounds and ignores any given; to use the bounds choose bounded
    entropy search, `learner=BO(acquisition=BoundedEntropySearch())`, which needs `f_plus`,
    `f_minus` or both. `X`, `y` are evaluations made before (default none). An exception or a
    non-finite value of `function` is recorded as a failed evaluation and the run goes on;
    resume an interrupted run from its checkpoint with `gpcompose.load_checkpoint` and
    `run_black_box`. `progress`: a bar of the evaluations done / budget and the best value
    (`run_black_box`; None: only where stderr is a terminal).
    """
    learner = BO() if learner is None else learner
    if (X is None) != (y is None):
        raise ValueError("`X` and `y` must be given together (evaluations made before the run), or neither.")
    if X is None:
        X = jnp.zeros((0, np.shape(lower)[0]))
        y = jnp.zeros((0,))
    state = learner.init(
        X, y, lower, upper, budget=budget, f_plus=f_plus, f_minus=f_minus, eta_plus=eta_plus, eta_minus=eta_minus
    )
    state = run_black_box(learner, function, state, key, callback=callback, checkpoint=checkpoint, progress=progress)
    return learner.result(state)


def minimize(
    function: Callable[[np.ndarray], float],
    lower: Float[ArrayLike, " D"],
    upper: Float[ArrayLike, " D"],
    *,
    key: PRNGKeyArray,
    budget: int,
    learner: BO | None = None,
    f_plus: Float[ArrayLike, ""] | None = None,
    f_minus: Float[ArrayLike, ""] | None = None,
    eta_plus: Float[ArrayLike, ""] | None = None,
    eta_minus: Float[ArrayLike, ""] | None = None,
    X: Float[ArrayLike, "N D"] | None = None,
    y: Float[ArrayLike, " N"] | None = None,
    callback: Callable[[Progress], None] | None = None,
    checkpoint: Checkpoint | None = None,
    progress: bool | None = None,
) -> BOResult:
    """Minimise `function` by `maximize` on −f: the bounds are still f⁺ ≥ max f and
    f⁻ ≤ min f of the original function (f⁻ is the one that matters for minimisation), and
    `y` holds values of f; the result is in the original sign. The states that `callback`
    and `checkpoint` see hold −f, as `maximize` does, and so does the best value that
    `progress` shows."""

    def negate(value):
        return None if value is None else -np.asarray(value)

    found = maximize(
        lambda x: -np.asarray(function(x)),
        lower,
        upper,
        key=key,
        budget=budget,
        learner=learner,
        f_plus=negate(f_minus),
        f_minus=negate(f_plus),
        eta_plus=eta_minus,
        eta_minus=eta_plus,
        X=X,
        y=negate(y),
        callback=callback,
        checkpoint=checkpoint,
        progress=progress,
    )
    return BOResult(found.x_best, -found.y_best, found.X, jax.device_put(-np.asarray(found.y)), found.num_failed)
