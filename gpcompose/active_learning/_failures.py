"""Failed evaluations as censored observations: the rule every active learner's surrogate uses.

A target that raises or returns NaN or ±inf at x says nothing about f(x) directly, but in the
problems these learners meet (a simulator that diverges, a likelihood whose solver fails, a log
density that underflows) failures cluster where the target is poor: far from a maximum, far out
in a tail. A learner that fits only the successful evaluations keeps asking where it failed,
since nothing there has changed its model. Every learner therefore fits a failed evaluation at a
finite input x as an observation at the lowest value it fits among its successful evaluations,

    ỹ(x) = min_{n : fitted} y_n,

that is, the failure is read as a left-censored observation f(x) ≤ min_n y_n (censored
regression, Tobin 1958) and the censored value is replaced by its censoring point. Imputing a
value at failed points, so that the surrogate itself steers the search away from them, is the
approach of Forrester, Sóbester & Keane (2006), who impute the surrogate's prediction penalised
by its error; the censoring point is simpler and needs no prediction at the failure: the failure
is as bad as the worst success, never worse, so that it cannot stretch the output scale or the
hyperparameters. Modelling where the target fails by a separate classifier (Bachoc, Helbert &
Picheny 2020) is the alternative this rule does without. Each learner applies it in its own
units; SVBMC's lowest fitted value is its trimming level (`svbmc` `_training.training_rows`).
"""

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float


def failure_value(values: Float[Array, " C"], fitted: Bool[Array, " C"]) -> Float[Array, ""]:
    """ỹ = min_{n : fitted_n} values_n, the value at which a failed evaluation is fitted (0 when
    no row is fitted: there is then no fit to censor into)."""
    fitted = jnp.asarray(fitted, bool)
    lowest = jnp.min(jnp.where(fitted, values, jnp.inf))
    return jnp.where(jnp.any(fitted), lowest, jnp.zeros((), values.dtype))


def censor_failures(
    values: Float[Array, " C"], fitted: Bool[Array, " C"], failed: Bool[Array, " C"]
) -> tuple[Float[Array, " C"], Bool[Array, " C"]]:
    """(values, mask) of a fit with the `failed` rows censored: each failed row takes the value
    ỹ = min_{n : fitted_n} values_n (`failure_value`) and joins the mask. `values` are in the
    fit's own units (standardised, scaled, or after trimming: the fit's lowest kept value);
    `fitted` marks the successful rows the fit uses, `failed` the failed evaluations at finite
    inputs (`Evaluations.censored`). Without a fitted row nothing changes."""
    fitted, failed = jnp.asarray(fitted, bool), jnp.asarray(failed, bool)
    censored = failed & ~fitted & jnp.any(fitted)
    return jnp.where(censored, failure_value(values, fitted), values), fitted | censored


def repeats_failure(x: Float[Array, " D"], inputs: Float[Array, "C D"], failed: Bool[Array, " C"]) -> Bool[Array, ""]:
    """Whether `x` is a failed row's input (to √ε relative, ε the dtype's machine epsilon): a
    point a learner must not ask again. Its censored value makes such a point unattractive to
    every acquisition, but a multistart search seeded at the data can return a start unmoved;
    a learner asks another point then (`ask` of `bo.BO`, `bvbmc.BVBMC`, `svbmc.SVBMC`)."""
    tolerance = jnp.sqrt(jnp.finfo(inputs.dtype).eps)
    close = jnp.all(jnp.abs(inputs - x[None, :]) <= tolerance * (1.0 + jnp.abs(inputs)), axis=-1)
    return jnp.any(close & jnp.asarray(failed, bool))
