"""BVBMC on the contamination-source inverse problem of the thesis §7.3 beside its Table 7.2, with a
NUTS reference posterior.

- **Target**: `benchmark_problems.ContaminationSource()` (its docstring has the model): the heat
  equation u_t = u_xx + q₀ exp(−(x − x₀)²/(2ρ²)) 1[t ≤ t_s] on [0, 1] with Neumann ends, u observed
  at x ∈ {0, 1} and 5 times with N(0, 0.1²) noise (fixed JAX key 100; the thesis's Julia data differ),
  Student-t likelihood (α = β = 10⁻²), priors x₀ ~ U(0, 1), t_s ~ U(0, 0.4), q₀ ~ HalfCauchy(10),
  ρ ~ HalfCauchy(0.1), in the warped space z (x₀ = σ(z₁), t_s = 0.4σ(z₂), q₀ = e^{z₃}, ρ = e^{z₄}).
  True θ = (0.23, 0.3, 20/π, 0.05).
- **BVBMC** (thesis §7.3 setup), one run per seed: 40 prior draws (key 1000 + seed) mapped to z as
  the initial design; initial kernel product Matérn-3/2 (lengthscales the sd of the initial z,
  outputscale −C/2 as the library's default start; ML-II by `bvbmc.init`); then by ask/tell
  40 MMLT acquisitions (v_reg = 10⁻², the code's pre-phase) followed by 100 iterations choosing
  PROP or MMLT at random (v_reg = 10⁻¹); joint update every 20 boosting steps; 180 evaluations.
  The two phases are two `bvbmc.BVBMC` learners on one state (states hold no options: `ask`/`tell`
  compile once per phase). Every other constant is at its default (`bvbmc.BVBMC`,
  `boosting.Boosting`). Summaries from 10⁵ draws of the mixture mapped to θ.
- **Reference**: numpyro NUTS (dense mass, target acceptance 0.9) on U(z) = −log p(z), `--mcmc-chains`
  chains from prior draws, `--mcmc-warmup` + `--mcmc-samples` each; split R-hat and ESS; log Z by
  importance sampling with a multivariate t₅ proposal fitted to the NUTS draws
  (`benchmarks/_reference_sampling.py`).
- **Reported** per parameter in θ: the truth, posterior means and 70 % HPD intervals (shortest
  interval holding 70 % of the 1-D marginal's draws) of BVBMC and NUTS, the thesis's BVBMC and
  emcee numbers, and whether the truth is inside each HPD; BVBMC's ELBO beside the reference log Z.

Usage:
    python benchmarks/bvbmc_contamination.py --seeds 1
    python benchmarks/bvbmc_contamination.py --quick
Writes `<output-dir>/bvbmc_contamination.json` and `.png` (`_quick` with `--quick`) and prints the table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import add_output_dir_and_quick, agg_pyplot, save_figure, utc_timestamp, write_json  # noqa: E402
from _reference_sampling import importance_sampling, run_nuts  # noqa: E402
from benchmark_problems import TRUE_PARAMETERS, ContaminationSource  # noqa: E402

from gpcompose import boosting, bvbmc  # noqa: E402
from gpcompose.kernels import ProductMatern  # noqa: E402
from gpcompose.parameters import Positive  # noqa: E402

plt = agg_pyplot()

NAMES = ("x0", "t_s", "q0", "rho")
HPD_MASS = 0.7
NUM_POSTERIOR_DRAWS = 100_000
# Thesis Table 7.2: mean and 70 % HPD of BVBMC and of emcee (10 walkers × 10,000 steps, 1,000 burn-in).
THESIS = {
    "bvbmc_mean": (0.328, 0.213, 5.435, 0.140),
    "emcee_mean": (0.352, 0.206, 10.228, 0.218),
    "bvbmc_hpd": ((1.1e-4, 0.43), (0.12, 0.36), (1.0, 6.7), (2.7e-3, 0.1)),
    "emcee_hpd": ((3.4e-4, 0.45), (0.08, 0.33), (0.4, 10.3), (2.1e-3, 0.1)),
}


def highest_density_interval(samples, mass=HPD_MASS):
    """The shortest interval [s_i, s_{i+m−1}] holding m = ⌈mass·n⌉ of the sorted 1-D `samples`."""
    ordered = np.sort(samples)
    count = int(np.ceil(mass * ordered.shape[0]))
    widths = ordered[count - 1 :] - ordered[: ordered.shape[0] - count + 1]
    start = int(np.argmin(widths))
    return float(ordered[start]), float(ordered[start + count - 1])


def summaries(parameters):
    """Per parameter: mean and 70 % HPD of draws θ (N, 4), and whether the truth is inside."""
    out = {}
    for index, name in enumerate(NAMES):
        low, high = highest_density_interval(parameters[:, index])
        out[name] = {
            "mean": float(np.mean(parameters[:, index])),
            "hpd": (low, high),
            "true_inside": bool(low <= TRUE_PARAMETERS[index] <= high),
        }
    return out


def run_settings(quick):
    """(budgets of the two phases, the learner of each phase, without its initial kernel): the
    thesis's, or a smoke run."""
    pre = dict(acquisitions=(bvbmc.MomentMatchedLogTransform(),), variance_threshold=1e-2)
    main = dict(acquisitions=(bvbmc.Prospective(), bvbmc.MomentMatchedLogTransform()), variance_threshold=1e-1)
    if not quick:
        algorithm = boosting.Boosting(joint_update_every=20)
        return (40, 100), (bvbmc.BVBMC(boosting=algorithm, **pre), bvbmc.BVBMC(boosting=algorithm, **main))
    tiny = dict(max_components=4, initial_joint_steps=20, num_candidates=8, search_steps=3)
    algorithm = boosting.Boosting(
        relbo_steps=10, relbo_samples=16, weight_samples=16, joint_steps=10, joint_update_every=20
    )
    return (2, 2), (bvbmc.BVBMC(boosting=algorithm, **pre, **tiny), bvbmc.BVBMC(boosting=algorithm, **main, **tiny))


