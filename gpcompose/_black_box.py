"""Calling a user's expensive black-box target from a host loop (`svbmc.fit`, `bvbmc.fit`,
`bo.maximize`)."""

import warnings
from collections.abc import Callable

import numpy as np


def call_black_box(target: Callable, x: np.ndarray, *, description: str) -> float | tuple[float, float]:
    """`target(x)` as a float, or as `(value, sd)` when the target returns a pair.

    A failing target must not end a run or lose the evaluations made so far: an exception
    becomes NaN, and an exception or a non-finite value is reported with a `RuntimeWarning`
    naming `description`; the caller records it as a failed evaluation and goes on.
    """
    try:
        outcome = target(x)
    except Exception as error:
        warnings.warn(f"{description} raised {error!r} at x = {x}; recorded as failed.", RuntimeWarning, stacklevel=3)
        return float("nan")
    if isinstance(outcome, tuple):
        value, sd = outcome
        value, sd = float(np.asarray(value)), float(np.asarray(sd))
    else:
        value, sd = float(np.asarray(outcome)), None
    if not np.isfinite(value):
        warnings.warn(f"{description} returned {value} at x = {x}; recorded as failed.", RuntimeWarning, stacklevel=3)
    return value if sd is None else (value, sd)
