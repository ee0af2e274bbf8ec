from collections.abc import Callable
from typing import Any, Generic, TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Bool, Float, Int, PyTree

from ._errors import RESULTS
from ._finite import all_finite
from ._select import select_tree
from .parameters import log_prior, partition, satisfies_constraints

Params = TypeVar("Params")


class MaximizeResult(eqx.Module, Generic[Params]):
    """Outcome of `maximize`: the fitted tree, the objective (with prior) at it, the
    solver's result code (optimistix's, as a `gpcompose.RESULTS`) and the number of BFGS steps."""

    params: Params
    value: Float[Array, ""]
    result: RESULTS
    num_steps: Int[Array, ""]

    @property
    def finite(self) -> Bool[Array, ""]:
        """Whether the fit ended at a finite objective with finite parameters."""
        return jnp.isfinite(self.value) & all_finite(self.params)

    def params_or(self, fallback: Params) -> Params:
        """The fitted parameters if the fit ended `finite`, else `fallback` (e.g. the start):
        a fit that diverged never puts NaNs into a model."""
        return select_tree(self.finite, self.params, fallback)


@eqx.filter_jit
def maximize(
    objective: Callable[[Params, Any], Float[Array, ""]],
    params: Params,
    args: PyTree = None,
    *,
    include_prior: bool = True,
    max_steps: int = 500,
    scale: float | Float[Array, ""] = 1.0,
    rtol: float = 1e-8,
    atol: float = 1e-8,
    coordinate_scales: PyTree | None = None,
) -> MaximizeResult[Params]:
    """ML-II or MAP: maximise `objective(params, args) [+ log prior]` over the
    unconstrained coordinates of the trainable parameters, with optimistix BFGS.

    The maximised function is objective + Σ log p(T(u)) + log|T′(u)| (`log_prior`,
    when `include_prior`), the log posterior density of the unconstrained coordinates;
    parameters without a prior are flat in u. BFGS minimises −(objective + prior)/`scale`:
    its first step is the raw gradient (identity inverse Hessian), so an objective that
    sums over N data points should pass `scale` ≈ N, or the line search spends tens of
    steps halving a step of size O(N) before anything moves. The whole fit is one jitted call: pass
    data through `args` (not a closure) so that new data reuse the compiled fit.

    `coordinate_scales` (optional): a tree shaped like the trainable part of `params`
    (`parameters.partition(params)[0]`) holding the typical size s of a move in each
    unconstrained coordinate u, e.g. the widths of the hyperprior there. BFGS then runs in
    the coordinates u/s, so that its initial inverse Hessian is diag(s²) in u instead of the
    identity (a diagonal preconditioner; Nocedal & Wright 2006, §6.1, on the choice of the
    initial inverse Hessian). Where coordinates differ in scale by orders of magnitude (a
    log-lengthscale against a constant mean in the data's units) the identity makes BFGS
    crawl along the flat directions, doubling its step there one line search at a time.

    **Returns:** a `MaximizeResult`. The solver itself never raises: a solve that stops
    early (`result` not successful, e.g. `RESULTS.nonlinear_max_steps_reached` after
    `max_steps`, or `RESULTS.nonfinite_objective` where the objective is NaN or ±inf) returns
    its last iterate, so one seed of a vmapped batch of fits does not stop the others, and
    each seed's `result` is its own. A fit never returns a parameter outside its constraint
    (`parameters.satisfies_constraints`): where the last iterate has one (a NaN coordinate),
    the starting `params` are returned with the objective there and
    `RESULTS.constraint_violated`. The code reports the optimisation, not the model: a GP
    state built from the fitted parameters reports its own (`posterior.result`). A run-time
    check inside `objective` still raises (`eqx.error_if`, e.g. `gp.condition` given non-finite data, or a
    noise variance held by a `Real` that a step makes negative). `Positive` and `Interval`
    parameters map every finite step to a valid value, so no step makes them fail such a
    check: on noise-free data a `Positive` noise variance ends tiny but valid (see `Positive`).

    !!! Example
        ```python
        def objective(p, data):
            X, y = data
            return gp.log_marginal_likelihood(gp.condition(p["kernel"], p["mean"], X, y, p["noise"]))
        fit = maximize(objective, {"kernel": kernel, "mean": mean, "noise": Positive(0.1)}, (X, y))
        ```
    """
    trainable, rest = partition(params)

    def negative_log_density(trainable, args):
        full = eqx.combine(trainable, rest)
        value = objective(full, args)
        if include_prior:
            value = value + log_prior(full)
        return -value / scale

    def to_unconstrained(scaled):
        if coordinate_scales is None:
            return scaled
        return jax.tree.map(jnp.multiply, scaled, coordinate_scales)

    def in_scaled_coordinates(scaled, args):
        return negative_log_density(to_unconstrained(scaled), args)

    solver = optx.BFGS(rtol=rtol, atol=atol)
    start = trainable if coordinate_scales is None else jax.tree.map(jnp.divide, trainable, coordinate_scales)
    solution = optx.minimise(in_scaled_coordinates, solver, start, args, max_steps=max_steps, throw=False)
    fitted = to_unconstrained(solution.value)
    valid = satisfies_constraints(eqx.combine(fitted, rest))
    # One evaluation of the objective outside the solver, at the returned parameters (the
    # solution, or the start where the solution breaks a constraint): one copy in the program.
    returned = select_tree(valid, fitted, trainable)
    value = -scale * negative_log_density(returned, args)
    result = RESULTS.where(jnp.isfinite(value), RESULTS.promote(solution.result), RESULTS.nonfinite_objective)
    return MaximizeResult(
        eqx.combine(returned, rest),
        value,
        RESULTS.where(valid, result, RESULTS.constraint_violated),
        jnp.asarray(solution.stats["num_steps"]),
    )
