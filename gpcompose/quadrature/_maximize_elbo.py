"""Stochastic-gradient maximisation of the surrogate ELBO over every parameter of a
Gaussian mixture, shared by the SVBMC retraining and the BVBMC joint update."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, PRNGKeyArray

from .._finite import all_finite, finite_optimiser_step
from .._select import select_tree
from ..gp import ExactPosterior
from ..mixtures import AbstractGaussianMixture
from ..sparse import SparsePosterior
from ._elbo import elbo


def cosine_schedule(learning_rate: float, num_steps: int, final_fraction: float = 0.1):
    """η_t = η (f + (1 − f)(1 + cos(π t/T))/2), cast explicitly (strict dtype promotion)."""

    def schedule(count):
        progress = jnp.minimum(count.astype(jnp.result_type(float)) / max(num_steps, 1), 1.0)
        return learning_rate * (final_fraction + (1 - final_fraction) * 0.5 * (1 + jnp.cos(jnp.pi * progress)))

    return schedule


def maximize_elbo(
    posterior: ExactPosterior | SparsePosterior,
    mixture: AbstractGaussianMixture,
    key: PRNGKeyArray,
    *,
    width: Float[Array, " D"],
    num_steps: int,
    learning_rate: float,
    num_entropy_samples: int,
    bounds: tuple[Float[Array, " D"], Float[Array, " D"]] | None = None,
) -> AbstractGaussianMixture:
    """Stochastic gradient ascent (Adam, cosine-decayed step) on the surrogate ELBO
    E_f[∫ q f] + H[q] (Bayesian quadrature + reparameterised entropy, fresh samples at
    each step; Li, Clarté & Acerbi 2023, §3.3; Naiff 2019, thesis §6.1.1.6 "joint update").

    Every inexact array of `mixture` is optimised (weights as logits, scales on the log
    scale); its `means` field is optimised in units of `width`, so that one learning rate
    fits any scale. Non-finite gradients are zeroed, and if the final mixture is not
    finite the input mixture is returned (the reference code's revert to a backup).

    `bounds = (lower, upper)` keeps every component in that box: its means in [lower, upper]
    and its standard deviations at most upper − lower per coordinate
    (`AbstractGaussianMixture.clip_to_box`), imposed at the start and after every step
    (projected gradient ascent). VBMC bounds its variational parameters by the box of the
    training inputs in the same way (PyVBMC `VariationalPosterior.get_bounds`), so that no
    component sits or spreads where the surrogate has no data and only extrapolates.
    """
    if not isinstance(mixture, AbstractGaussianMixture) or not hasattr(mixture, "means"):
        raise ValueError(f"`mixture` must be a Gaussian mixture with a `means` field, got {type(mixture).__name__}.")

    def to_units(current):
        return eqx.tree_at(lambda m: m.means, current, current.means / width[None, :])

    parameters, static = eqx.partition(to_units(mixture), eqx.is_inexact_array)

    def build(parameters):
        current = eqx.combine(parameters, static)
        return eqx.tree_at(lambda m: m.means, current, current.means * width[None, :])

    def project(parameters):
        if bounds is None:
            return parameters
        return eqx.partition(to_units(build(parameters).clip_to_box(*bounds)), eqx.is_inexact_array)[0]

    parameters = project(parameters)

    def loss(parameters, step_key):
        return -elbo(posterior, build(parameters), step_key, num_entropy_samples)[0]

    optimiser = optax.adam(cosine_schedule(learning_rate, num_steps))

    def step(carry, step_key):
        parameters, optimiser_state = carry
        gradient = jax.grad(loss)(parameters, step_key)
        parameters, optimiser_state = finite_optimiser_step(optimiser, gradient, optimiser_state, parameters)
        return (project(parameters), optimiser_state), None

    keys = jax.random.split(key, num_steps)
    (final, _), _ = jax.lax.scan(step, (parameters, optimiser.init(parameters)), keys)
    final = select_tree(all_finite(final), final, parameters)
    return build(final)
