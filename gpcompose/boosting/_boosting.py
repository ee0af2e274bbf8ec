import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from .._observations import observed_box
from .._posterior_interface import AbstractGaussianPosterior
from ..mixtures import GaussianMixture
from ..quadrature import maximize_elbo
from ._relbo import fit_component
from ._reweight import add_and_prune
from ._weight import solve_weight, weight_problem


class BoostingState(eqx.Module):
    """The mixture q being built, the GP `surrogate` of the log density it targets (its
    posterior mean m_D plays the role of log ḡ), and the number of boosting steps so far.

    A workflow replaces `surrogate` (e.g. after a rank-1 `gp.update`) between steps with
    `eqx.tree_at(lambda s: s.surrogate, state, new_surrogate)`.
    """

    mixture: GaussianMixture
    surrogate: AbstractGaussianPosterior
    num_steps: Int[Array, ""]


class BoostingInfo(eqx.Module):
    """Diagnostics of one boosting step.

    - `relbo`: RELBO of the new component at the end of the f-step (fresh MC draws).
    - `weight`: its weight w_t from the w-step (0: the component was useless).
    - `mean`, `variance`: the new component N(μ_t, diag(σ²_t)).
    - `added`: False if the mixture had no free slot (the component was dropped).
    - `joint_update`: whether the periodic joint update of all components ran.
    - `num_components`: active components after pruning.
    """

    relbo: Float[Array, ""]
    weight: Float[Array, ""]
    mean: Float[Array, " D"]
    variance: Float[Array, " D"]
    added: Bool[Array, ""]
    joint_update: Bool[Array, ""]
    num_components: Int[Array, ""]


def _as_array(value):
    return jnp.asarray(value)


