"""BVBMC on the VBMC toy problems of the thesis §7.2 (Lumpy, Cigar, Student-t) beside its
Table 7.1 (gsKL of BVBMC, a single run, and of VBMC, medians of 15 runs read off [2]).

- **Lumpy**: Σ_{i=1}^{12} w_i N(x; μ_i, diag(σ²_i)), w ~ Dir(1, …, 1), μ_i ~ U[0, 1]^D,
  σ²_{i,d} ~ U(0.2, 0.6) (variances).
- **Cigar**: N(0, QΛQᵀ), Λ = diag(10, 0.1, …, 0.1), Q Haar-distributed on SO(D); unnormalised.
- **Student-t**: Π_d T(x_d; ν_d), ν_d ~ U(2.5, 2 + 0.5D); unnormalised; covariance diag(ν/(ν − 2)).

The targets are `gpcompose.problems.Lumpy`, `Cigar` and `StudentT` (exact mean, covariance and log Z);
the initial design is `gpcompose.problems.vbmc_toy_initial_points`.
Each problem instance is drawn once with `--problem-seed`; each run seed draws its own 10D initial
points x = 5|N(0, 1)| u with u uniform on the sphere (the thesis's code) and calls `bvbmc.fit` with
`budget` = 100 (total evaluations 10D + 100) and the default learner `bvbmc.BVBMC()`: the product
Matérn-5/2 kernel, acquisitions chosen at random between PROP and MMLT, joint update every 20
iterations, and every other constant at its default (`bvbmc.BVBMC`, `boosting.Boosting`). The
ground-truth moments are exact (closed form).

Metrics: gsKL = ½[KL(N_q‖N_p) + KL(N_p‖N_q)] between the moment-matched Gaussians (the ½ is
gpcompose's convention; the thesis does not state its own), ‖μ − μ₀‖₂ and ‖Σ − Σ₀‖_F/‖Σ₀‖_F; the
ELBO is recorded beside log Z.

Usage:
    python benchmarks/bvbmc_toy.py --dimensions 2 --seeds 2
    python benchmarks/bvbmc_toy.py --dimensions 6 --seeds 10 --name bvbmc_toy_d6_10seeds
    python benchmarks/bvbmc_toy.py --quick
Writes `<output-dir>/<name>.json` (default `bvbmc_toy`, `bvbmc_toy_quick` with `--quick`) after every
run and its `.png` at the end, and prints the table of every record in the file. A rerun keeps the
file's records and skips the (problem, D, seed) runs it already has, so a long run can be stopped
and resumed (use another `--name` to start over).
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import add_output_dir_and_quick, agg_pyplot, save_figure, utc_timestamp, write_json  # noqa: E402

from gpcompose import boosting, bvbmc  # noqa: E402
from gpcompose.problems import VBMC_TOY_PROBLEMS as PROBLEMS  # noqa: E402
from gpcompose.problems import vbmc_toy_initial_points  # noqa: E402
from gpcompose.problems.metrics import gskl  # noqa: E402

plt = agg_pyplot()

# Thesis Table 7.1 (gsKL): (BVBMC single run, VBMC median of 15 runs).
THESIS = {
    ("lumpy", 2): (3.12e-3, 6.5e-4),
    ("lumpy", 6): (6.59e-2, 3.5e-2),
    ("lumpy", 10): (1.19e-1, 4.2e-1),
    ("cigar", 2): (8.12e-3, 2.1e-1),
    ("cigar", 6): (5.56e-1, 1.07e-1),
    ("cigar", 10): (1.29, 1.0e-1),
    ("student_t", 2): (2.9e-1, 2.0e-3),
    ("student_t", 6): (1.14e-1, 2.3e-1),
    ("student_t", 10): (2.56e-1, 2.7e-1),
}


def initial_points(seed, dimension):
    """The 10D initial points of run seed `seed` (key 1000 + seed), as a NumPy array."""
    return np.asarray(vbmc_toy_initial_points(jax.random.key(1000 + seed), 10 * dimension, dimension))


def moment_metrics(mean, covariance, target):
    """gsKL, ‖μ − μ₀‖₂ and ‖Σ − Σ₀‖_F/‖Σ₀‖_F of moments (μ, Σ) against the target's exact (μ₀, Σ₀)."""
    return {
        "gskl": float(gskl(mean, covariance, target.mean, target.covariance)),
        "mean_error": float(jnp.linalg.norm(mean - target.mean)),
        "covariance_error": float(jnp.linalg.norm(covariance - target.covariance) / jnp.linalg.norm(target.covariance)),
    }


