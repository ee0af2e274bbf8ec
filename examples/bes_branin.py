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

Run with `python examples/bes_branin.py` (writes `examples/bes_branin.png`: for each method
the simple regret per evaluation and the points it evaluated).
"""

import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import bo  # noqa: E402
from gpcompose import plot as plot_results  # noqa: E402
from gpcompose.problems import optimization_functions  # noqa: E402

BRANIN = optimization_functions()["branin"]


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
    plot({"BES": bes, "EI": ei}, png)
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
    """One row per method: its simple regret and its evaluated points (`gpcompose.plot.bo_trace`)."""
    figure = plt.figure(figsize=(11, 4.2 * len(runs)), layout="constrained")
    for row, (name, found) in zip(figure.subfigures(len(runs), 1), runs.items()):
        plot_results.bo_trace(found, optimum=BRANIN.minimum, fig=row)
        row.suptitle(f"{name} on Branin (min f = {BRANIN.minimum})")
    figure.savefig(path, dpi=110)
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
