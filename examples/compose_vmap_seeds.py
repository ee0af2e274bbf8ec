"""A whole BVBMC run vmapped over 16 seeds in one compiled call.

Claim: a BVBMC run on a JAX-traceable log density
(`bvbmc.BVBMC.init` then `gpcompose.run_traceable`) is an ordinary JAX function of a PRNG
key, so `jax.jit(jax.vmap(...))` runs 16 independent BVBMC runs (each with its own initial
design, acquisitions and boosting draws) in one call; `gpcompose.unstack` splits the batch
into the 16 final states, and each is the run that seed gives alone from the same initial
state (`tests/test_example_compose_vmap_seeds.py` checks it seed by seed). The speed-up over 16
sequential calls is measured by `benchmarks/vmap_seeds.py`.

Target: the 2-D Lumpy density of the VBMC toy suite (a normalised mixture of 12 Gaussians,
`gpcompose.problems.Lumpy`), whose mean, covariance and log Z = 0 are exact, so every
seed is scored by the gsKL between the moment-matched Gaussians of its mixture and of the
target. Each seed draws 20 initial points x = 5|r|u (`vbmc_toy_initial_points`) and then
spends a budget of new evaluations chosen by BVBMC's acquisitions.

Run with `python examples/compose_vmap_seeds.py`. Prints the per-seed gsKL and the wall time
of the one vmapped call, and writes `examples/compose_vmap_seeds.png` (the 16 posteriors).
"""

import functools
import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import boosting, bvbmc, kernels  # noqa: E402
from gpcompose.problems import Lumpy, vbmc_toy_initial_points  # noqa: E402
from gpcompose.problems.metrics import gskl  # noqa: E402

DIMENSION = 2
NUM_INITIAL = 10 * DIMENSION  # the thesis's initial design size, 10 D
NUM_SEEDS = 16
TARGET = Lumpy(jax.random.key(0), DIMENSION)
# Reduced constants (the defaults of BVBMC and Boosting are the thesis's): a run of `budget`
# evaluations then takes seconds, and 16 of them fit the one-minute example budget.
LEARNER = bvbmc.BVBMC(
    max_components=8,
    fit_steps=100,
    initial_joint_steps=150,
    num_candidates=32,
    num_search_starts=2,
    search_steps=10,
    final_entropy_samples=4096,
    boosting=boosting.Boosting(
        relbo_steps=60,
        relbo_samples=64,
        weight_samples=128,
        joint_update_every=5,
        joint_steps=60,
        joint_samples_per_component=32,
    ),
    kernel=kernels.SquaredExponential(lengthscale=jnp.ones(DIMENSION), variance=1.0),  # closed-form embeddings
)


@functools.partial(jax.jit, static_argnames="budget")
def initial_state(key, *, budget):
    """One seed's initial design (20 points x = 5|r|u) and `LEARNER.init`."""
    design_key, init_key, _ = jax.random.split(key, 3)
    X = vbmc_toy_initial_points(design_key, NUM_INITIAL, DIMENSION)
    y = jax.vmap(TARGET.log_density)(X)
    return LEARNER.init(X, y, budget=budget, key=init_key)


@jax.jit
def continue_run(state, key):
    """The seed's `budget` evaluations from `state` by `gpcompose.run_traceable`."""
    _, _, run_key = jax.random.split(key, 3)
    return gpcompose.run_traceable(LEARNER, TARGET.log_density, state, run_key)


@functools.partial(jax.jit, static_argnames="budget")
def whole_run(key, *, budget):
    """One seed's initial state and final state (`initial_state`, then `continue_run`)."""
    state = initial_state(key, budget=budget)
    return state, continue_run(state, key)


@functools.partial(jax.jit, static_argnames="budget")
def batched_run(keys, *, budget):
    """`whole_run` over a batch of keys in one `jax.jit(jax.vmap(...))` call."""
    return jax.vmap(functools.partial(whole_run, budget=budget))(keys)


