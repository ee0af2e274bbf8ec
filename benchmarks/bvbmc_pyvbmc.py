"""BVBMC (gpcompose) next to PyVBMC on the VBMC toy problems of the BVBMC thesis §7.2 (Lumpy, Cigar,
Student-t; `gpcompose.problems.VBMC_TOY_PROBLEMS`), with the same initial-design size and the same total
number of target evaluations, beside the thesis's Table 7.1.

- **Targets**: one instance per (problem, D), drawn with `--problem-seed` (default 0, as `bvbmc_toy.py`),
  exact mean, covariance and log Z (closed form; Lumpy is normalised, Cigar and Student-t are not).
- **BVBMC**: `run` of `bvbmc_toy.py`, unchanged: its 10D initial points x = 5|r| u of run seed s
  (key 1000 + s), `bvbmc.fit` with `budget` = 100 and default options, so 10D + 100 evaluations in all.
  Its wall time includes JIT compilation (a later run of the same D in one process reuses most programs).
- **PyVBMC** (PyPI, version in the JSON): the same jitted log density (called with a NumPy point, returning a
  float), unbounded (bounds ±∞), `fun_eval_start` = 10D (the initial-design size of BVBMC),
  `max_fun_evals` = the BVBMC run's total (10D + 100) and `max_iter` = `max_fun_evals` (so that the iteration
  cap never binds first), `display` off, `seed` = s, every other option at its default. By default PyVBMC
  may stop earlier on its own stability criterion; `--pyvbmc-full-budget` also sets `min_fun_evals` =
  `max_fun_evals`. Evaluations are counted by the wrapper and recorded beside `results["func_count"]`.
- **PyVBMC plausible bounds**: the box μ₀ ± 2σ₀ per coordinate, from the target's exact mean μ₀ and
  marginal standard deviations σ₀ = √diag Σ₀ — one rule for every target, the kind of box a user with a
  rough idea of the posterior's location and scale would give. The same information is not given to BVBMC,
  whose initial points ignore the target; PyVBMC's uniform initial design inside this box is therefore an
  advantage. (Problem seed 0, D = 2: Lumpy [−0.93, 1.81] × [−0.55, 1.98]; Cigar ±0.95 × ±6.28;
  Student-t ±2√(ν/(ν − 2)) = ±3.91 × ±4.14.)
- **PyVBMC x0**: one of the seed's BVBMC initial points, the one nearest to the box's centre in units of
  σ₀ (no evaluation is spent choosing it). Where it lies outside the box, PyVBMC widens the box to include
  it (its own rule); the box it actually used is recorded.
- **Metrics**: gsKL = ½[KL(N_q‖N_p) + KL(N_p‖N_q)] between the moment-matched Gaussians of the method's
  posterior q and of the target p (exact moments), ‖μ − μ₀‖₂, ‖Σ − Σ₀‖_F/‖Σ₀‖_F, and ELBO − log Z. BVBMC's
  moments are exact mixture moments; PyVBMC's are `vp.moments(10⁶ samples)` in the original space (its
  exact moments are in a rescaled space). Wall time covers the run only (neither the metrics nor, for
  PyVBMC, the compilation of the target, done beforehand). The load average is recorded before and after
  every run; methods alternate run by run (for each seed, every problem: BVBMC, then PyVBMC).

Usage:
    python benchmarks/bvbmc_pyvbmc.py --dimensions 2 --seeds 3
    python benchmarks/bvbmc_pyvbmc.py --dimensions 6 --seeds 2 --resume   # adds to the same JSON
    python benchmarks/bvbmc_pyvbmc.py --seeds 0 --resume   # tables and plot of the JSON's runs only
    python benchmarks/bvbmc_pyvbmc.py --quick
Writes `<output-dir>/bvbmc_pyvbmc.json` after every run and `.png` at the end (`_quick` with `--quick`),
and prints the Markdown tables.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_output_dir_and_quick, agg_pyplot, save_figure, utc_timestamp, write_json  # noqa: E402
from bvbmc_toy import PROBLEMS, THESIS, initial_points, moment_metrics, run, run_settings  # noqa: E402
from svbmc_pyvbmc_two_moons import machine, optimise_with_pyvbmc, pyvbmc_counts, versions  # noqa: E402

plt = agg_pyplot()

METHODS = ("BVBMC", "PyVBMC")
PLAUSIBLE_HALF_WIDTH_IN_SDS = 2.0
NUM_MOMENT_SAMPLES = 10**6


def plausible_box(target):
    """μ₀ ± 2σ₀ per coordinate, σ₀ = √diag Σ₀."""
    mean, sd = np.asarray(target.mean), np.sqrt(np.diag(np.asarray(target.covariance)))
    return mean - PLAUSIBLE_HALF_WIDTH_IN_SDS * sd, mean + PLAUSIBLE_HALF_WIDTH_IN_SDS * sd


def starting_point(points, target):
    """The row of `points` nearest to μ₀ in units of σ₀."""
    mean, sd = np.asarray(target.mean), np.sqrt(np.diag(np.asarray(target.covariance)))
    return points[np.argmin(np.linalg.norm((points - mean) / sd, axis=1))]


def run_pyvbmc(problem, dimension, seed, problem_seed, max_fun_evals, full_budget):
    target = PROBLEMS[problem](jax.random.key(problem_seed), dimension)
    lower, upper = plausible_box(target)
    x0 = starting_point(initial_points(seed, dimension), target)
    vbmc, vp, results, num_evaluations, wall = optimise_with_pyvbmc(
        target.log_density,
        x0,
        lower,
        upper,
        max_fun_evals=max_fun_evals,
        full_budget=full_budget,
        seed=seed,
        options={"fun_eval_start": 10 * dimension},
    )
    mean, covariance = vp.moments(NUM_MOMENT_SAMPLES, orig_flag=True, cov_flag=True)
    return {
        "problem": problem,
        "dimension": dimension,
        "seed": seed,
        **moment_metrics(jnp.asarray(mean.reshape(-1)), jnp.asarray(covariance), target),
        "elbo": float(results["elbo"]),
        "log_normaliser": float(target.log_normalizer),
        "elbo_sd": float(results["elbo_sd"]),
        **pyvbmc_counts(results, num_evaluations),
        "convergence_status": str(results["convergence_status"]),
        "success_flag": bool(results["success_flag"]),
        "x0": x0.tolist(),
        "plausible_bounds_given": [lower.tolist(), upper.tolist()],
        "plausible_bounds_used": [
            np.ravel(vbmc.plausible_lower_bounds).tolist(),
            np.ravel(vbmc.plausible_upper_bounds).tolist(),
        ],
        "max_fun_evals": max_fun_evals,
        "wall_s": wall,
    }


def timed(method, function, *arguments):
    """`function(*arguments)` with the method name and the load average before and after; an exception
    becomes a record with the error, so that the other runs go on."""
    before = list(os.getloadavg())
    try:
        record = function(*arguments)
    except Exception as error:
        record = {"error": repr(error), "traceback": traceback.format_exc()}
    return {"method": method, **record, "load_average_before": before, "load_average_after": list(os.getloadavg())}


def runs_of(records, method, problem, dimension):
    return [
        r
        for r in records
        if r["method"] == method and r["problem"] == problem and r["dimension"] == dimension and "error" not in r
    ]


def median(runs, key):
    return float(np.median([r[key] for r in runs]))


def format_evaluations(runs):
    values = sorted(r["num_evaluations"] for r in runs)
    return str(values[0]) if values[0] == values[-1] else f"{int(np.median(values))} ({values[0]}–{values[-1]})"


def make_tables(records):
    gskl_rows = [
        "| problem | D | seeds | median gsKL BVBMC | median gsKL PyVBMC | BVBMC / PyVBMC | median wall BVBMC (s) "
        "| median wall PyVBMC (s) | evaluations BVBMC; PyVBMC | thesis BVBMC | thesis VBMC |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    moment_rows = [
        "| problem | D | median ‖Δμ‖ BVBMC | median ‖Δμ‖ PyVBMC | median ΔΣ (rel.) BVBMC | median ΔΣ (rel.) PyVBMC "
        "| median ELBO − log Z BVBMC | median ELBO − log Z PyVBMC |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for problem, dimension in THESIS:
        mine, theirs = (runs_of(records, method, problem, dimension) for method in METHODS)
        if not (mine and theirs):
            continue
        failed = sum(r["problem"] == problem and r["dimension"] == dimension and "error" in r for r in records)
        seeds = f"{len(mine)}; {len(theirs)}" + (f" ({failed} failed)" if failed else "")
        thesis_bvbmc, thesis_vbmc = THESIS[problem, dimension]
        gskl_rows.append(
            f"| {problem} | {dimension} | {seeds} | {median(mine, 'gskl'):.3g} | {median(theirs, 'gskl'):.3g} "
            f"| {median(mine, 'gskl') / median(theirs, 'gskl'):.3g} | {median(mine, 'wall_s'):.0f} "
            f"| {median(theirs, 'wall_s'):.0f} | {format_evaluations(mine)}; {format_evaluations(theirs)} "
            f"| {thesis_bvbmc:.3g} | {thesis_vbmc:.3g} |"
        )
        elbo_errors = [[r["elbo"] - r["log_normaliser"] for r in runs] for runs in (mine, theirs)]
        moment_rows.append(
            f"| {problem} | {dimension} | {median(mine, 'mean_error'):.3g} | {median(theirs, 'mean_error'):.3g} "
            f"| {median(mine, 'covariance_error'):.3g} | {median(theirs, 'covariance_error'):.3g} "
            f"| {np.median(elbo_errors[0]):.3g} | {np.median(elbo_errors[1]):.3g} |"
        )
    return "\n".join(gskl_rows), "\n".join(moment_rows)


def plot(records, path):
    cases = [case for case in THESIS if all(runs_of(records, method, *case) for method in METHODS)]
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    for index, case in enumerate(cases):
        for offset, method in zip((-0.15, 0.15), METHODS):
            runs = runs_of(records, method, *case)
            label = method if index == 0 else None
            color = "C0" if method == METHODS[0] else "C3"
            axes[0].scatter(np.full(len(runs), index + offset), [r["gskl"] for r in runs], s=14, c=color, label=label)
            axes[1].scatter(np.full(len(runs), index + offset), [r["wall_s"] for r in runs], s=14, c=color, label=label)
        thesis_bvbmc, thesis_vbmc = THESIS[case]
        axes[0].scatter([index], [thesis_bvbmc], color="C1", marker="x", label="thesis BVBMC" if index == 0 else None)
        axes[0].scatter([index], [thesis_vbmc], color="C2", marker="+", label="thesis VBMC" if index == 0 else None)
    for axis, title in zip(axes, ("gsKL (exact target moments)", "wall time (s), loaded 2-core machine")):
        axis.set_yscale("log")
        axis.set_xticks(range(len(cases)), [f"{p}\nD={d}" for p, d in cases], fontsize=7)
        axis.set_title(title, fontsize=9)
        axis.legend(fontsize=7)
    figure.suptitle("BVBMC (gpcompose) vs PyVBMC, same evaluations; points are seeds", fontsize=9)
    save_figure(figure, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dimensions", type=int, nargs="+", default=[2])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--problem-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=100, help="BVBMC active evaluations")
    parser.add_argument("--pyvbmc-full-budget", action="store_true", help="PyVBMC min_fun_evals = max_fun_evals")
    parser.add_argument("--resume", action="store_true", help="keep the runs of an existing JSON, skip them")
    add_output_dir_and_quick(parser)
    args = parser.parse_args()
    budget, learner = run_settings(args.budget, args.quick)

    name = "bvbmc_pyvbmc_quick" if args.quick else "bvbmc_pyvbmc"
    json_path = args.output_dir / f"{name}.json"
    previous = json.loads(json_path.read_text()) if args.resume and json_path.exists() else {}
    records = previous.get("records", [])
    done = {(r["method"], r["problem"], r["dimension"], r["seed"]) for r in records if "error" not in r}
    output = {
        "commands": [*previous.get("commands", []), " ".join(["python", "benchmarks/bvbmc_pyvbmc.py", *sys.argv[1:]])],
        "budget": budget,
        "pyvbmc": {
            "bounds": ["-inf", "inf"],
            "plausible_bounds": "mean ± 2 sd per coordinate (exact moments)",
            "x0": "the seed's BVBMC initial point nearest to the mean in sd units",
            "fun_eval_start": "10 D",
            "max_fun_evals": "10 D + budget",
            "full_budget": args.pyvbmc_full_budget,
        },
        "versions": versions(),
        "machine": machine(),
        "date": utc_timestamp(),
        "records": records,
    }
    for dimension in args.dimensions:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for problem in args.problems:
                max_fun_evals = 10 * dimension + budget
                settings = (problem, dimension, seed, args.problem_seed)
                if (METHODS[0], problem, dimension, seed) not in done:
                    record = timed(METHODS[0], run, *settings, budget, learner)
                    record.update(problem=problem, dimension=dimension, seed=seed)
                    records.append(record)
                    print(json.dumps(record), flush=True)
                    max_fun_evals = record.get("num_evaluations", max_fun_evals)
                if (METHODS[1], problem, dimension, seed) not in done:
                    record = timed(METHODS[1], run_pyvbmc, *settings, max_fun_evals, args.pyvbmc_full_budget)
                    record.update(problem=problem, dimension=dimension, seed=seed)
                    records.append(record)
                    print(json.dumps(record), flush=True)
                write_json(json_path, output)  # keep what is done if a later run dies

    gskl_table, moment_table = make_tables(records)
    output["tables"] = [gskl_table, moment_table]
    write_json(json_path, output)
    plot(records, args.output_dir / f"{name}.png")
    print(gskl_table, moment_table, sep="\n\n")


if __name__ == "__main__":
    main()