def run_settings(budget, quick):
    """(budget, `bvbmc.BVBMC` learner): the defaults, or with `quick` a tiny smoke configuration."""
    if not quick:
        return budget, bvbmc.BVBMC()
    algorithm = boosting.Boosting(relbo_steps=10, relbo_samples=16, weight_samples=16, joint_steps=10)
    return 3, bvbmc.BVBMC(
        max_components=4, initial_joint_steps=20, num_candidates=8, search_steps=3, boosting=algorithm
    )


def run(problem, dimension, seed, problem_seed, budget, learner):
    target = PROBLEMS[problem](jax.random.key(problem_seed), dimension)
    jitted = eqx.filter_jit(target.log_density)
    X0 = initial_points(seed, dimension)
    start = time.perf_counter()
    result = bvbmc.fit(
        lambda x: float(jitted(jnp.asarray(x))), X0, key=jax.random.key(seed), budget=budget, learner=learner
    )
    wall = time.perf_counter() - start
    mean, covariance = result.posterior.mean(), result.posterior.covariance()
    return {
        "problem": problem,
        "dimension": dimension,
        "seed": seed,
        **moment_metrics(mean, covariance, target),
        "elbo": float(result.elbo),
        "log_normaliser": float(target.log_normalizer),
        "elbo_sd": float(result.elbo_sd),
        "num_components": int(jnp.sum(result.posterior.mask)),
        "num_evaluations": int(result.X.shape[0] + result.num_failed),
        "wall_s": wall,
        "load_average": os.getloadavg(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dimensions", type=int, nargs="+", default=[2])
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="the JSON is OUTPUT_DIR/NAME.json (default bvbmc_toy)")
    parser.add_argument("--problem-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=100)
    add_output_dir_and_quick(parser)
    arguments = parser.parse_args()
    budget, learner = run_settings(arguments.budget, arguments.quick)
    stem = arguments.name or ("bvbmc_toy_quick" if arguments.quick else "bvbmc_toy")
    path = arguments.output_dir / f"{stem}.json"
    records = json.loads(path.read_text())["records"] if path.exists() else []
    done = {(r["problem"], r["dimension"], r["seed"]) for r in records}
    for dimension in arguments.dimensions:
        for problem in arguments.problems:
            for seed in range(arguments.first_seed, arguments.first_seed + arguments.seeds):
                if (problem, dimension, seed) in done:
                    continue
                record = run(problem, dimension, seed, arguments.problem_seed, budget, learner)
                records.append(record)
                print(json.dumps(record), flush=True)
                output = {
                    "date": utc_timestamp(),
                    "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                    "budget": budget,
                    "records": records,
                }
                write_json(path, output)

    rows = [
        "| problem | D | seeds | median gsKL [min, max] | thesis BVBMC | thesis VBMC "
        "| median ‖Δμ‖ | median ΔΣ (rel.) | median wall (s) |"
    ]
    rows.append("|---|---|---|---|---|---|---|---|---|")
    figure, axis = plt.subplots(figsize=(6, 4))
    for index, ((problem, dimension), (thesis_bvbmc, thesis_vbmc)) in enumerate(THESIS.items()):
        mine = [r for r in records if r["problem"] == problem and r["dimension"] == dimension]
        if not mine:
            continue
        values = np.array([r["gskl"] for r in mine])
        rows.append(
            f"| {problem} | {dimension} | {len(mine)} "
            f"| {np.median(values):.3g} [{values.min():.3g}, {values.max():.3g}] "
            f"| {thesis_bvbmc:.3g} | {thesis_vbmc:.3g} | {np.median([r['mean_error'] for r in mine]):.3g} "
            f"| {np.median([r['covariance_error'] for r in mine]):.3g} | {np.median([r['wall_s'] for r in mine]):.0f} |"
        )
        axis.scatter(np.full(len(values), index), values, color="C0", label="gpcompose" if index == 0 else None)
        axis.scatter([index], [thesis_bvbmc], color="C1", marker="x", label="thesis BVBMC" if index == 0 else None)
        axis.scatter([index], [thesis_vbmc], color="C2", marker="+", label="thesis VBMC" if index == 0 else None)
    axis.set_yscale("log")
    axis.set_xticks(range(len(THESIS)), [f"{p}\nD={d}" for p, d in THESIS], fontsize=6)
    axis.set_ylabel("gsKL")
    axis.legend()
    save_figure(figure, arguments.output_dir / f"{stem}.png")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
