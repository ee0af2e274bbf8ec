"""Calling a user's expensive black-box target from the host loop (`run_black_box`)."""

import warnings
from collections.abc import Callable

import numpy as np


def call_black_box(target: Callable, x: np.ndarray) -> tuple[float, float | None]:
    """`(value, sd)` of one call `target(x)`; `sd` is None unless the target returned a
    pair `(value, sd)` (a noisy evaluation).

    A failing target must not end a run or lose the evaluations made so far: an exception
    becomes NaN, and an exception or a non-finite value is reported with a `RuntimeWarning`;
    the learner records it as a failed evaluation and the run goes on. `KeyboardInterrupt`
    and other `BaseException`s that are not `Exception`s are not caught.
    """
    try:
        outcome = target(x)
    except Exception as error:
        warnings.warn(f"the target raised {error!r} at x = {x}; recorded as failed.", RuntimeWarning, stacklevel=3)
        return float("nan"), None
    if isinstance(outcome, tuple):
        value, sd = outcome
        value, sd = float(np.asarray(value)), float(np.asarray(sd))
    else:
        value, sd = float(np.asarray(outcome)), None
    if not np.isfinite(value):
        warnings.warn(f"the target returned {value} at x = {x}; recorded as failed.", RuntimeWarning, stacklevel=3)
    return value, sd
