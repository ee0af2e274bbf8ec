import jax.numpy as jnp
from jaxtyping import ArrayLike, Bool, Float

from .._errors import RESULTS
from .._jit import public_jit
from .._linalg import CholeskyFactor, cholesky_append, cholesky_update, solve_triangular
from .._observations import append_observation, centred_targets, next_slot, require_free_slot
from .._select import select_tree
from .._validation import check_point, require_finite
from ._posterior import SparsePosterior, inducing_cross, noise_precision


@public_jit()
def update(
    posterior: SparsePosterior,
    x: Float[ArrayLike, " D"],
    y: Float[ArrayLike, ""],
    noise_variance: Float[ArrayLike, ""],
) -> SparsePosterior:
    """Append one observation with Z fixed (Li et al. 2023, App. C.5, case 2), in O(M²).

    With v = L⁻¹k(Z, x)/σ_x: L_S′ = chol(L_S L_Sᵀ + v vᵀ) by a rank-1 update and
    r′ = r + v (y − m(x))/σ_x. (Li et al. 2023 print v = L⁻¹k(Z, x)·σ; it must be σ⁻¹
    because R = L⁻¹K_ZX D^{−1/2}.)
    """
    observations, slot = append_observation(posterior.observations, x, y, noise_variance)
    new_input = observations.inputs[slot]
    cross = posterior.kernel.cross(posterior.inducing_inputs, new_input[None])[:, 0]
    cross = jnp.where(posterior.inducing_mask, cross, 0.0)
    noise_sd = jnp.sqrt(observations.noise_variance[slot])
    direction = solve_triangular(posterior.inducing_factor.lower, cross) / noise_sd
    inner_lower, ok = cholesky_update(posterior.inner_lower, direction)
    residual = observations.targets[slot] - posterior.mean.evaluate(new_input)
    projected_residual = posterior.projected_residual + direction * residual / noise_sd
    result = RESULTS.where(ok, posterior.result, RESULTS.update_failed)
    return SparsePosterior(
        posterior.kernel,
        posterior.mean,
        observations,
        posterior.inducing_inputs,
        posterior.inducing_mask,
        posterior.inducing_factor,
        inner_lower,
        projected_residual,
        result,
    )


@public_jit()
def add_inducing_point(
    posterior: SparsePosterior, z: Float[ArrayLike, " D"], *, where: Bool[ArrayLike, ""] = True
) -> SparsePosterior:
    """Add one inducing input `z` in the next free inducing slot (Li et al. 2023, App. C.5, case 1).

    L gains the row [ℓᵀ, c₁] with ℓ = L⁻¹k(Z, z), c₁ = √(k(z, z) − ‖ℓ‖²); the new row of
    A = L⁻¹K_ZX is α = (k(z, X) − gᵀK_ZX)/c₁ with g = L⁻ᵀℓ; S gains the column
    [A D⁻¹α, 1 + αᵀD⁻¹α] and r the entry αᵀD⁻¹ȳ. Cost O(NM) kernel evaluations plus
    O(M²), against O(NM²) for recomputation. Call `update` afterwards to also add an
    observation at z (case 1 of Li et al. 2023, App. C.5).

    With `where` False the posterior comes back unchanged and a full buffer is no error:
    the form for code that may be vmapped, where a `lax.cond` runs its untaken branch too.
    """
    inputs = posterior.observations.inputs
    z = require_finite(check_point(z, "z", inputs.shape[1]).astype(inputs.dtype), "z")
    capacity = posterior.inducing_mask.shape[0]
    where = jnp.asarray(where, bool)
    slot = require_free_slot(next_slot(posterior.inducing_mask), capacity, "inducing-point", when=where)
    slot = jnp.minimum(slot, capacity - 1)  # in range where nothing is added to a full buffer
    inducing_inputs = posterior.inducing_inputs.at[slot].set(z)
    inducing_mask = posterior.inducing_mask.at[slot].set(True)
    factor = posterior.inducing_factor

    column = jnp.where(posterior.inducing_mask, posterior.kernel.cross(posterior.inducing_inputs, z[None])[:, 0], 0.0)
    column = column.at[slot].set(posterior.kernel.evaluate(z, z) + factor.jitter)
    inducing_lower, inducing_ok = cholesky_append(factor.lower, column, slot)
    border = jnp.where(jnp.arange(capacity) < slot, inducing_lower[slot], 0.0)
    pivot = inducing_lower[slot, slot]

    observations = posterior.observations
    cross = inducing_cross(
        posterior.kernel, posterior.inducing_inputs, posterior.inducing_mask, inputs, observations.mask
    )
    new_cross = jnp.where(observations.mask, posterior.kernel.cross(z[None], inputs)[0], 0.0)
    back_projected = solve_triangular(factor.lower, border, transpose=True)
    new_row = (new_cross - back_projected @ cross) / pivot
    precision = noise_precision(observations)
    inner_column = solve_triangular(factor.lower, cross @ (precision * new_row))
    inner_column = inner_column.at[slot].set(1.0 + jnp.sum(precision * new_row**2))
    inner_lower, inner_ok = cholesky_append(posterior.inner_lower, inner_column, slot)
    new_residual = jnp.sum(precision * new_row * centred_targets(posterior.mean, observations))
    projected_residual = posterior.projected_residual.at[slot].set(new_residual)

    ok = inducing_ok & inner_ok
    result = RESULTS.where(ok, posterior.result, RESULTS.update_failed)
    added = SparsePosterior(
        posterior.kernel,
        posterior.mean,
        observations,
        inducing_inputs,
        inducing_mask,
        CholeskyFactor(inducing_lower, factor.jitter, RESULTS.where(inducing_ok, factor.result, RESULTS.update_failed)),
        inner_lower,
        projected_residual,
        result,
    )
    return select_tree(where, added, posterior)