def seed_gskl(state):
    """gsKL between the moment-matched Gaussians of a run's mixture and of the target."""
    mixture = state.boosting.mixture
    return gskl(mixture.mean(), mixture.covariance(), TARGET.mean, TARGET.covariance)


def run(key, *, out_dir, smoke=False):
    """16 seeds (3 with `smoke`) in one vmapped call; writes `compose_vmap_seeds.png` in `out_dir`.

    **Returns:** dict with `keys`, the batched `initial_states` and final `states`, the
    per-seed final states (`seeds`, from `gpcompose.unstack`), per-seed `gskl` and `elbo`,
    the `budget` and the `seconds` of the vmapped call (compilation included: one call, one
    program).
    """
    num_seeds, budget = (3, 3) if smoke else (NUM_SEEDS, 20)
    keys = jax.random.split(key, num_seeds)
    start = time.perf_counter()
    initial_states, states = jax.block_until_ready(batched_run(keys, budget=budget))
    seconds = time.perf_counter() - start
    seeds = gpcompose.unstack(states)
    results = [LEARNER.result(state) for state in seeds]
    divergences = jnp.stack([seed_gskl(state) for state in seeds])
    elbos = jnp.stack([result.elbo for result in results])
    plot(results, divergences, pathlib.Path(out_dir) / "compose_vmap_seeds.png")
    return {
        "keys": keys,
        "initial_states": initial_states,
        "states": states,
        "seeds": seeds,
        "gskl": divergences,
        "elbo": elbos,
        "budget": budget,
        "seconds": seconds,
    }


def plot(results, divergences, path):
    """One panel per seed: the target's density contours and the seed's mixture density."""
    grid = jnp.linspace(-1.5, 2.5, 80)
    points = jnp.stack(jnp.meshgrid(grid, grid), axis=-1).reshape(-1, DIMENSION)
    target = jnp.exp(jax.vmap(TARGET.log_density)(points)).reshape(grid.size, grid.size)
    columns = 4
    rows = -(-len(results) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(2.6 * columns, 2.5 * rows), squeeze=False)
    for index, axis in enumerate(axes.flat):
        if index >= len(results):
            axis.set_axis_off()
            continue
        approximation = jnp.exp(jax.vmap(results[index].posterior.log_prob)(points)).reshape(grid.size, grid.size)
        axis.contourf(grid, grid, approximation, levels=12, cmap="Blues")
        axis.contour(grid, grid, target, levels=6, colors="k", linewidths=0.6)
        axis.plot(results[index].X[:, 0], results[index].X[:, 1], ".", color="C3", markersize=2)
        axis.set_xlim(grid[0], grid[-1])
        axis.set_ylim(grid[0], grid[-1])
        axis.set_title(f"seed {index}: gsKL {float(divergences[index]):.2g}", fontsize=8)
        axis.tick_params(labelsize=6)
    figure.suptitle("BVBMC on Lumpy (2-D), one jit(vmap(run)) call: mixture (blue), target (black), evaluations")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main():
    outcome = run(jax.random.key(1), out_dir=pathlib.Path(__file__).parent)
    print(f"{len(outcome['keys'])} BVBMC runs ({NUM_INITIAL} initial + {outcome['budget']} evaluations each)")
    print(f"one jit(vmap(run)) call, compilation included: {outcome['seconds']:.1f} s")
    print(f"{'seed':>4} {'gsKL':>10} {'ELBO':>8}   (log Z = {float(TARGET.log_normalizer):.0f})")
    for index, (divergence, elbo) in enumerate(zip(outcome["gskl"], outcome["elbo"])):
        print(f"{index:>4} {float(divergence):>10.2e} {float(elbo):>8.3f}")
    print(f"median gsKL {float(jnp.median(outcome['gskl'])):.2e}")
    print(f"wrote {pathlib.Path(__file__).with_suffix('.png')}")


if __name__ == "__main__":
    main()
