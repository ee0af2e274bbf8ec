"""A hand-written loop that mixes two algorithms: SVGD over kernel hyperparameters, with CAVI
updates of each particle's own latent posterior.

Claim: the steps of gpcompose's algorithms and their
parts compose inside a user's own loop. Here J particles θ_j (the unconstrained
log-lengthscale and log-variance of an SE kernel) each carry a CAVI state of a GP logistic
classifier (`gpcompose.aaci.CAVI`, augmented conjugate inference, Galy-Fajou, Wenzel & Opper 2020, Alg. 1). One
iteration of the loop

1. runs one CAVI step in every particle (`jax.vmap(cavi.step)`): q_j(f) ← the closed-form
   optimum of the augmented ELBO L_aug(q, θ_j) given the Pólya–Gamma expectations ω̄ of q_j;
2. computes every particle's score s_j = ∇_θ [L_aug(q_j, θ) + log p(θ)] at θ_j with q_j held
   fixed (`gpcompose.aaci.augmented_elbo`, `gpcompose.parameters.log_prior`);
3. moves the particles along the SVGD direction φ(θ_i) = (1/J) Σ_j [κ(θ_j, θ_i) s_j + ∇_{θ_j}
   κ(θ_j, θ_i)] (Liu & Wang 2016; `gpcompose.svgd.stein_variational_direction` with the
   median-heuristic `gpcompose.svgd.RBF` kernel) with an optax optimiser.

`SVGD.step` takes one log density for all particles, while here the score of particle j
depends on its own q_j, so the loop composes the SVGD direction and the RBF kernel (the parts
`SVGD.step` is made of) with the per-particle scores itself. The particles approximate
p(θ | y) ∝ exp(max_q L_aug(q, θ)) p(θ); with one particle the direction is the score
(κ(θ, θ) = 1, no repulsion) and the loop is CAVI with a gradient step on the
hyperparameters, which `tests/test_example_compose_svgd_cavi.py` checks against
`CAVI(..., optimizer=optax.sgd(ε))` (Alg. 1 with its optional hyperparameter step).

Run with `python examples/compose_svgd_cavi.py`. Writes `examples/compose_svgd_cavi.png`
(particles over the ELBO landscape, each particle's ELBO per iteration, class probabilities).
"""

import pathlib

import equinox as eqx
import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import optax  # noqa: E402
from jaxtyping import Array, Float  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import aaci, kernels, likelihoods, priors, svgd  # noqa: E402
from gpcompose.parameters import Positive, flatten, log_prior, with_prior_draws  # noqa: E402

# exp-transformed parameters: the particles' coordinates are log ℓ and log σ², prior N(0, 1) on each.
PRIOR_KERNEL = kernels.SquaredExponential(
    lengthscale=Positive(1.0, transform="exp", prior=priors.LogNormal(0.0, 1.0)),
    variance=Positive(1.0, transform="exp", prior=priors.LogNormal(0.0, 1.0)),
)
CAVI = aaci.CAVI(PRIOR_KERNEL, likelihoods.Logistic())
PARTICLE_KERNEL = svgd.RBF()
_, KERNEL_OF = flatten(PRIOR_KERNEL)  # unconstrained coordinates θ (log ℓ, log σ²) ↦ kernel


def true_probability(X):
    return jax.nn.sigmoid(4.0 * jnp.sin(1.5 * X[:, 0]))


def make_data(key, num_points):
    """X uniform on [−3, 3] (sorted), y ∈ {−1, 1} with P(y = 1) = σ(4 sin 1.5x)."""
    input_key, label_key = jax.random.split(key)
    X = jnp.sort(jax.random.uniform(input_key, (num_points, 1), minval=-3.0, maxval=3.0), axis=0)
    y = jnp.where(jax.random.uniform(label_key, (num_points,)) < true_probability(X), 1.0, -1.0)
    return X, y


def particle_of(state: aaci.AACIState) -> Float[Array, " P"]:
    """θ: the unconstrained kernel hyperparameters of one particle's CAVI state."""
    return flatten(state.kernel)[0]


