"""SVBMC on the document's problems (Li, Clarté & Acerbi 2023, Tables 1–4): ΔLML, MMTV
and GsKL over seeds (median and bootstrap 95% CI of the median), with wall times.

Problems (`--problems`, comma-separated):
- `two_moons_vsbq`: two moons with κ = 8 and radial scale 0.1 (VSBQ's variant,
  log Z = 6.165761171767828); initial set: 4 slice-sampling chains × 250 evaluations,
  every evaluation kept (stepping-out and shrinkage included).
- `two_moons_paper`: the document's radial scale 0.01 (log Z = 3.863176).
- `rosenbrock`: Rosenbrock–Gaussian D = 6 (log Z = −8.662666); initial set: 10 CMA-ES
  runs × 500 evaluations from N(0, 3²I) starts (5000 evaluations).
- `rosenbrock_truncated`: the same set with every point with x₁ > 0 removed.
Ground truth: exact reference samples of each problem (`reference_samples`).

Usage:
    python benchmarks/svbmc_problems.py --problems two_moons_vsbq --seeds 20
    python benchmarks/svbmc_problems.py --quick
Writes `<output-dir>/svbmc_problems.json`, `.png` and prints the Markdown table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import svbmc  # noqa: E402
from gpcompose.benchmarks import (  # noqa: E402
    RosenbrockGaussian,
    TwoMoons,
    cma_es_evaluations,
    slice_sampling_evaluations,
)
from gpcompose.benchmarks.metrics import gskl, mmtv  # noqa: E402

# The document's SVBMC rows (median [95% CI]); notes/svbmc.md §4.3.
PAPER = {
    "two_moons_paper": {"delta_lml": "0.0058 [0.0029,0.0083]", "mmtv": "0.021 [0.020,0.025]", "gskl": "0.00048"},
    "two_moons_vsbq": {"delta_lml": "– (VSBQ variant)", "mmtv": "–", "gskl": "–"},
    "rosenbrock": {"delta_lml": "0.26 [0.23,0.27]", "mmtv": "0.086 [0.084,0.088]", "gskl": "0.12 [0.095,0.12]"},
    "rosenbrock_truncated": {"delta_lml": "0.23 [0.22,0.26]", "mmtv": "0.083 [0.082,0.088]", "gskl": "0.11"},
}


def two_moons_initial_set(problem, key, num_chains=4, evaluations_per_chain=250):
    start_key, chain_key = jax.random.split(key)
    starts = 0.5 * jax.random.normal(start_key, (num_chains, 2))

    def chain(start, chain_key):
        points, values, _ = slice_sampling_evaluations(
            problem.log_density, chain_key, start, evaluations_per_chain, width=0.5
        )
        return points, values

    points, values = jax.vmap(chain)(starts, jax.random.split(chain_key, num_chains))
    return np.asarray(points.reshape(-1, 2)), np.asarray(values.reshape(-1))


def rosenbrock_initial_set(problem, key, num_runs=10, evaluations_per_run=500):
    start_key, run_key = jax.random.split(key)
    starts = 3.0 * jax.random.normal(start_key, (num_runs, problem.dimension))

    def run(start, run_key):
        return cma_es_evaluations(problem.log_density, run_key, start, 3.0, evaluations_per_run)

    points, values = jax.vmap(run)(starts, jax.random.split(run_key, num_runs))
    return np.asarray(points.reshape(-1, problem.dimension)), np.asarray(values.reshape(-1))


def make_problem(name):
    if name == "two_moons_vsbq":
        problem = TwoMoons(radial_scale=0.1, concentration=8.0)
        return problem, two_moons_initial_set
    if name == "two_moons_paper":
        problem = TwoMoons(radial_scale=0.01, concentration=8.0)
        return problem, two_moons_initial_set
    if name == "rosenbrock":
        return RosenbrockGaussian(), rosenbrock_initial_set
    if name == "rosenbrock_truncated":

        def truncated(problem, key):
            X, y = rosenbrock_initial_set(problem, key)
            keep = X[:, 0] <= 0
            return X[keep], y[keep]

        return RosenbrockGaussian(), truncated
    raise ValueError(f"unknown problem {name!r}")


def run_settings(args):
    """SVBMC options and metric sample count; `--quick` shrinks the run (and `args`) to a smoke test."""
    if not args.quick:
        return svbmc.SVBMCOptions(), 20_000
    args.seeds, args.budget, args.batch_size = 1, 4, 2
    options = svbmc.SVBMCOptions(max_components=4, buildup_steps=50, round_steps=20, min_inducing=50, max_inducing=80)
    return options, 2000


def bootstrap_median(values, num_resamples=10_000, seed=0):
    values = np.asarray(values, float)
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(values, (num_resamples, values.size)), axis=1)
    return float(np.median(values)), float(np.quantile(medians, 0.025)), float(np.quantile(medians, 0.975))


def run_seed(problem, initial_set, seed, budget, batch_size, options, num_metric_samples):
    key = jax.random.key(seed)
    data_key, fit_key, sample_key, reference_key = jax.random.split(key, 4)
    X, y = initial_set(problem, data_key)
    log_density = eqx.filter_jit(problem.log_density)
    start = time.perf_counter()
    init_state = svbmc.init(X, y, key=fit_key, budget=budget, batch_size=batch_size, options=options)
    jax.block_until_ready(init_state.elbo)
    initial_seconds = time.perf_counter() - start
    result = svbmc.fit(lambda x: float(log_density(jnp.asarray(x))), X, y, key=fit_key, state=init_state)
    jax.block_until_ready(result.elbo)
    total_seconds = time.perf_counter() - start
    samples = np.asarray(result.posterior.sample(sample_key, num_metric_samples))
    reference = np.asarray(problem.reference_samples(reference_key, num_metric_samples))
    divergence = gskl(jnp.mean(samples, 0), jnp.cov(samples.T), jnp.mean(reference, 0), jnp.cov(reference.T))
    return {
        "seed": seed,
        "num_initial": int(X.shape[0]),
        "elbo": float(result.elbo),
        "elbo_sd": float(result.elbo_sd),
        "delta_lml": abs(float(result.elbo) - float(problem.log_normaliser)),
        "mmtv": float(mmtv(samples, reference)),
        "gskl": float(divergence),
        "num_components": int(np.sum(np.asarray(result.posterior.mask))),
        "num_failed": result.num_failed,
        "initial_seconds": initial_seconds,
        "total_seconds": total_seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", default="two_moons_vsbq,two_moons_paper,rosenbrock,rosenbrock_truncated")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=5)
    parser.add_argument("--output-dir", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; its numbers mean nothing")
    args = parser.parse_args()

    options, num_metric_samples = run_settings(args)
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    name = "svbmc_problems_quick" if args.quick else "svbmc_problems"

    results = {}
    for problem_name in args.problems.split(","):
        problem, initial_set = make_problem(problem_name)
        runs = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            outcome = run_seed(problem, initial_set, seed, args.budget, args.batch_size, options, num_metric_samples)
            print(problem_name, json.dumps(outcome), flush=True)
            runs.append(outcome)
        results[problem_name] = {"log_normaliser": float(problem.log_normaliser), "runs": runs}

    rows = [
        "| problem | seeds | ΔLML | MMTV | GsKL | paper ΔLML | paper MMTV | paper GsKL | median wall (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for problem_name, entry in results.items():
        runs = entry["runs"]
        cells = []
        for metric in ("delta_lml", "mmtv", "gskl"):
            median, low, high = bootstrap_median([run[metric] for run in runs])
            cells.append(f"{median:.3g} [{low:.3g},{high:.3g}]")
        paper = PAPER.get(problem_name, {})
        wall = np.median([run["total_seconds"] for run in runs])
        rows.append(
            f"| {problem_name} | {len(runs)} | "
            + " | ".join(cells)
            + f" | {paper.get('delta_lml', '–')} | {paper.get('mmtv', '–')} | {paper.get('gskl', '–')} | {wall:.0f} |"
        )
    table = "\n".join(rows)
    print(table)

    record = {
        "command": " ".join(
            ["python", "benchmarks/svbmc_problems.py"] + [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()]
        ),
        "budget": args.budget,
        "batch_size": args.batch_size,
        "options": {k: getattr(options, k) for k in options.__dataclass_fields__},
        "results": results,
        "table": table,
        "jax_version": jax.__version__,
        "machine": {"platform": platform.platform(), "processor": platform.processor()},
        "date": datetime.datetime.now(datetime.UTC).isoformat(),
    }
    (output_dir / f"{name}.json").write_text(json.dumps(record, indent=1))

    figure, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for axis, metric in zip(axes, ("delta_lml", "mmtv", "gskl")):
        for position, (problem_name, entry) in enumerate(results.items()):
            values = [run[metric] for run in entry["runs"]]
            axis.scatter(np.full(len(values), position), values, s=12)
        axis.set_xticks(range(len(results)), list(results), rotation=20, fontsize=7)
        axis.set_yscale("log")
        axis.set_title(metric)
    figure.tight_layout()
    figure.savefig(output_dir / f"{name}.png", dpi=120)


if __name__ == "__main__":
    main()
