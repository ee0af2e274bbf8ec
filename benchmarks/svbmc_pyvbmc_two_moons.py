"""SVBMC (gpcompose) next to PyVBMC on the two-moons target, VSBQ variant (radial scale 0.1, κ = 8,
log Z = 6.165761171767828): ΔLML = |ELBO − log Z|, MMTV and GsKL against exact reference samples,
wall time and number of target evaluations, per seed.

- **SVBMC**: `run_seed` of `svbmc_problems.py` with its two-moons initial set (4 slice-sampling chains ×
  250 evaluations, every evaluation kept) and `budget` = 200 active evaluations in batches of 5, the default
  `svbmc.SVBMC` (1200 evaluations in all). Its wall time is the initial set's generation plus
  `SVBMC.init` + `run_black_box` (both include JIT compilation, which later seeds of one process reuse).
- **PyVBMC**: run from scratch on the same log density (the jitted `TwoMoons.log_density`, called with a
  NumPy point and returning a float), unbounded (bounds ±∞), plausible bounds [−1.5, 1.5]², x0 ~ N(0, 0.5²I)
  per seed, `max_fun_evals` = the SVBMC run's total, 1200 (and `max_iter` = `max_fun_evals`, so that the
  iteration cap never binds first).
  By default PyVBMC may stop earlier on its own stability criterion; `--pyvbmc-full-budget` also sets
  `min_fun_evals` = `max_fun_evals` so that it spends the whole budget. Metrics from `vp.sample(n)` and the
  returned ELBO. Its evaluations are counted by the wrapper and checked against `results["func_count"]`.

Both methods of one seed are scored against the same n = 20 000 exact reference samples
(`problem.reference_samples`, the key `run_seed` uses), GsKL between the Gaussians with the sample
moments of the two sets. Methods alternate seed by seed; the load average is recorded around every run.

Usage:
    python benchmarks/svbmc_pyvbmc_two_moons.py --seeds 3
    python benchmarks/svbmc_pyvbmc_two_moons.py --quick
Writes `<output-dir>/svbmc_pyvbmc_two_moons.json` and `.png` (`_quick` suffix with `--quick`) and prints
the Markdown table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import agg_pyplot, save_figure, utc_timestamp, write_json  # noqa: E402
from svbmc_problems import (  # noqa: E402
    bootstrap_median,
    learner_options,
    run_seed,
    run_settings,
    seed_keys,
    two_moons,
)

from gpcompose.problems import TwoMoons  # noqa: E402
from gpcompose.problems.metrics import gskl, mmtv  # noqa: E402

plt = agg_pyplot()

PROBLEM = "two_moons_vsbq"
TARGET = TwoMoons(radial_scale=0.1, concentration=8.0)
LOG_NORMALISER = 6.165761171767828
METHODS = ("SVBMC (gpcompose)", "PyVBMC")
METRICS = ("delta_lml", "mmtv", "gskl")
PACKAGES = ("gpcompose", "jax", "jaxlib", "equinox", "numpy", "scipy", "pyvbmc", "gpyreg", "matplotlib")


def load_average():
    return list(os.getloadavg())


def reference_key(seed):
    """The key `run_seed` draws its reference samples with, so both methods of a seed share them."""
    return seed_keys(seed)[3]


def run_svbmc(problem, seed, budget, batch_size, options, num_metric_samples):
    timing = {}

    def timed_initial_set(key):
        start = time.perf_counter()
        X, y = problem.initial_set(key)
        timing["initial_set_seconds"] = time.perf_counter() - start
        return X, y

    timed = dataclasses.replace(problem, initial_set=timed_initial_set)
    outcome = run_seed(timed, seed, dataclasses.replace(options, batch_size=batch_size), num_metric_samples, budget)
    outcome.update(timing)
    # `run_black_box` evaluates the target until exactly `budget` new evaluations are spent.
    outcome["num_evaluations"] = outcome["num_initial"] + budget
    outcome["wall_seconds"] = outcome["initial_set_seconds"] + outcome["total_seconds"]
    return outcome


def optimise_with_pyvbmc(
    log_density, x0, plausible_lower, plausible_upper, *, max_fun_evals, full_budget, seed, options=()
):
    """PyVBMC from scratch on the jittable `log_density`, unbounded, with plausible bounds
    [`plausible_lower`, `plausible_upper`] and start `x0` (D,); `max_fun_evals` is also the
    iteration cap, and `full_budget` sets `min_fun_evals` to it. The density is compiled
    before the timed region. **Returns:** (the `VBMC` object, vp, results, number of target
    calls, wall seconds)."""
    from pyvbmc import VBMC

    jitted = eqx.filter_jit(log_density)
    count = [0]

    def counted(x):
        count[0] += 1
        return float(jitted(jnp.asarray(np.reshape(np.asarray(x, np.float64), -1))))

    x0 = np.asarray(x0, np.float64).reshape(1, -1)
    dimension = x0.shape[1]
    settings = {"max_fun_evals": max_fun_evals, "max_iter": max_fun_evals, "display": "off", "show_tips": False}
    settings.update(options)
    if full_budget:
        settings["min_fun_evals"] = max_fun_evals
    counted(x0)  # compile the jitted density outside the timed region (not counted below)
    count[0] = 0
    start = time.perf_counter()
    vbmc = VBMC(
        counted,
        x0,
        np.full((1, dimension), -np.inf),
        np.full((1, dimension), np.inf),
        np.asarray(plausible_lower, np.float64).reshape(1, -1),
        np.asarray(plausible_upper, np.float64).reshape(1, -1),
        options=settings,
        seed=seed,
    )
    vp, results = vbmc.optimize()
    return vbmc, vp, results, count[0], time.perf_counter() - start


def pyvbmc_counts(results, num_evaluations):
    """The size of a PyVBMC run: components, iterations, target calls counted by the wrapper
    (`num_evaluations`) and PyVBMC's own `func_count`."""
    return {
        "num_components": int(results["components"]),
        "num_iterations": int(results["iterations"]),
        "num_evaluations": num_evaluations,
        "func_count": int(results["func_count"]),
    }