def with_particle(state: aaci.AACIState, particle: Float[Array, " P"]) -> aaci.AACIState:
    return eqx.tree_at(lambda s: s.kernel, state, KERNEL_OF(particle))


def log_joint(particle, state, X, y) -> Float[Array, ""]:
    """L_aug(q, θ) + log p(θ) at the particle θ with the state's q(f) held fixed (whitened, so
    q(f) moves with θ as in AACI's hyperparameter step)."""
    state = with_particle(state, particle)
    return aaci.augmented_elbo(state, X, y) + log_prior(state.kernel)


class MixedState(eqx.Module):
    """J CAVI states (a leading particle axis on every leaf; each holds its particle's kernel)
    and the optax state of the particles θ (J, P)."""

    cavi: aaci.AACIState
    optimizer_state: optax.OptState


class MixedInfo(eqx.Module):
    """Per iteration: every particle's augmented ELBO after its CAVI step (J,), and KSD²."""

    elbo: Float[Array, " J"]
    squared_kernel_stein_discrepancy: Float[Array, ""]


def init(key, X, num_particles, optimizer) -> MixedState:
    """J particles drawn from the prior p(θ), each with q(f) = p(f)."""
    kernels_drawn = jax.vmap(lambda particle_key: with_prior_draws(PRIOR_KERNEL, particle_key))(
        jax.random.split(key, num_particles)
    )
    states = jax.vmap(lambda kernel: eqx.tree_at(lambda s: s.kernel, CAVI.init(X), kernel))(kernels_drawn)
    return MixedState(states, optimizer.init(jax.vmap(particle_of)(states)))


def mixed_step(state: MixedState, key, X, y, optimizer) -> tuple[MixedState, MixedInfo]:
    """One CAVI step in every particle, then one SVGD step of the particles (module docstring)."""
    particle_keys = jax.random.split(key, state.cavi.num_steps.shape[0])
    cavi_states, cavi_infos = jax.vmap(CAVI.step, in_axes=(0, 0, None, None))(state.cavi, particle_keys, X, y)
    particles = jax.vmap(particle_of)(cavi_states)
    scores = jax.vmap(jax.grad(log_joint), in_axes=(0, 0, None, None))(particles, cavi_states, X, y)
    bandwidth = PARTICLE_KERNEL.bandwidth(particles)
    direction, squared_discrepancy = svgd.stein_variational_direction(particles, scores, PARTICLE_KERNEL, bandwidth)
    with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 step counts and floats
        updates, optimizer_state = optimizer.update(-direction, state.optimizer_state, particles)
    particles = optax.apply_updates(particles, updates)
    cavi_states = jax.vmap(with_particle)(cavi_states, particles)
    return MixedState(cavi_states, optimizer_state), MixedInfo(cavi_infos.elbo, squared_discrepancy)


def run_loop(state: MixedState, key, X, y, num_steps: int, optimizer) -> tuple[MixedState, MixedInfo]:
    """`num_steps` of the jitted `mixed_step` in a hand-written Python loop; the infos are stacked.

    (A `lax.scan` of the same step gives the same numbers; on a 2-core CPU it compiled and ran
    several times slower than this loop of one jitted step.)"""
    step = eqx.filter_jit(mixed_step)
    infos = []
    for step_key in jax.random.split(key, num_steps):
        state, info = step(state, step_key, X, y, optimizer)
        infos.append(info)
    return state, jax.tree.map(lambda *leaves: jnp.stack(leaves), *infos)