class Boosting(eqx.Module):
    """Boosted variational inference with Bayesian Monte Carlo (BVBMC; Naiff 2019,
    thesis ch. 6, Alg. 3 lines 11–15): each `step` adds one diagonal Gaussian component
    to a mixture q of a GP model f of the log density log ḡ.

    1. **f-step**: N(μ_t, Σ_t) = argmax RELBO^{δ_D}_D (`relbo`): BMC term in closed form,
       cross-entropy with the stabiliser δ_D by reparameterised MC, regulariser λ/4 log|Σ|;
       Adam from a draw of q.
    2. **w-step**: w_t = argmax_{w∈[0,1]} 𝓛(w), the concave ELBO of (1 − w) q + w f,
       by bisection on 𝓛′(w) (`WeightProblem`).
    3. **Re-weighting and pruning**: w_j ← (1 − w_t) w_j, drop w_j < β, renormalise.
    4. **Joint update**, every `joint_update_every` steps: Adam on the surrogate ELBO over
       all means, scales and weights (`quadrature.maximize_elbo`), then pruning again.

    **Fields** (defaults from the thesis and its reference code; [ours] where they give
    none):

    - `regularization` λ = 1: the code resamples λ ~ U(0, 1) at every Adam step of its
      λ H[f] = (λ/2) log|Σ| + c; its mean, 1/4 log|Σ|, is λ = 1 here, and Adam sees the
      same expected gradient.
    - `log_stabilizer` log δ_D = −20 (thesis default δ_D = e^{−20}).
    - `prune_threshold` β = 1e-3.
    - `relbo_steps` 300, `relbo_samples` 500 (code); `relbo_learning_rate` 0.05 [ours:
      μ moves in units of the starting scale, so the rate is scale-free].
    - `weight_samples` 300 (code), bisection tolerance `weight_tolerance` 1e-8.
    - `joint_update_every` 20 (0: never), `joint_steps` 300, `joint_samples_per_component`
      250 (code); `joint_learning_rate` 0.05 [ours, cosine-decayed, means in units of the
      mixture's standard deviations].
    - `bounded` True [ours, VBMC's practice]: the f-step and the joint update keep every
      component in the box of the GP's training inputs (means inside, standard deviations
      at most its width; `AbstractGaussianMixture.clip_to_box`, PyVBMC's bounds). With the
      constant prior mean of §6.1.2, exp m_D is not integrable (the thesis's own caveat):
      far from the data m_D is flat, so a wider component gains entropy (λ/4 log|Σ| in the
      RELBO, H[q] in the ELBO) at no cost and both objectives are unbounded above. The
      thesis's Robbins–Monro w-step from w = 1e-12 rarely takes such a component; the
      exact w-step does (w = 1), and the mixture then runs away: on heavy-tailed targets
      such as a Student-t, its scales and means grow without limit within a few steps.
      False: the thesis's unbounded steps.

    !!! Example
        ```python
        surrogate = gpcompose.gp.condition(kernel, mean, X, log_density_values, 1e-4)
        q0 = gpcompose.mixtures.GaussianMixture.from_moments(
            jnp.ones(20), jnp.zeros((20, D)), jnp.full((20, D), 4.0), mask=jnp.arange(20) < 1
        )
        algorithm = gpcompose.boosting.Boosting()
        state = algorithm.init(surrogate, q0)
        state, infos = gpcompose.run(algorithm, state, key, 30)
        # or by hand, e.g. appending an evaluation between steps
        step = eqx.filter_jit(algorithm.step)
        for step_key in jax.random.split(key, 30):
            state, info = step(state, step_key)
        ```
    """

    regularization: Float[Array, ""] = eqx.field(converter=_as_array, default=1.0)
    log_stabilizer: Float[Array, ""] = eqx.field(converter=_as_array, default=-20.0)
    prune_threshold: Float[Array, ""] = eqx.field(converter=_as_array, default=1e-3)
    relbo_learning_rate: Float[Array, ""] = eqx.field(converter=_as_array, default=0.05)
    joint_learning_rate: Float[Array, ""] = eqx.field(converter=_as_array, default=0.05)
    relbo_steps: int = eqx.field(static=True, default=300)
    relbo_samples: int = eqx.field(static=True, default=500)
    weight_samples: int = eqx.field(static=True, default=300)
    weight_tolerance: float = eqx.field(static=True, default=1e-8)
    joint_update_every: int = eqx.field(static=True, default=20)
    joint_steps: int = eqx.field(static=True, default=300)
    joint_samples_per_component: int = eqx.field(static=True, default=250)
    bounded: bool = eqx.field(static=True, default=True)

    def __check_init__(self):
        counts = ("relbo_steps", "relbo_samples", "weight_samples", "joint_steps", "joint_samples_per_component")
        for name in counts:
            if getattr(self, name) < 1:
                raise ValueError(f"`{name}` must be a positive int, got {getattr(self, name)!r}.")
        if self.joint_update_every < 0:
            raise ValueError(f"`joint_update_every` must be ≥ 0 (0: never), got {self.joint_update_every}.")

    def init(self, surrogate: AbstractGaussianPosterior, mixture: GaussianMixture) -> BoostingState:
        """The state at the initial mixture q₀ (with free slots for the components to
        come) against the GP `surrogate` of the log density."""
        if not isinstance(surrogate, AbstractGaussianPosterior):
            raise ValueError(
                f"`surrogate` must be a Gaussian posterior (exact or sparse GP), got {type(surrogate).__name__}."
            )
        if not isinstance(mixture, GaussianMixture):
            raise ValueError(f"`mixture` must be a GaussianMixture, got {type(mixture).__name__}.")
        dimension = surrogate.observations.inputs.shape[1]
        if mixture.dimension != dimension:
            raise ValueError(f"`mixture` has dimension {mixture.dimension} but `surrogate` has {dimension}.")
        return BoostingState(mixture, surrogate, jnp.zeros((), jnp.int32))

    def bounds(self, surrogate: AbstractGaussianPosterior):
        """The box of the GP's training inputs that the components keep to (None if not `bounded`)."""
        return observed_box(surrogate.observations) if self.bounded else None

    def joint_update(self, state: BoostingState, key: PRNGKeyArray) -> BoostingState:
        """Adam on the surrogate ELBO over every component, then pruning below β."""
        mixture = state.mixture
        width = jnp.sqrt(jnp.diag(mixture.covariance()))
        mixture = maximize_elbo(
            state.surrogate,
            mixture,
            key,
            width=width,
            num_steps=self.joint_steps,
            learning_rate=self.joint_learning_rate,
            num_entropy_samples=self.joint_samples_per_component * mixture.num_components,
            bounds=self.bounds(state.surrogate),
        )
        return eqx.tree_at(lambda s: s.mixture, state, mixture.prune(self.prune_threshold))

    def step(self, state: BoostingState, key: PRNGKeyArray) -> tuple[BoostingState, BoostingInfo]:
        """One boosting iteration (f-step, w-step, re-weighting, pruning, and the joint
        update when the new step count is a multiple of `joint_update_every`)."""
        component_key, weight_key, joint_key = jax.random.split(key, 3)
        mixture, surrogate = state.mixture, state.surrogate
        mean, log_scale, relbo_value = fit_component(
            surrogate,
            mixture,
            component_key,
            regularization=self.regularization,
            log_stabilizer=self.log_stabilizer,
            num_steps=self.relbo_steps,
            learning_rate=self.relbo_learning_rate,
            num_samples=self.relbo_samples,
            bounds=self.bounds(surrogate),
        )
        problem = weight_problem(surrogate, mixture, mean, log_scale, weight_key, self.weight_samples)
        weight = solve_weight(problem, self.weight_tolerance)
        mixture, added = add_and_prune(mixture, weight, mean, log_scale, self.prune_threshold)
        num_steps = state.num_steps + 1
        state = BoostingState(mixture, surrogate, num_steps)
        if self.joint_update_every > 0:
            joint = num_steps % self.joint_update_every == 0
            state = jax.lax.cond(joint, lambda s: self.joint_update(s, joint_key), lambda s: s, state)
        else:
            joint = jnp.asarray(False)
        info = BoostingInfo(
            relbo_value,
            weight,
            mean,
            jnp.exp(2.0 * log_scale),
            added,
            joint,
            jnp.sum(state.mixture.mask.astype(jnp.int32)),
        )
        return state, info
