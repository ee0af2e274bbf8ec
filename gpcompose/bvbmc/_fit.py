"""`bvbmc.fit`: BVBMC of a black-box log density from an initial design, in one call."""

from collections.abc import Callable

import jax
import numpy as np
from jaxtyping import ArrayLike, Float, PRNGKeyArray

from .._validation import check_key
from ..active_learning import Checkpoint, Progress, call_black_box, run_black_box
from ._learner import BVBMC
from ._state import BVBMCResult


def fit(
    log_density: Callable[[np.ndarray], float],
    X: Float[ArrayLike, "N D"],
    *,
    key: PRNGKeyArray,
    budget: int,
    learner: BVBMC | None = None,
    callback: Callable[[Progress], None] | None = None,
    checkpoint: Checkpoint | None = None,
    progress: bool | None = None,
) -> BVBMCResult:
    """Boosted Variational Bayesian Monte Carlo (Naiff 2019, Alg. 3) of a black-box log
    density: evaluate `log_density` at the initial points `X` (N, D), then
    `learner.init` (with the first half of `key`), `gpcompose.run_black_box` for `budget`
    further evaluations (with the second half) and `learner.result`.

    `log_density(x)` takes one point (a NumPy array) and returns log ḡ(x); it is called
    from Python, so it need not be a JAX function. An exception, NaN or ±inf is recorded
    as a failed evaluation and the run goes on (failed initial points are dropped).
    `learner` is a `BVBMC` (default `BVBMC()`); `callback` and `checkpoint` are those of
    `run_black_box`. To resume a checkpointed run, use `gpcompose.load_checkpoint` and
    `run_black_box`; for a JAX-traceable target, `gpcompose.run_traceable`. `progress`: a bar
    of the evaluations after the initial points done / budget, the ELBO ± sd and the
    components (`run_black_box`; None: only where stderr is a terminal).
    """
    learner = BVBMC() if learner is None else learner
    check_key(key)
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"`X` must have shape (num_points, dimension), got shape {X.shape}.")
    values = []
    for x in X:
        value, noise_sd = call_black_box(log_density, x)
        if noise_sd is not None:
            raise ValueError("BVBMC models exact evaluations: `log_density` must not return a `noise_sd`.")
        values.append(value)
    init_key, loop_key = jax.random.split(key)
    state = learner.init(X, np.asarray(values), budget=budget, key=init_key)
    state = run_black_box(
        learner, log_density, state, loop_key, callback=callback, checkpoint=checkpoint, progress=progress
    )
    return learner.result(state)