def initial_kernel(z, y):
    """Product Matérn-3/2 started as `bvbmc.BVBMC`'s default Matérn-5/2 kernel is:
    lengthscales the sd of the inputs, outputscale −C/2 with C = ỹ_min − (ỹ_max − ỹ_min) of the
    normalised outputs (1 if C ≥ 0)."""
    scaled = (y - np.mean(y)) / np.std(y, ddof=1)
    constant = scaled.min() - (scaled.max() - scaled.min())
    outputscale = -0.5 * constant if constant < 0 else 1.0
    return ProductMatern(1.5, lengthscale=Positive(jnp.asarray(np.std(z, axis=0))), variance=Positive(outputscale))


def run_bvbmc(problem, seed, budgets, phase_learners):
    log_density = eqx.filter_jit(lambda model, z: model.log_density(z))
    z0 = np.asarray(problem.to_unconstrained(problem.sample_prior(jax.random.key(1000 + seed), 40)))
    y0 = np.array([float(log_density(problem, z)) for z in z0])
    start = time.perf_counter()
    kernel = initial_kernel(z0, y0)
    learners = [dataclasses.replace(learner, kernel=kernel) for learner in phase_learners]
    state = learners[0].init(z0, y0, budget=sum(budgets), key=jax.random.key(seed))
    loop_key = jax.random.fold_in(jax.random.key(seed), 1)
    for learner, budget in zip(learners, budgets):
        ask, tell = eqx.filter_jit(learner.ask), eqx.filter_jit(learner.tell)
        for _ in range(budget):
            x, _ = ask(state, jax.random.fold_in(loop_key, int(state.evaluations.num_evaluations)))
            state, _ = tell(state, x, log_density(problem, x))
    result = learners[-1].result(state)
    wall = time.perf_counter() - start
    z = np.asarray(result.posterior.sample(jax.random.key(10_000 + seed), NUM_POSTERIOR_DRAWS))
    theta = np.asarray(problem.to_constrained(z))
    return {
        "seed": seed,
        "summaries": summaries(theta),
        "elbo": float(result.elbo),
        "elbo_sd": float(result.elbo_sd),
        "num_components": int(jnp.sum(result.posterior.mask)),
        "num_evaluations": int(result.X.shape[0] + result.num_failed),
        "num_failed": result.num_failed,
        "best_log_density": float(np.max(np.asarray(result.y))),
        "wall_s": wall,
        "load_average": os.getloadavg(),
    }, theta


def run_reference(problem, chains, warmup, samples, num_proposals):
    start = time.perf_counter()
    initial = problem.to_unconstrained(problem.sample_prior(jax.random.key(7), chains))
    nuts = run_nuts(lambda z: -problem.log_density(z), jax.random.key(8), initial, warmup, samples)
    draws = nuts.pop("samples")
    flat = draws.reshape(-1, draws.shape[-1])
    batch_density = jax.jit(jax.vmap(problem.log_density))
    importance = importance_sampling(
        batch_density,
        flat,
        lambda z: problem.to_constrained(z),
        np.random.default_rng(9),
        num_proposals,
        min(num_proposals, 5000),
    )
    importance.pop("weighted_mean")
    theta = np.asarray(problem.to_constrained(flat))
    record = {
        **{key: value.tolist() if isinstance(value, np.ndarray) else value for key, value in nuts.items()},
        "importance_sampling": importance,
        "summaries": summaries(theta),
        "wall_s": time.perf_counter() - start,
        "load_average": os.getloadavg(),
    }
    return record, theta


