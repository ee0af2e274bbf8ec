"""Result codes carried by states instead of NaNs, and the run-time value checks.

A failed factorisation must not poison a whole `vmap` batch, so the layers below never
raise or return NaN on a numerical failure: they return finite placeholder values and a
`RESULTS` item that the caller inspects (or raises with `RESULTS.error_if`-style checks).

Value mistakes (non-finite data, a negative noise variance) raise at run time through
`error_if`, which names the public function that was called: inside a user's `jit` the
traceback of such an error can point at an earlier call of the same compiled function.
"""

import contextlib
import contextvars
import warnings
from collections.abc import Iterator

import equinox as eqx
import jax.numpy as jnp
import optimistix as optx
from jax.custom_batching import custom_vmap
from jaxtyping import Bool, PyTree

_PUBLIC_FUNCTION: contextvars.ContextVar[str | None] = contextvars.ContextVar("public_function", default=None)


# optimistix's `successful` has an empty message and prints as `RESULTS<>`; redefining it here
# (which equinox warns about) makes every code, ours and the solvers', print readably.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Enumeration has duplicate incompatible values for successful")

    class RESULTS(optx.RESULTS):
        """Outcome of a numerical step. `RESULTS.successful` means the outputs are exact.

        It extends `optimistix.RESULTS`, so a solver's code becomes one of these with
        `RESULTS.promote(solution.result)` (as `maximize` does) and prints its message.
        """

        __module__ = "gpcompose"  # its public path: the items print as gpcompose.RESULTS<…>

        successful = "successful"
        cholesky_failed = (
            "The matrix was not positive definite even after the largest jitter of the "
            "escalation policy; the outputs are finite placeholders and must not be used."
        )
        update_failed = (
            "A rank-1 Cholesky update, downdate or append lost positive definiteness; "
            "recompute the factorisation from scratch."
        )
        nonfinite_objective = (
            "`objective` (with the log prior) was NaN or infinite where the fit ended, so no step "
            "could be taken: check `objective` at the starting `params`."
        )
        jitter_above_level = (
            "The matrix was factorised only after adding a jitter above 1e-6 of its mean diagonal "
            "(the level of the jitter policy): the outputs are finite but belong to a "
            "model with that much extra noise on the diagonal, which is a material change. Add "
            "observation noise, or check the kernel and the inputs (near-duplicate rows)."
        )
        jitter_changed_fit = (
            "The targets contradict K + D: the jitter that made K + D factorisable changed the "
            "data-fit term of the log marginal likelihood by more than 1 nat (e.g. duplicate inputs "
            "with different targets and a noise variance near 0). The outputs are finite but belong "
            "to the jittered model; use a noise variance that fits the data."
        )
        zero_noise_variance = (
            "A used row has noise variance 0: the GP interpolates it (a noise-free model). K + D "
            "was factorised under the jitter policy, so the outputs may be those of K + D + jitter·I; "
            "they are finite. Pass a small positive noise variance for a well-posed model."
        )
        constraint_violated = (
            "A fitted parameter ended outside its constraint (NaN, infinite, or not above a "
            "`Positive`'s minimum / inside an `Interval`): the starting `params` are returned, "
            "with the objective there."
        )


@contextlib.contextmanager
def raised_by(name: str) -> Iterator[None]:
    """Within this context (the tracing of the public function `name`, entered by
    `public_jit`), `error_if` messages start with "`name`: "; the innermost context wins."""
    token = _PUBLIC_FUNCTION.set(name)
    try:
        yield
    finally:
        _PUBLIC_FUNCTION.reset(token)


_MAX_NAMED_MEMBERS = 1000


def _naming_batch_member(message: str):
    """A check `pred ↦ pred` that, where `pred` is batched by `vmap`, raises `message` with the
    first failing member of the batch named (at most the first `_MAX_NAMED_MEMBERS`); it does
    nothing else. `pred` is boolean, so the check is never differentiated (a `custom_vmap`
    cannot be transposed)."""

    @custom_vmap
    def check(pred):
        return pred

    @check.def_vmap
    def _rule(axis_size, in_batched, pred):
        failing = jnp.any(pred.reshape(axis_size, -1), axis=1)
        named = min(axis_size, _MAX_NAMED_MEMBERS)
        messages = [f"{message} (batch member {member} of {axis_size} under `vmap`)" for member in range(named)]
        if axis_size > named:
            messages[-1] = f"{message} (a batch member from {named - 1} on, of {axis_size} under `vmap`)"
        first = jnp.minimum(jnp.argmax(failing), named - 1)
        return eqx.branched_error_if(pred, jnp.any(failing), first, messages), True

    return check


def error_if(x: PyTree, pred: Bool[PyTree, "..."], message: str) -> PyTree:
    """`eqx.error_if(x, pred, message)`, with the message prefixed by the name of the public
    function being traced (e.g. "gp.condition: `noise_variance` must be …") and, under
    `vmap`, followed by the first batch member that fails ("(batch member 3 of 8 under
    `vmap`)"; for nested `vmap`s, the member of the innermost one whose condition is batched).

    The name is fixed when the check is traced: a check inside a private jitted helper that two
    public functions share would keep the name of the first one that traced it, so checks sit
    in the public functions' own bodies (or in plain helpers they call).
    """
    name = _PUBLIC_FUNCTION.get()
    message = message if name is None else f"{name}: {message}"
    pred = _naming_batch_member(message)(jnp.asarray(pred, bool))
    return eqx.error_if(x, pred, message)