def run(key, *, out_dir, smoke=False):
    """SVGD × CAVI on a 1-D logistic problem; writes `compose_svgd_cavi.png` in `out_dir`.

    **Returns:** dict with the data, the initial and final `MixedState`, the stacked `MixedInfo`
    and the `optimizer`.
    """
    num_points, num_particles, num_steps = (20, 3, 20) if smoke else (60, 10, 300)
    data_key, init_key, loop_key = jax.random.split(key, 3)
    X, y = make_data(data_key, num_points)
    optimizer = optax.sgd(0.5 / num_points)
    initial = init(init_key, X, num_particles, optimizer)
    final, infos = run_loop(initial, loop_key, X, y, num_steps, optimizer)
    outcome = {"X": X, "y": y, "initial": initial, "final": final, "infos": infos, "optimizer": optimizer}
    plot(outcome, pathlib.Path(out_dir) / "compose_svgd_cavi.png")
    return outcome


def plot(outcome, path):
    X, y, final, infos = outcome["X"], outcome["y"], outcome["final"], outcome["infos"]
    start = jax.vmap(particle_of)(outcome["initial"].cavi)
    particles = jax.vmap(particle_of)(final.cavi)
    figure, (particle_axis, elbo_axis, probability_axis) = plt.subplots(1, 3, figsize=(14, 3.9))
    reference = jax.tree.map(lambda leaf: leaf[0], final.cavi)
    low, high = jnp.minimum(start, particles).min(axis=0) - 0.5, jnp.maximum(start, particles).max(axis=0) + 0.5
    grid = jnp.stack(jnp.meshgrid(jnp.linspace(low[0], high[0], 40), jnp.linspace(low[1], high[1], 40)), axis=-1)
    surface = jax.vmap(jax.vmap(lambda particle: log_joint(particle, reference, X, y)))(grid)
    contour = particle_axis.contourf(grid[..., 0], grid[..., 1], surface, levels=20, cmap="viridis")
    figure.colorbar(contour, ax=particle_axis, label="L_aug + log p(θ) at particle 0's q")
    particle_axis.plot(start[:, 0], start[:, 1], "o", mfc="none", color="w", label="initial (prior draws)")
    particle_axis.plot(particles[:, 0], particles[:, 1], "o", color="C3", label="final particles")
    particle_axis.set_xlabel("log lengthscale")
    particle_axis.set_ylabel("log variance")
    particle_axis.legend(fontsize=7)
    elbo_axis.plot(infos.elbo, linewidth=0.8)
    elbo_axis.set_xlabel("iteration")
    elbo_axis.set_ylabel("augmented ELBO of each particle")
    grid_x = jnp.linspace(-3.5, 3.5, 200)[:, None]
    probabilities = jax.vmap(lambda state: aaci.class_probability(state, grid_x))(final.cavi)
    probability_axis.plot(grid_x[:, 0], probabilities.T, color="C0", alpha=0.3, linewidth=0.8)
    probability_axis.plot(grid_x[:, 0], probabilities.mean(axis=0), color="C0", label="particle average")
    probability_axis.plot(grid_x[:, 0], true_probability(grid_x), "k--", linewidth=1, label="true P(y = 1)")
    probability_axis.plot(X[:, 0], (y + 1) / 2, "|", color="C3", label="labels")
    probability_axis.set_xlabel("x")
    probability_axis.legend(fontsize=7)
    figure.suptitle("SVGD over (log ℓ, log σ²) with a CAVI posterior q(f) inside each particle")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main():
    outcome = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    infos = outcome["infos"]
    particles = jax.vmap(particle_of)(outcome["final"].cavi)
    print(f"{particles.shape[0]} particles, {infos.elbo.shape[0]} iterations of (CAVI step per particle, SVGD step)")
    print(f"augmented ELBO per particle, first iteration: {jnp.round(infos.elbo[0], 2)}")
    print(f"augmented ELBO per particle, last iteration:  {jnp.round(infos.elbo[-1], 2)}")
    print(f"final particles (log ℓ, log σ²):\n{jnp.round(particles, 3)}")
    print(f"KSD² first {float(infos.squared_kernel_stein_discrepancy[0]):.3g}, "
          f"last {float(infos.squared_kernel_stein_discrepancy[-1]):.3g}")  # fmt: skip
    print(f"wrote {pathlib.Path(__file__).with_suffix('.png')}")


if __name__ == "__main__":
    main()