def run_pyvbmc(problem, seed, max_fun_evals, full_budget, num_metric_samples):
    dimension = TARGET.dimension
    x0 = 0.5 * np.random.default_rng(seed).standard_normal((1, dimension))
    _, vp, results, num_evaluations, wall_seconds = optimise_with_pyvbmc(
        problem.log_density,
        x0,
        np.full(dimension, -1.5),
        np.full(dimension, 1.5),
        max_fun_evals=max_fun_evals,
        full_budget=full_budget,
        seed=seed,
    )
    samples, _ = vp.sample(num_metric_samples)
    samples = np.asarray(samples)
    reference = np.asarray(problem.reference_samples(reference_key(seed), num_metric_samples))
    divergence = gskl(jnp.mean(samples, 0), jnp.cov(samples.T), *problem.reference_moments)
    elbo = float(results["elbo"])
    return {
        "seed": seed,
        "x0": x0.reshape(-1).tolist(),
        "elbo": elbo,
        "elbo_sd": float(results["elbo_sd"]),
        "delta_lml": abs(elbo - float(problem.log_normalizer)),
        "mmtv": float(mmtv(samples, reference)),
        "gskl": float(divergence),
        **pyvbmc_counts(results, num_evaluations),
        "train_set_size": int(results["train_set_size"]),
        "convergence_status": str(results["convergence_status"]),
        "success_flag": bool(results["success_flag"]),
        "message": str(results.get("message", "")),
        "wall_seconds": wall_seconds,
    }


def versions():
    found = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def machine():
    info = {"platform": platform.platform(), "processor": platform.processor(), "cpu_count": os.cpu_count()}
    for key, path, field in (("cpu_model", "/proc/cpuinfo", "model name"), ("memory", "/proc/meminfo", "MemTotal")):
        try:
            lines = Path(path).read_text().splitlines()
        except OSError:
            continue
        info[key] = next((line.split(":", 1)[1].strip() for line in lines if line.startswith(field)), None)
    info["jax_devices"] = [str(device) for device in jax.devices()]
    return info


def format_evaluations(values):
    values = sorted(values)
    if values[0] == values[-1]:
        return str(values[0])
    return f"{int(np.median(values))} ({values[0]}–{values[-1]})"


def make_table(results):
    rows = [
        "| method | seeds | ΔLML | MMTV | GsKL | median wall (s) | evaluations |",
        "|---|---|---|---|---|---|---|",
    ]
    walls = {}
    for method in METHODS:
        runs = [run for run in results[method] if "error" not in run]
        failed = len(results[method]) - len(runs)
        if not runs:
            rows.append(f"| {method} | 0 ({failed} failed) | – | – | – | – | – |")
            continue
        cells = []
        for metric in METRICS:
            median, low, high = bootstrap_median([run[metric] for run in runs])
            cells.append(f"{median:.3g} [{low:.3g},{high:.3g}]")
        walls[method] = float(np.median([run["wall_seconds"] for run in runs]))
        seeds = f"{len(runs)}" + (f" ({failed} failed)" if failed else "")
        rows.append(
            f"| {method} | {seeds} | "
            + " | ".join(cells)
            + f" | {walls[method]:.1f} | {format_evaluations([run['num_evaluations'] for run in runs])} |"
        )
    if len(walls) == 2:
        ratio = walls[METHODS[1]] / walls[METHODS[0]]
        rows.append(f"| PyVBMC / SVBMC wall time | | | | | {ratio:.2f} | |")
    return "\n".join(rows)


