"""Validation of `benchmark_problems.Timing` against the reference posterior of the VSBQ task
`timing` stored in `vsbq/timing.mat` (SVBMC §5.4).

1. Point checks: the log density at `Post.Mode` against `Post.ModeFval` (log joint under the
   uniform box prior), and the log likelihood at `Mode` against `ModeFval`.
2. Adaptive importance sampling (population Monte Carlo, `_reference_sampling.py`) in θ-space:
   an initial t proposal (ν = 5) at `Post.Mean` with scale matrix 4 `Post.Cov`, then rounds
   that fit a Gaussian mixture to the weighted draws by EM and propose from the matching t
   mixture plus 10% of the initial proposal; weights are zero outside the box. The final
   round gives log Z (against `Post.lnZ`), the mean and covariance (against `Post.Mean`,
   `Post.Cov`, differences in posterior SDs) and the 1-D marginals (total variation on 128
   bins of the reference grid against `Post.MarginalPdf`). The posterior has a long ridge
   (w_s, σ_p small, w_m large; the profile log density falls only ~4 below the mode at
   w_s = 0.035): NUTS with a dense mass matrix diverges there and undersamples it (SDs 0.85 of
   the reference's), and a single t proposal reaches an importance-sampling ESS of only 2–17%,
   hence the mixture (ESS about 50%).

Usage:
    python benchmarks/reference_timing.py           # full run (about 10 min on 2 busy cores)
    python benchmarks/reference_timing.py --quick   # smoke run; its numbers mean nothing
Writes `<output-dir>/timing.json` and `<output-dir>/timing.png`.
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
from _common import add_reference_dirs, agg_pyplot, machine_with_load, save_figure, utc_timestamp, write_json  # noqa: E402
from _reference_sampling import StudentTMixture, adaptive_importance_sampling  # noqa: E402
from benchmark_problems import load_timing, load_timing_reference  # noqa: E402

plt = agg_pyplot()

NAMES = ["measurement_weber", "motor_weber", "prior_mean", "prior_sd", "lapse"]
NUM_HISTOGRAM_BINS = 128


def marginal_total_variations(reference, points, weights):
    """½ Σ_bins |P_IS − P_ref| per coordinate on `NUM_HISTOGRAM_BINS` bins of the reference grid,
    with the reference bin masses from the trapezoid rule on `marginal_density`."""
    grid, density = np.asarray(reference.marginal_grid), np.asarray(reference.marginal_density)
    distances = []
    for dimension in range(grid.shape[1]):
        cells = 0.5 * (density[1:, dimension] + density[:-1, dimension]) * np.diff(grid[:, dimension])
        cumulative = np.concatenate([[0.0], np.cumsum(cells)])
        edges = np.linspace(grid[0, dimension], grid[-1, dimension], NUM_HISTOGRAM_BINS + 1)
        reference_mass = np.diff(np.interp(edges, grid[:, dimension], cumulative))
        sampled_mass, _ = np.histogram(points[:, dimension], bins=edges, weights=weights)
        distances.append(0.5 * float(np.sum(np.abs(sampled_mass - reference_mass))))
    return distances


def plot(reference, points, weights, distances, path):
    figure, axes = plt.subplots(1, 5, figsize=(18, 3.5))
    for dimension, axis in enumerate(axes):
        grid, density = reference.marginal_grid[:, dimension], reference.marginal_density[:, dimension]
        support = grid[density > 1e-3 * np.max(density)]
        axis.hist(
            points[:, dimension], bins=100, range=(support[0], support[-1]), weights=weights, density=True, alpha=0.6
        )
        axis.plot(grid, density, "k-", lw=1)
        axis.set_xlim(support[0], support[-1])
        axis.set_title(f"{NAMES[dimension]} (TV {distances[dimension]:.3f})")
    axes[0].legend(["reference (Post.MarginalPdf)", "importance sampling"], fontsize=8)
    save_figure(figure, path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_reference_dirs(parser)
    parser.add_argument("--num-rounds", type=int, default=3, help="adaptation rounds")
    parser.add_argument("--num-per-round", type=int, default=10_000)
    parser.add_argument("--num-proposals", type=int, default=100_000, help="draws of the final proposal")
    parser.add_argument("--num-components", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=200, help="points per vectorised evaluation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.num_rounds, arguments.num_per_round, arguments.num_proposals = 1, 2_000, 2_000
    started = time.perf_counter()
    load_before = os.getloadavg()
    model = load_timing(arguments.data_dir)
    reference = load_timing_reference(arguments.data_dir)
    struct = scipy.io.loadmat(arguments.data_dir / "vsbq" / "timing.mat", squeeze_me=True, struct_as_record=False)["y"]

    mode_value = float(jax.jit(lambda x: model.log_density(x))(reference.mode))
    likelihood_mode_value = float(jax.jit(lambda x: model.log_likelihood(x))(jnp.asarray(struct.Mode, dtype=float)))
    mode_difference = mode_value - float(reference.mode_log_density)
    likelihood_mode_difference = likelihood_mode_value - float(struct.ModeFval)
    print(f"log density at Post.Mode {mode_value:.8f}, Post.ModeFval {float(reference.mode_log_density):.8f}: ", end="")
    print(f"difference {mode_difference:.2e}")
    print(f"log likelihood at Mode {likelihood_mode_value:.8f}, ModeFval {float(struct.ModeFval):.8f}: ", end="")
    print(f"difference {likelihood_mode_difference:.2e}", flush=True)

    reference_mean = np.asarray(reference.reference_mean)
    reference_covariance = np.asarray(reference.reference_covariance)
    reference_sd = np.sqrt(np.diag(reference_covariance))
    log_density = jax.jit(lambda points: jax.lax.map(model.log_density, points, batch_size=arguments.batch_size))
    initial = StudentTMixture([1.0], [reference_mean], [4.0 * reference_covariance])
    points, weights, mean, covariance, importance = adaptive_importance_sampling(
        log_density,
        initial,
        np.random.default_rng(arguments.seed),
        arguments.num_rounds,
        arguments.num_per_round,
        arguments.num_proposals,
        arguments.num_components,
    )
    log_z_gap = importance["log_normaliser"] - float(reference.log_normalizer)
    mean_gap = (mean - reference_mean) / reference_sd
    sd_ratio = np.sqrt(np.diag(covariance)) / reference_sd
    distances = marginal_total_variations(reference, points, weights)
    print(
        f"IS: log Z = {importance['log_normaliser']:.4f} ± {importance['standard_error_delta_method']:.4f} "
        f"(batch SE {importance['standard_error_batches']:.4f}; Post.lnZ {float(reference.log_normalizer):.4f}, "
        f"difference {log_z_gap:+.4f}); ESS {importance['effective_sample_size']:.0f} of {importance['num_proposals']}"
    )
    print(f"    adaptation ESS per round {np.round(importance['adaptation_effective_sample_sizes'])}")
    print(f"    (mean − Post.Mean)/sd = {np.round(mean_gap, 3)}; sd / Post sd = {np.round(sd_ratio, 3)}")
    print(f"    marginal TV against Post.MarginalPdf ({NUM_HISTOGRAM_BINS} bins) = {np.round(distances, 4)}")

    summary = {
        "problem": "Timing (benchmarks/benchmark_problems), vsbq/timing.mat, D = 5, uniform box prior",
        "parameter_names": NAMES,
        "mode": {
            "log_density_at_post_mode": mode_value,
            "post_mode_fval": float(reference.mode_log_density),
            "difference": mode_difference,
            "log_likelihood_at_mode": likelihood_mode_value,
            "mode_fval": float(struct.ModeFval),
            "likelihood_difference": likelihood_mode_difference,
        },
        "importance_sampling": importance,
        "mean": dict(zip(NAMES, mean.tolist())),
        "mean_minus_post_mean_in_sd": dict(zip(NAMES, mean_gap.tolist())),
        "sd_over_post_sd": dict(zip(NAMES, sd_ratio.tolist())),
        "marginal_total_variation": dict(zip(NAMES, distances)),
        "num_histogram_bins": NUM_HISTOGRAM_BINS,
        "post_ln_z": float(reference.log_normalizer),
        "log_normaliser_difference": log_z_gap,
        "quick": arguments.quick,
        "seed": arguments.seed,
        "wall_time_s": time.perf_counter() - started,
        "machine": machine_with_load(load_before),
        "date": utc_timestamp("seconds"),
    }
    write_json(arguments.output_dir / "timing.json", summary, indent=2)
    plot(reference, points, weights, distances, arguments.output_dir / "timing.png")
    print(f"wrote {arguments.output_dir}/timing.{{json,png}} in {summary['wall_time_s']:.0f} s")


if __name__ == "__main__":
    main()
