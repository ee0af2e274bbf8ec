from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray, PyTree

from .._finite import all_finite
from .._select import select_tree
from .._validation import raise_if
from ._direction import stein_variational_direction
from ._kernels import RBF, AbstractParticleKernel


def check_particles(particles: PyTree[Array], name: str) -> None:
    """Raise a `ValueError` unless every leaf of `particles` has the same leading particle axis."""
    leaves = jax.tree.leaves(particles)
    if not leaves:
        raise ValueError(f"`{name}` must contain at least one array, got {particles!r}.")
    if any(jnp.ndim(leaf) == 0 for leaf in leaves) or len({jnp.shape(leaf)[0] for leaf in leaves}) != 1:
        shapes = jax.tree.map(jnp.shape, particles)
        raise ValueError(f"Every leaf of `{name}` must have the same leading particle axis, got shapes {shapes}.")


# One object for every default `SVGD`: a jitted call hashes the optimizer's functions by
# identity, so a fresh `optax.sgd` per instance would compile the steps again.
DEFAULT_OPTIMIZER = optax.sgd(1e-2)


class SVGDState(eqx.Module):
    """The particles (leading axis J on every leaf), the optimizer state and the number of
    `step` calls so far, skipped steps included."""

    particles: PyTree[Array]
    optimizer_state: optax.OptState
    num_steps: Int[Array, ""]


class SVGDInfo(eqx.Module):
    """Diagnostics of one SVGD step, evaluated at the particles *before* the step.

    - `squared_kernel_stein_discrepancy`: the V-statistic KSD² (see
      `stein_variational_direction`). It is NaN when `finite` is False.
    - `bandwidth`: the particle kernel's bandwidth (for `RBF`, the lengthscale ℓ).
    - `finite`: False if a score or the direction was NaN or infinite. The step was then
      skipped: the particles and the optimizer state are unchanged.
    """

    squared_kernel_stein_discrepancy: Float[Array, ""]
    bandwidth: PyTree[Array]
    finite: Bool[Array, ""]


class SVGD(eqx.Module):
    """Stein variational gradient descent (Liu & Wang 2016), as used by SteinGP
    (Pinder, Nemeth & Leslie 2020, Alg. 1 and eq. 12).

    The target is `log_density(particle, *args)`. A particle is any pytree of arrays, and
    the particles are the same pytree with a leading axis J on every leaf. At every step each
    particle is raveled to a vector λ_i ∈ R^P, and the scores s_i = ∇ log p(λ_i) come from
    `jax.grad`. Then the direction

        φ(λ_i) = (1/J) Σ_j [κ(λ_j, λ_i) s_j + ∇_{λ_j} κ(λ_j, λ_i)]

    is computed (`stein_variational_direction`; the repulsion is differentiated with
    respect to the summed particle, which corrects the sign of SteinGP's eq. 5). −φ is
    passed to `optimizer` as the gradient, so the particles ascend. `optax.sgd(ε)` gives the
    plain update λ_i ← λ_i + ε φ(λ_i) of Liu & Wang's Algorithm 1. With one particle, φ is
    the score and SVGD is gradient ascent to the MAP.

    **Minibatches.** Extra arguments of `step` go to `log_density`, so a minibatch B of N
    data points can be passed at each step. The score is then an estimate. It is unbiased
    when B is drawn uniformly and `log_density` scales the batch term by N/|B|
    (Pinder, Nemeth & Leslie 2020, eq. 10):

        log p̂(λ) = log p₀(λ) + (N/|B|) Σ_{n∈B} log p(y_n | λ).

    `gpcompose.run` passes the same arguments at every step. For a new batch at each step,
    write the loop by hand and draw the batch with the step's key.

    **Fields:**

    - `log_density`: `(particle, *args) -> scalar`, the unnormalised log target.
    - `kernel`: the particle kernel. The default is `RBF()`, whose bandwidth comes from the median heuristic.
    - `optimizer`: any optax transformation. The default is `optax.sgd(1e-2)`.

    !!! Example
        ```python
        svgd = gpcompose.svgd.SVGD(lambda x: -0.5 * jnp.sum(x**2), optimizer=optax.adam(0.1))
        state = svgd.init(jax.random.normal(key, (50, 2)))
        state, info = gpcompose.run(svgd, state, key, 500)
        # or by hand
        step = jax.jit(svgd.step)
        for step_key in jax.random.split(key, 500):
            state, info = step(state, step_key)
        ```
    """

    log_density: Callable[..., Float[Array, ""]]
    kernel: AbstractParticleKernel = eqx.field(default_factory=RBF)
    optimizer: optax.GradientTransformation = eqx.field(default_factory=lambda: DEFAULT_OPTIMIZER)

    def init(self, particles: PyTree[Array]) -> SVGDState:
        """The state at `particles` (a leading axis J on every leaf), which must be finite (a
        `ValueError`, or `eqx.error_if` under `jit`)."""
        check_particles(particles, "particles")
        particles = raise_if(particles, ~all_finite(particles), "`particles` contains NaN or infinite values.")
        return SVGDState(particles, self.optimizer.init(particles), jnp.zeros((), dtype=jnp.int32))

    def step(self, state: SVGDState, key: PRNGKeyArray, *args: Any) -> tuple[SVGDState, SVGDInfo]:
        """One SVGD update of all particles at once.

        `key` is not used, because the update is deterministic given the scores. It is taken so
        that every algorithm has the same step signature. `args` go to `log_density`.

        If a score or the direction is not finite, the step is skipped. The particles and the
        optimizer state stay as they were, and `info.finite` is False.
        """
        del key
        check_particles(state.particles, "state.particles")
        first_particle = jax.tree.map(lambda leaf: leaf[0], state.particles)
        _, unravel = ravel_pytree(first_particle)
        flat_particles = jax.vmap(lambda particle: ravel_pytree(particle)[0])(state.particles)

        def flat_log_density(vector):
            return self.log_density(unravel(vector), *args)

        scores = jax.vmap(jax.grad(flat_log_density))(flat_particles)
        scores_finite = jnp.all(jnp.isfinite(scores))
        safe_scores = jnp.where(scores_finite, scores, 0.0)
        bandwidth = self.kernel.bandwidth(flat_particles)
        direction, squared_discrepancy = stein_variational_direction(
            flat_particles, safe_scores, self.kernel, bandwidth
        )
        finite = scores_finite & jnp.all(jnp.isfinite(direction))
        safe_direction = jnp.where(finite, direction, 0.0)

        negative_direction = jax.vmap(unravel)(-safe_direction)
        with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 step counts and floats
            updates, optimizer_state = self.optimizer.update(negative_direction, state.optimizer_state, state.particles)
            particles = optax.apply_updates(state.particles, updates)

        new_state = SVGDState(
            select_tree(finite, particles, state.particles),
            select_tree(finite, optimizer_state, state.optimizer_state),
            state.num_steps + 1,
        )
        nan = jnp.asarray(jnp.nan, dtype=squared_discrepancy.dtype)
        info = SVGDInfo(jnp.where(finite, squared_discrepancy, nan), bandwidth, finite)
        return new_state, info