def interval(pair):
    return f"({pair[0]:.2g}, {pair[1]:.2g})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--mcmc-chains", type=int, default=4)
    parser.add_argument("--mcmc-warmup", type=int, default=500)
    parser.add_argument("--mcmc-samples", type=int, default=1500)
    parser.add_argument("--importance-proposals", type=int, default=50_000)
    add_output_dir_and_quick(parser)
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.mcmc_chains, arguments.mcmc_warmup, arguments.mcmc_samples = 2, 50, 50
        arguments.importance_proposals = 2000
    budgets, phase_learners = run_settings(arguments.quick)
    problem = ContaminationSource()

    suffix = "_quick" if arguments.quick else ""
    output = {
        "date": utc_timestamp(),
        "command": " ".join(["python", *sys.argv]),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "load_average_start": os.getloadavg(),
        "true_parameters": TRUE_PARAMETERS,
        "observations": np.asarray(problem.observations).tolist(),
        "budgets": budgets,
        "thesis_table_7_2": THESIS,
        "records": [],
    }

    def save():  # after every stage, so that a stopped run keeps what it finished
        output["load_average_end"] = os.getloadavg()
        write_json(arguments.output_dir / f"bvbmc_contamination{suffix}.json", output)

    reference, reference_theta = run_reference(
        problem, arguments.mcmc_chains, arguments.mcmc_warmup, arguments.mcmc_samples, arguments.importance_proposals
    )
    output["reference"] = reference
    save()
    print(json.dumps(reference), flush=True)
    records, bvbmc_theta = output["records"], []
    for seed in range(arguments.seeds):
        record, theta = run_bvbmc(problem, seed, budgets, phase_learners)
        records.append(record)
        bvbmc_theta.append(theta)
        save()
        print(json.dumps(record), flush=True)

    rows = [
        "| | " + " | ".join(NAMES) + " |",
        "|---|" + "---|" * len(NAMES),
        "| true | " + " | ".join(f"{value:.3f}" for value in TRUE_PARAMETERS) + " |",
    ]
    for record in records:
        s = record["summaries"]
        rows.append(f"| BVBMC seed {record['seed']} mean | " + " | ".join(f"{s[n]['mean']:.3f}" for n in NAMES) + " |")
        rows.append(
            f"| BVBMC seed {record['seed']} 70% HPD (true inside?) | "
            + " | ".join(f"{interval(s[n]['hpd'])} {'yes' if s[n]['true_inside'] else 'NO'}" for n in NAMES)
            + " |"
        )
    s = reference["summaries"]
    rows.append("| NUTS mean | " + " | ".join(f"{s[n]['mean']:.3f}" for n in NAMES) + " |")
    rows.append(
        "| NUTS 70% HPD (true inside?) | "
        + " | ".join(f"{interval(s[n]['hpd'])} {'yes' if s[n]['true_inside'] else 'NO'}" for n in NAMES)
        + " |"
    )
    for label, key in (("thesis BVBMC", "bvbmc"), ("thesis emcee", "emcee")):
        rows.append(f"| {label} mean | " + " | ".join(f"{value:.3f}" for value in THESIS[f"{key}_mean"]) + " |")
        rows.append(f"| {label} 70% HPD | " + " | ".join(interval(pair) for pair in THESIS[f"{key}_hpd"]) + " |")
    importance = reference["importance_sampling"]
    rows.append(
        f"\nreference log Z = {importance['log_normaliser']:.3f} ± {importance['standard_error_delta_method']:.3f}; "
        + "; ".join(f"seed {r['seed']} ELBO {r['elbo']:.3f} ± {r['elbo_sd']:.3f}" for r in records)
    )

    figure, axes = plt.subplots(1, 4, figsize=(13, 3.2))
    for index, (axis, name) in enumerate(zip(axes, NAMES)):
        values = reference_theta[:, index]
        upper = np.quantile(values, 0.98)
        bins = np.linspace(0.0, upper, 60)
        axis.hist(values, bins=bins, density=True, histtype="step", color="k", label="NUTS")
        for seed, theta in enumerate(bvbmc_theta):
            axis.hist(theta[:, index], bins=bins, density=True, histtype="step", label=f"BVBMC seed {seed}")
        axis.axvline(TRUE_PARAMETERS[index], color="r", linestyle="--", label="true")
        axis.set_title(name)
    axes[0].legend(fontsize=7)
    save_figure(figure, arguments.output_dir / f"bvbmc_contamination{suffix}.png")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
