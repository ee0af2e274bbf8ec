from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float, PRNGKeyArray

from ..svgd import RBF, SVGD, AbstractParticleKernel, SVGDInfo, SVGDState
from ._model import AbstractSteinGPModel
from ._result import SteinGPResult
from ._sparse import SparseWhitenedModel

# One object for every default `SteinGP`: a jitted call hashes the optimizer's functions by
# identity, so a fresh `optax.adam` per learner would compile the run again.
DEFAULT_OPTIMIZER = optax.adam(0.05)


class SteinGP(eqx.Module):
    """Stein variational GP inference (Pinder, Nemeth & Leslie 2020, Alg. 1) as an
    init/step algorithm: SVGD (`gpcompose.svgd.SVGD`) on the particles of a SteinGP model.

    Each step computes the scores ∇ log p(λ_j) of all particles (on a fresh minibatch of
    `batch_size` points, drawn uniformly with replacement from the step's key, when
    `batch_size` is set — sparse model only) and moves the particles along the SVGD
    direction through `optimizer`.

    **Fields:**

    - `model`: a `ConjugateModel`, `WhitenedModel` or `SparseWhitenedModel` (see `make_model`).
    - `kernel`: the particle kernel; default `RBF()` with the median heuristic.
    - `optimizer`: an optax transformation fed with −φ; default `optax.adam(0.05)` (the
      learning rate of Pinder, Nemeth & Leslie 2020, §5.1).
    - `batch_size`: minibatch size for the sparse model, or None for full-data scores.
    - `initialization`: how `init` draws the particles' hyperparameters (latents always
      start from their N(0, I) prior). `"prior"` (default; Pinder, Nemeth & Leslie 2020, App. 12):
      each constrained hyperparameter θ from its prior, or from U[0, 1) above its
      lower bound when it has none, stored as u = T⁻¹(θ) (`gpcompose.parameters.sample_unconstrained`).
      `"around_initial"`: u = u₀ + `initial_scale` · N(0, I) around the model's initial
      unconstrained hyperparameters u₀.
    - `initial_scale`: the standard deviation of `"around_initial"` (unused with `"prior"`).

    !!! Example
        ```python
        model = gpcompose.steingp.make_model(X, y, kernel=kernel, likelihood=likelihood)
        algorithm = gpcompose.steingp.SteinGP(model)
        state = algorithm.init(20, key=key)
        state, info = gpcompose.run(algorithm, state, key, 1000)
        # or by hand: step = eqx.filter_jit(algorithm.step), then state, info = step(state, key)
        result = algorithm.result(state, info)
        mean, variance = result.predict(X_new)
        ```
    """

    model: AbstractSteinGPModel
    kernel: AbstractParticleKernel = eqx.field(default_factory=RBF)
    optimizer: optax.GradientTransformation = eqx.field(default_factory=lambda: DEFAULT_OPTIMIZER)
    batch_size: int | None = eqx.field(static=True, default=None)
    initialization: Literal["prior", "around_initial"] = eqx.field(static=True, default="prior")
    initial_scale: Float[Array, ""] = eqx.field(converter=jnp.asarray, default=1.0)

    def __check_init__(self):
        if self.initialization not in ("prior", "around_initial"):
            raise ValueError(f"`initialization` must be 'prior' or 'around_initial', got {self.initialization!r}.")
        if self.batch_size is None:
            return
        if not isinstance(self.model, SparseWhitenedModel):
            raise ValueError(
                "`batch_size` needs the sparse model (pass `inducing_points`): with exact models every "
                "latent value depends on all the data."
            )
        if not isinstance(self.batch_size, int) or not 1 <= self.batch_size <= self.model.num_data:
            raise ValueError(
                f"`batch_size` must be an int between 1 and the number of data points "
                f"({self.model.num_data}), got {self.batch_size!r}."
            )

    @property
    def svgd(self) -> SVGD:
        """The underlying `gpcompose.svgd.SVGD` on the model's log density, with this algorithm's
        particle kernel and optimiser (`init`/`step` delegate to it)."""
        return SVGD(self.model.log_density, kernel=self.kernel, optimizer=self.optimizer)

    def init(self, num_particles: int, *, key: PRNGKeyArray) -> SVGDState:
        """The SVGD state of `num_particles` initial particles drawn with `key`."""
        if not isinstance(num_particles, int) or num_particles < 1:
            raise ValueError(f"`num_particles` must be a positive int, got {num_particles!r}.")
        scale = self.initial_scale.astype(self.model.X.dtype) if self.initialization == "around_initial" else None
        keys = jax.random.split(key, num_particles)
        particles = jax.vmap(lambda particle_key: self.model.initial_particle(particle_key, scale))(keys)
        return self.svgd.init(particles)

    def step(self, state: SVGDState, key: PRNGKeyArray) -> tuple[SVGDState, SVGDInfo]:
        """One SVGD step on all particles (on a minibatch drawn from `key` if `batch_size` is set)."""
        if self.batch_size is None:
            return self.svgd.step(state, key)
        batch_indices = jax.random.randint(key, (self.batch_size,), 0, self.model.num_data)
        return self.svgd.step(state, key, batch_indices)

    def result(self, state: SVGDState, info: SVGDInfo | None = None) -> SteinGPResult:
        """The particles of `state` with their predictive; `info` as returned by `gpcompose.run`
        (optional)."""
        return SteinGPResult(self.model, state.particles, info)
