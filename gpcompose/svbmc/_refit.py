"""The sparse-GP refit of one SVBMC retraining: inducing points and SGPR MAP from each
starting hyperparameter set, the best bound kept, with a guard against spurious peaks."""

from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from .. import sparse
from .._placeholder import zeros_like_output
from .._select import select_tree
from ..sparse import select_inducing_points
from ._surrogate import Surrogate, conditioned_objective, first_near_best, fit_sparse

if TYPE_CHECKING:
    from ._workflow import SVBMC


def exceeds_ceiling(
    posterior: sparse.SparsePosterior,
    points: Float[Array, "Q D"],
    ceiling: Float[Array, ""],
    mask: Bool[Array, " Q"] | None = None,
) -> Bool[Array, ""]:
    """Whether the posterior mean exceeds `ceiling` at one of the (unmasked) `points` [ours].

    The test of the refit guard. The SGPR MAP with Z fixed is dominated by the Titsias
    trace term when M is capped, and it can end at
    hyperparameters whose mean rises tens of units above every observation between the
    inducing points; the mixture then chases those peaks and the ELBO runs off. VBMC
    bounds the quadratic mean's maximum by y_max + D for the same reason
    (`gpQuadraticMeanBound`); here the whole posterior mean is checked, with ceiling
    y_max + D.
    """
    mean = sparse.predict_mean(posterior, points)
    if mask is not None:
        mean = jnp.where(mask, mean, -jnp.inf)
    return jnp.max(mean) > ceiling


def pad_inducing(
    inputs: Float[Array, "C D"], indices: Int[Array, " M"], inducing_mask: Bool[Array, " M"], free_slots: int
) -> tuple[Float[Array, "M+F D"], Bool[Array, " M+F"]]:
    """Z = the selected inputs (zeros where masked) followed by `free_slots` empty slots,
    which the rank-1 updates of `tell` fill."""
    Z = jnp.where(inducing_mask[:, None], inputs[indices], 0.0)
    Z = jnp.concatenate([Z, jnp.zeros((free_slots, inputs.shape[1]), inputs.dtype)])
    return Z, jnp.concatenate([inducing_mask, jnp.zeros((free_slots,), bool)])


def condition_on_selected(
    surrogate: Surrogate,
    inputs: Float[Array, "C D"],
    log_densities: Float[Array, " C"],
    noise: Float[Array, " C"],
    keep: Bool[Array, " C"],
    options: "SVBMC",
    *,
    num_initial: int,
) -> sparse.SparsePosterior:
    """The sparse GP of `surrogate` on inducing inputs selected under its kernel (weighted
    greedy selection, Li, Clarté & Acerbi 2023, §3.3, App. B.2, M_min ≤ M ≤ M_max), padded with `batch_size` free
    slots for the rank-1 updates of the next round (`pad_inducing`)."""
    min_inducing, max_inducing = options.inducing_range(num_initial, inputs.shape[0] - num_initial)
    indices, inducing_mask = select_inducing_points(
        surrogate.kernel,
        inputs,
        noise,
        keep,
        max_points=max_inducing,
        min_points=min_inducing,
        tolerance=options.inducing_tolerance,
    )
    Z, inducing_mask = pad_inducing(inputs, indices, inducing_mask, options.batch_size)
    return sparse.condition(
        surrogate.kernel, surrogate.mean, inputs, log_densities, noise, Z, mask=keep, inducing_mask=inducing_mask
    )


class Refit(eqx.Module):
    """Outcome of `refit_from_starts`: the chosen `posterior`, whether the fit of every
    start peaked (`fell_back`: `posterior` is then `unfitted`), and `unfitted`, the
    sparse GP of the start with the highest bound among those tried (hyperparameters as
    they started, on the inducing points selected under them; every start is tried when
    `fell_back`)."""

    posterior: sparse.SparsePosterior
    fell_back: Bool[Array, ""]
    unfitted: sparse.SparsePosterior


