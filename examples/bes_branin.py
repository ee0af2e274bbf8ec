"""Bayesian optimisation with bounded entropy search (BES) on Branin, beside expected
improvement (EI) on the same seed.

BES (Nguyen, Deisenroth & Osborne 2021) uses approximate knowledge of the extreme values of
the target: here f⁻ = min f = 0.397887 (Branin's known global minimum) and f⁺ = max f on
the box = 308.129, each with the paper's default looseness (η₋² = 0.5d, η₊² = 0.02d in
standardised units). It draws pathwise samples of the GP (a square-root GP of the maximised
−f, bounded by −f⁻ + 2η), weights each by how well its extremes match the bounds, and picks
the point most informative about the maximisers of the well-weighted samples (EI when no
sample is accepted). EI gets the same initial design and the same number of evaluations.
Metric: simple regret min_{i ≤ n} f(x_i) − 0.397887 after the last evaluation.

Run with `python examples/bes_branin.py` (writes `examples/bes_branin.png`: Branin
contours with the points each method evaluated, and the regret per evaluation).
"""

import os
import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it
os.environ.setdefault("PJRT_NPROC", str(2 * os.cpu_count()))  # jaxlib 0.10 CPU thread-pool hang: docs/numerics.md

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import bo  # noqa: E402
from gpcompose.benchmarks import optimisation_functions  # noqa: E402

BRANIN = optimisation_functions()["branin"]
BRANIN_MINIMISERS = np.array([[-np.pi, 12.275], [np.pi, 2.275], [9.42478, 2.475]])


def branin(x):
    return BRANIN(jnp.asarray(x))


def settings(smoke):
    """(budget in evaluations, the random initial design included, and the learners `{"BES": …, "EI": …}`).
    The full size is the paper's protocol (Sec. 5), max(d, 2) random points + 10d iterations, with fewer
    samples and search steps than its M = 200 so that it runs in seconds on a CPU."""
    if smoke:
        search = dict(num_candidates=64, num_starts=2, search_steps=10, fit_steps=40)
        budget, samples = 16, dict(num_samples=16, num_features=50)
    else:
        search = dict(num_candidates=128, num_starts=2, search_steps=20)
        budget, samples = 22, dict(num_samples=32, num_features=100)
    learners = {
        "BES": bo.BO(acquisition=bo.BoundedEntropySearch(**samples), **search),
        "EI": bo.BO(acquisition=bo.ExpectedImprovement(), **search),
    }
    return budget, learners


def minimise(learner, key, budget):
    """One `bo.minimize` run on Branin; (result, wall seconds incl. compilation)."""
    start = time.perf_counter()
    found = bo.minimize(
        branin,
        np.asarray(BRANIN.lower),
        np.asarray(BRANIN.upper),
        key=key,
        budget=budget,
        learner=learner,
        f_plus=BRANIN.maximum,
        f_minus=BRANIN.minimum,
    )
    return found, time.perf_counter() - start


def simple_regret(found):
    """min_{i ≤ n} f(x_i) − min f for n = 1, …, N."""
    return np.minimum.accumulate(np.asarray(found.y)) - BRANIN.minimum


def run(key, *, out_dir: pathlib.Path, smoke: bool = False) -> dict:
    """BES and EI on Branin from the same seed; writes `<out_dir>/bes_branin.png`, returns the summary row."""
    budget, learners = settings(smoke)
    bes, bes_seconds = minimise(learners["BES"], key, budget)
    ei, ei_seconds = minimise(learners["EI"], key, budget)
    bes_regret, ei_regret = simple_regret(bes), simple_regret(ei)
    png = pathlib.Path(out_dir) / "bes_branin.png"
    plot({"BES": (bes, bes_regret), "EI": (ei, ei_regret)}, png)
    return {
        "method": "BES",
        "problem": f"Branin (D=2), {budget} evaluations incl. {max(BRANIN.dimension, 2)} random",
        "metric": "simple regret",
        "value": float(bes_regret[-1]),
        "reference": f"0 (min f = {BRANIN.minimum}); EI on the same seed: {ei_regret[-1]:.3g}",
        "seconds": bes_seconds,
        "png": str(png),
        "bes_regret": bes_regret,
        "ei_regret": ei_regret,
        "ei_seconds": ei_seconds,
        "bes_best_x": np.asarray(bes.x_best),
        "bes_values": np.asarray(bes.y),
    }


def plot(runs, path):
    first = np.linspace(BRANIN.lower[0], BRANIN.upper[0], 200)
    second = np.linspace(BRANIN.lower[1], BRANIN.upper[1], 200)
    points = np.stack(np.meshgrid(first, second, indexing="xy"), axis=-1)
    values = np.asarray(jax.vmap(jax.vmap(BRANIN))(jnp.asarray(points)))
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    left.contour(first, second, np.log(values - BRANIN.minimum + 1.0), levels=12, colors="0.6", linewidths=0.8)
    left.plot(*BRANIN_MINIMISERS.T, "*", color="k", markersize=12, label="global minimisers")
    for (name, (found, regret)), colour, marker in zip(runs.items(), ("C0", "C1"), ("o", "x")):
        X = np.asarray(found.X)
        left.plot(X[:, 0], X[:, 1], marker, color=colour, markersize=5, label=f"{name} evaluations")
        right.semilogy(np.arange(1, regret.shape[0] + 1), np.maximum(regret, 1e-8), color=colour, label=name)
    left.set_xlabel("x₁")
    left.set_ylabel("x₂")
    left.set_title("Branin (contours of log(f − min f + 1))")
    left.legend(fontsize=8, loc="upper right")
    right.set_xlabel("evaluations")
    right.set_ylabel("simple regret min f(xᵢ) − 0.397887")
    right.set_title("simple regret, same seed and initial design")
    right.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main():
    row = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(
        f"{row['method']} on {row['problem']}: simple regret {row['value']:.4g} ({row['seconds']:.1f} s); "
        f"EI {row['ei_regret'][-1]:.4g} ({row['ei_seconds']:.1f} s); BES's best x {row['bes_best_x']}"
    )
    print(f"wrote {row['png']}")


if __name__ == "__main__":
    main()