def plot(results, path):
    figure, axes = plt.subplots(1, 4, figsize=(14, 3.5))
    titles = {"delta_lml": "ΔLML", "mmtv": "MMTV", "gskl": "GsKL", "wall_seconds": "wall time (s)"}
    for axis, quantity in zip(axes, (*METRICS, "wall_seconds")):
        for position, method in enumerate(METHODS):
            values = [run[quantity] for run in results[method] if "error" not in run]
            if values:
                axis.scatter(np.full(len(values), position), values, s=16)
                axis.hlines(np.median(values), position - 0.25, position + 0.25, color="black")
        axis.set_xticks(range(len(METHODS)), METHODS, fontsize=8)
        axis.set_xlim(-0.6, len(METHODS) - 0.4)
        axis.set_yscale("log")
        axis.set_title(titles[quantity])
    figure.suptitle("Two moons (VSBQ variant): points are seeds, bars are medians", fontsize=9)
    save_figure(figure, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=200, help="SVBMC active evaluations")
    parser.add_argument("--batch-size", type=int, default=5, help="SVBMC evaluations per round")
    parser.add_argument(
        "--pyvbmc-max-fun-evals",
        type=int,
        default=None,
        help="PyVBMC evaluation budget (default: the SVBMC run's total, initial set + budget = 1200)",
    )
    parser.add_argument("--pyvbmc-full-budget", action="store_true", help="PyVBMC min_fun_evals = max_fun_evals")
    parser.add_argument("--output-dir", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; its numbers mean nothing")
    # SVBMC's defaults for `run_settings`' other arguments
    parser.set_defaults(mixture_family=None, no_whitening=False, whitening_passes=None, max_inducing=None)
    args = parser.parse_args()

    options, num_metric_samples = run_settings(args)
    problem = two_moons(TARGET.radial_scale, evaluations_per_chain=25 if args.quick else 250)
    assert abs(float(problem.log_normalizer) - LOG_NORMALISER) < 1e-12
    if args.quick:
        args.pyvbmc_max_fun_evals = args.pyvbmc_max_fun_evals or 30

    output_dir = Path(args.output_dir)
    name = "svbmc_pyvbmc_two_moons_quick" if args.quick else "svbmc_pyvbmc_two_moons"

    record = {
        "command": " ".join(["python", "benchmarks/svbmc_pyvbmc_two_moons.py", *sys.argv[1:]]),
        "arguments": vars(args),
        "problem": {
            "name": PROBLEM,
            "radial_scale": TARGET.radial_scale,
            "concentration": TARGET.concentration,
            "log_normaliser": float(problem.log_normalizer),
        },
        "num_metric_samples": num_metric_samples,
        "svbmc": {
            "budget": args.budget,
            "batch_size": args.batch_size,
            "options": learner_options(options),
        },
        "pyvbmc": {
            "max_fun_evals": None,
            "full_budget": args.pyvbmc_full_budget,
            "plausible_bounds": [-1.5, 1.5],
            "bounds": ["-inf", "inf"],
            "x0": "N(0, 0.5^2 I), rng seed = seed",
        },
        "versions": versions(),
        "machine": machine(),
        "date": utc_timestamp(),
        "results": {method: [] for method in METHODS},
    }
    results = record["results"]
    json_path = output_dir / f"{name}.json"

    start_all = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        initial_load = load_average()
        try:
            outcome = run_svbmc(problem, seed, args.budget, args.batch_size, options, num_metric_samples)
        except Exception as error:  # keep the other runs
            outcome = {"seed": seed, "error": repr(error), "traceback": traceback.format_exc()}
        outcome["load_average_before"], outcome["load_average_after"] = initial_load, load_average()
        results[METHODS[0]].append(outcome)
        print(METHODS[0], json.dumps(outcome), flush=True)

        # The same total number of evaluations as the SVBMC run of this seed.
        max_fun_evals = args.pyvbmc_max_fun_evals or outcome.get("num_evaluations", 1200)
        record["pyvbmc"]["max_fun_evals"] = max_fun_evals
        initial_load = load_average()
        try:
            outcome = run_pyvbmc(problem, seed, max_fun_evals, args.pyvbmc_full_budget, num_metric_samples)
        except Exception as error:
            outcome = {"seed": seed, "error": repr(error), "traceback": traceback.format_exc()}
        outcome["max_fun_evals"] = max_fun_evals
        outcome["load_average_before"], outcome["load_average_after"] = initial_load, load_average()
        results[METHODS[1]].append(outcome)
        print(METHODS[1], json.dumps(outcome), flush=True)
        write_json(json_path, record)  # keep what is done if a later run dies

    record["total_seconds"] = time.perf_counter() - start_all
    table = make_table(results)
    record["table"] = table
    print(table)
    write_json(json_path, record)
    plot(results, output_dir / f"{name}.png")


if __name__ == "__main__":
    main()
