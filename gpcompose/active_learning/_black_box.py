"""Calling a user's expensive black-box target from the host loop (`run_black_box`)."""

import warnings
from collections.abc import Callable

import numpy as np


def call_black_box(target: Callable, x: np.ndarray) -> tuple[float, float | None]:
    """`(value, sd)` of one call `target(x)`; `sd` is None unless the target returned a
    pair `(value, sd)` (a noisy evaluation).

    A failing target must not end a run or lose the evaluations made so far: an exception,
    or a value that is not one real number (complex, a string, an array of several values),
    becomes NaN, and it or a non-finite value is reported with a `RuntimeWarning`;
    the learner records it as a failed evaluation and the run goes on. `KeyboardInterrupt`
    and other `BaseException`s that are not `Exception`s are not caught.
    """
    try:
        outcome = target(x)
    except Exception as error:
        warnings.warn(f"the target raised {error!r} at x = {x}; recorded as failed.", RuntimeWarning, stacklevel=3)
        return float("nan"), None
    value, sd = outcome if isinstance(outcome, tuple) else (outcome, None)
    value = np.asarray(value)
    if not (np.issubdtype(value.dtype, np.number) or value.dtype == bool) or np.iscomplexobj(value) or value.size != 1:
        warnings.warn(
            f"the target returned {outcome!r} at x = {x}, not a real number; recorded as failed.",
            RuntimeWarning,
            stacklevel=3,
        )
        return float("nan"), None
    value, sd = float(value.reshape(())), None if sd is None else float(np.asarray(sd))
    if not np.isfinite(value):
        warnings.warn(f"the target returned {value} at x = {x}; recorded as failed.", RuntimeWarning, stacklevel=3)
    return value, sd