def refit_from_starts(
    starts: list[Surrogate],
    inputs: Float[Array, "C D"],
    log_densities: Float[Array, " C"],
    noise: Float[Array, " C"],
    keep: Bool[Array, " C"],
    options: "SVBMC",
    *,
    num_initial: int,
    check_points: Float[Array, "Q D"],
    check_mask: Bool[Array, " Q"],
    ceiling: Float[Array, ""],
    fit_mask: Bool[Array, " C"] | None = None,
) -> Refit:
    """Inducing points and SGPR MAP from the starts ξ_1, ξ_2, … in order:

    1. Z_s = weighted greedy selection under ξ_s (Li, Clarté & Acerbi 2023, §3.3, App. B.2), padded with
       `batch_size` free slots for the rank-1 updates of the next round;
    2. ξ̂_s = argmax GP-ELBO(ξ; Z_s) + log p(ξ) with Z_s fixed (§3.3), from ξ_s; steps 1–2
       run for a start only if every earlier ξ̂ peaked;
    3. keep the first ξ̂_s whose mean stays below `ceiling` at the unmasked `check_points`
       (`exceeds_ceiling`); if all peak, the start with the highest bound
       GP-ELBO(ξ_s; Z_s) + log p(ξ_s), unfitted.

    The starts are the subset MAP at initialisation, and in the active phase the round's
    subset MAP and then the current hyperparameters. Li, Clarté & Acerbi (2023, §3.3)
    compare those two by the bound under the current Z before selecting Z and fitting; we
    fit the subset MAP on its own Z and fall back to the current ξ only if that fit peaks
    [ours]. That comparison is biased: the bound's trace term favours long lengthscales on
    the Z that was selected under them, so it keeps the current hyperparameters round after
    round, and each refit from them lengthens ℓ further. Fitting both starts and keeping the
    higher fitted bound would double the cost of a round, most of which is the SGPR fits.
    The starts are tried in one `lax.while_loop`, so the program holds one copy of the
    fit; a vmapped program runs the next start's fit only while some member's fits peaked,
    with the same choice.

    The MAP of step 2 uses the rows of `fit_mask` (default `keep`): the successful rows,
    without the censored failures (`_training.retrain`); Z and the posterior use `keep`.
    """
    fit_mask = keep if fit_mask is None else fit_mask

    def candidate(start: Surrogate):
        """(unfitted posterior, its bound, fitted posterior, whether the fit peaked) of one start."""
        start_posterior = condition_on_selected(
            start, inputs, log_densities, noise, keep, options, num_initial=num_initial
        )
        Z, inducing_mask = start_posterior.inducing_inputs, start_posterior.inducing_mask
        fitted = fit_sparse(
            start, inputs, log_densities, noise, fit_mask, Z, inducing_mask, max_steps=options.sparse_fit_steps
        )
        fitted_posterior = sparse.condition(
            fitted.kernel, fitted.mean, inputs, log_densities, noise, Z, mask=keep, inducing_mask=inducing_mask
        )
        peaked = exceeds_ceiling(fitted_posterior, check_points, ceiling, check_mask)
        return start_posterior, conditioned_objective(start, start_posterior), fitted_posterior, peaked

    if len(starts) == 1:
        unfitted, _, posterior, peaked = candidate(starts[0])
    else:
        unfitted, posterior, peaked = _first_unpeaked(candidate, starts)
    posterior = select_tree(peaked, unfitted, posterior)
    return Refit(posterior, peaked, unfitted)


def _first_unpeaked(candidate, starts: list[Surrogate]):
    """(unfitted, fitted, peaked) of `refit_from_starts` by a `lax.while_loop` over the
    stacked starts: `candidate(start)` for each start in order while every fit so far
    peaked; `unfitted` is the unfitted start with the highest bound among those tried (ties
    within a relative 1e-6 to the earlier, `first_near_best`)."""
    stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *starts)
    placeholder = zeros_like_output(candidate, starts[0])

    def again(carry):
        index, (_, _, _, peaked) = carry
        return (index < len(starts)) & ((index == 0) | peaked)

    def next_start(carry):
        index, (unfitted, unfitted_bound, _, _) = carry
        new_unfitted, new_bound, fitted, peaked = candidate(jax.tree.map(lambda leaf: leaf[index], stacked))
        later = (index == 0) | (first_near_best(jnp.stack([unfitted_bound, new_bound])) == 1)
        kept = select_tree(later, (new_unfitted, new_bound), (unfitted, unfitted_bound))
        return index + 1, (*kept, fitted, peaked)

    _, (unfitted, _, fitted, peaked) = jax.lax.while_loop(again, next_start, (jnp.asarray(0), placeholder))
    return unfitted, fitted, peaked
