"""BVBMC on the 1-D mixture of thesis §7.1: f(x) = Σ_{i=1}^{12} (1/12) N(x; μ_i, 1), μ_i ~ N(0, 5²)
(the code's 5·randn; drawn here with `jax.random.key(100)`, so the true moments differ from the
thesis's torch-seeded −1.6585 / 25.0316 and are computed exactly).

- **passive**: 51 evaluations on a uniform grid over [−20, 20], then 50 boosting steps with no new
  evaluations (`BVBMC.init` with budget 0 fits the GP and q₀; `boosting.Boosting.step` by hand),
  joint update every 10 steps.
- **active**: 5 initial points ±10|N(0, 1)| (the code's `sampling1(scale=10)`), then 50 iterations of
  `bvbmc.fit` (PROP/MMLT at random, v_reg = 1e-3 as in the code), joint update every 10.

Metrics per iteration, as the thesis's Figs. 7.2–7.4: log10 |μ − μ₀| and log10 |σ² − σ₀²|/σ₀² of the
mixture against the exact target moments. The thesis tabulates no final numbers.

Usage:
    python benchmarks/bvbmc_mixture_1d.py
    python benchmarks/bvbmc_mixture_1d.py --quick
Writes `<output-dir>/bvbmc_mixture_1d.json` and `.png` (`_quick` with `--quick`).
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import add_output_dir_and_quick, agg_pyplot, save_figure, utc_timestamp, write_json  # noqa: E402

from gpcompose import boosting, bvbmc, mixtures  # noqa: E402

plt = agg_pyplot()

TARGET = mixtures.GaussianMixture.from_moments(
    jnp.full((12,), 1 / 12), 5.0 * jax.random.normal(jax.random.key(100), (12, 1)), jnp.ones((12, 1))
)
TRUE_MEAN = float(TARGET.mean()[0])
TRUE_VARIANCE = float(TARGET.covariance()[0, 0])


def log_density(x):
    return TARGET.log_prob(x)


def errors(mixture):
    mean = float(mixture.mean()[0])
    variance = float(mixture.covariance()[0, 0])
    return math_log10(abs(mean - TRUE_MEAN)), math_log10(abs(variance - TRUE_VARIANCE) / TRUE_VARIANCE)


def math_log10(value):
    return float(np.log10(max(value, 1e-16)))


def passive(iterations, learner, seed):
    grid = np.linspace(-20.0, 20.0, 51)[:, None]
    values = np.asarray(jax.vmap(log_density)(jnp.asarray(grid)))
    start = time.perf_counter()
    state = learner.init(grid, values, budget=0, key=jax.random.key(seed))
    boosting_state = state.boosting
    step = eqx.filter_jit(learner.boosting.step)
    history = [errors(boosting_state.mixture)]
    for key in jax.random.split(jax.random.key(seed + 1), iterations):
        boosting_state, _ = step(boosting_state, key)
        history.append(errors(boosting_state.mixture))
    return history, time.perf_counter() - start


def active(iterations, learner, seed):
    X0 = np.asarray(10.0 * jnp.abs(jax.random.normal(jax.random.key(seed), (5, 1))))
    X0 = X0 * np.where(np.arange(5)[:, None] % 2 == 0, 1.0, -1.0)
    history = []
    jitted = jax.jit(log_density)

    def record(progress):
        history.append(errors(progress.state.boosting.mixture))

    start = time.perf_counter()
    bvbmc.fit(
        lambda x: float(jitted(jnp.asarray(x))),
        X0,
        key=jax.random.key(seed),
        budget=iterations,
        learner=dataclasses.replace(learner, variance_threshold=1e-3),
        callback=record,
    )
    return history, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    add_output_dir_and_quick(parser)
    arguments = parser.parse_args()
    iterations = arguments.iterations
    algorithm = boosting.Boosting(joint_update_every=10)
    learner = bvbmc.BVBMC(boosting=algorithm)
    if arguments.quick:
        iterations = 2
        algorithm = boosting.Boosting(
            relbo_steps=10, relbo_samples=16, weight_samples=16, joint_steps=10, joint_update_every=10
        )
        learner = bvbmc.BVBMC(
            max_components=4, initial_joint_steps=20, num_candidates=8, search_steps=3, boosting=algorithm
        )
    passive_history, passive_wall = passive(iterations, learner, arguments.seed)
    active_history, active_wall = active(iterations, learner, arguments.seed)
    output = {
        "date": utc_timestamp(),
        "true_mean": TRUE_MEAN,
        "true_variance": TRUE_VARIANCE,
        "passive": {"log10_errors": passive_history, "wall_s": passive_wall},
        "active": {"log10_errors": active_history, "wall_s": active_wall},
        "load_average": os.getloadavg(),
    }
    suffix = "_quick" if arguments.quick else ""
    write_json(arguments.output_dir / f"bvbmc_mixture_1d{suffix}.json", output)
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for name, history in (("passive (51-point grid)", passive_history), ("active (5 initial points)", active_history)):
        history = np.asarray(history)
        axes[0].plot(history[:, 0], label=name)
        axes[1].plot(history[:, 1], label=name)
    axes[0].set_title("log10 |mean error|")
    axes[1].set_title("log10 relative variance error")
    for axis in axes:
        axis.set_xlabel("iteration")
        axis.legend()
    save_figure(figure, arguments.output_dir / f"bvbmc_mixture_1d{suffix}.png")
    print(f"true mean {TRUE_MEAN:.4f}, variance {TRUE_VARIANCE:.4f}")
    print(f"passive: final log10 errors {passive_history[-1]}, wall {passive_wall:.0f} s")
    print(f"active: final log10 errors {active_history[-1]}, wall {active_wall:.0f} s")


if __name__ == "__main__":
    main()
