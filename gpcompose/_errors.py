"""Result codes carried by states instead of NaNs.

A failed factorisation must not poison a whole `vmap` batch, so the layers below never
raise or return NaN on a numerical failure: they return finite placeholder values and a
`RESULTS` item that the caller inspects (or raises with `RESULTS.error_if`-style checks).
"""

import equinox as eqx


class RESULTS(eqx.Enumeration):
    """Outcome of a numerical step. `RESULTS.successful` means the outputs are exact."""

    successful = ""
    cholesky_failed = (
        "The matrix was not positive definite even after the largest jitter of the "
        "escalation policy; the outputs are finite placeholders and must not be used."
    )
    update_failed = (
        "A rank-1 Cholesky update, downdate or append lost positive definiteness; "
        "recompute the factorisation from scratch."
    )
