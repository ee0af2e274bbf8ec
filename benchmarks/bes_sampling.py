"""Quality of weighted GP and square-root-GP (SRGP) posterior samples under approximate
bounds (Nguyen, Deisenroth & Osborne 2021, §5 "sampling", Fig. 3/15).

For each function, N_train ∈ {3d, 5d, 10d, 20d} and seed: N_train uniform points in the unit
cube (inputs scaled to [0, 1]^d, outputs standardised by the training mean and sd,
noise-free), a GP and an SRGP (c = f⁺ + 2η₊) fitted by ML-II (`bo.fit_surrogate`), M = 200
pathwise samples of each with l = 100 random features, their extrema
(`sampling.sample_extrema`), and five schemes:

- **GP** (Wilson et al. 2020): 100 of the 200 GP samples (the first 100: they are i.i.d.),
  equally weighted;
- **w-GP f⁺**, **w-GP f⁺f⁻**: the GP samples, log weights log π(g_m) (document eq. 4) from f⁺
  alone or from both bounds, the top M' = 100 by weight, weighted by softmax of their log
  weights (eq. 3, normalised);
- **w-SRGP f⁺**, **w-SRGP f⁺f⁻**: the same with the SRGP samples.

Metrics on 1000 uniform test points in standardised units: **estimate RMSE**, the RMSE of the
weighted estimate ĝ = Σ π_m g_m / Σ π_m over the kept samples against the true function, and
**sample RMSE**, the π-weighted mean over the kept samples of each sample's own RMSE. The
document reports "the RMSE vs the true f" of the top 100 samples without saying which of the
two it means, nor its test points; both are ours.

The sampled function is −f (the document maximises; the benchmarks are minimisations), with
exact bounds f⁺ = −min f, f⁻ = −max f in standardised units and the document's default
looseness η₊² = 0.02d, η₋² = 0.5d (App. C.2). Seeds run vmapped, `--seed-batch` at a time
(the keys are split from one key for all seeds, so a seed's numbers do not depend on the batch
size): 30 seeds vmapped at once were OOM-killed at 22 GB on a 24 GB machine.

Usage:
    python benchmarks/bes_sampling.py --seeds 10 --functions branin,hartmann3
    python benchmarks/bes_sampling.py --quick
Writes `<output-dir>/bes_sampling.json` and `.png` (`_quick` with `--quick`) and prints the table.
"""

import os

# XLA's multi-threaded Eigen kernels deadlocked this script on 2 CPU cores (idle, every thread
# waiting, in the hartmann3 and gsobol N = 20d cells; 2026-11-25, jax 0.10.2); single-threaded
# Eigen ran the same cell in 74 s. Set before jax creates its backend.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bounded_samples import samples_and_extrema, standardised_training_set  # noqa: E402
from _common import add_synthetic_function_options, agg_pyplot, host_summary, save_figure, write_json  # noqa: E402

from gpcompose import bounded  # noqa: E402
from gpcompose.problems import optimization_functions  # noqa: E402

plt = agg_pyplot()

FUNCTIONS = ("branin", "rosenbrock", "mccormick", "hartmann3", "alpine1", "gsobol")
TRAIN_PER_DIMENSION = (3, 5, 10, 20)
SCHEMES = ("GP", "w-GP f⁺", "w-GP f⁺f⁻", "w-SRGP f⁺", "w-SRGP f⁺f⁻")
NUM_KEPT = 100  # M' of the document
NUM_TEST = 1000


def kept_rmse(samples, log_weights, truth, X_test):
    """(estimate RMSE, sample RMSE) of the `NUM_KEPT` samples with the largest log weights."""
    _, kept = jax.lax.top_k(log_weights, NUM_KEPT)
    weights = jax.nn.softmax(log_weights[kept])
    values = samples(X_test)[kept]  # (M', Q)
    estimate = weights @ values
    per_sample = jnp.sqrt(jnp.mean((values - truth[None, :]) ** 2, axis=1))
    return jnp.sqrt(jnp.mean((estimate - truth) ** 2)), weights @ per_sample


@eqx.filter_jit
def scheme_rmse(keys, function, num_train, settings):
    """Per key (vmapped over seeds): an array (schemes, 2) of (estimate RMSE, sample RMSE)."""
    num_samples = settings[0]
    dimension = function.dimension

    def one(key):
        data_key, test_key, gp_key, root_key, search_key = jax.random.split(key, 5)
        X, y, f_plus, f_minus, values = standardised_training_set(data_key, function, num_train)
        X_test = jax.random.uniform(test_key, (NUM_TEST, dimension))
        truth = values(X_test)
        eta_plus, eta_minus = jnp.sqrt(0.02 * dimension), jnp.sqrt(0.5 * dimension)
        upper_only = bounded.Bounds(f_plus, None, eta_plus, None)
        both = bounded.Bounds(f_plus, f_minus, eta_plus, eta_minus)
        rows = []
        for offset, sample_key in ((None, gp_key), (bounded.square_root_offset(upper_only), root_key)):
            samples, extrema = samples_and_extrema(sample_key, search_key, X, y, offset, settings)
            if offset is None:  # plain GP: equal weights, so the first M' samples
                rows.append(kept_rmse(samples, -jnp.arange(num_samples, dtype=y.dtype), truth, X_test))
            for bounds in (upper_only, both):
                rows.append(kept_rmse(samples, bounded.log_weights(bounds, extrema), truth, X_test))
        return jnp.asarray(rows)

    return jax.vmap(one)(keys)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--seed-batch", type=int, default=10, help="seeds vmapped at once (memory)")
    parser.add_argument("--functions", default=",".join(FUNCTIONS))
    parser.add_argument("--train-per-dimension", default=",".join(map(str, TRAIN_PER_DIMENSION)))
    parser.add_argument("--candidates", type=int, default=500)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    add_synthetic_function_options(parser)
    args = parser.parse_args()
    if args.seed_batch < 1:
        parser.error(f"--seed-batch must be at least 1, got {args.seed_batch}")
    settings = (200, 100, args.candidates, args.starts, args.steps)
    seeds, train_sizes = args.seeds, [int(n) for n in args.train_per_dimension.split(",")]
    if args.quick:
        settings, seeds, train_sizes = (NUM_KEPT + 4, 20, 32, 2, 5), 2, train_sizes[:1]
    functions = optimization_functions()
    records = []
    start = time.time()
    output = Path(args.output_dir)
    stem = "bes_sampling_quick" if args.quick else "bes_sampling"

    def save(wall_seconds):  # after every cell, so that a stopped run keeps what is done
        meta = {
            "command": " ".join(["python", "benchmarks/bes_sampling.py", *sys.argv[1:]]),
            "seeds": seeds,
            "seed_batch": args.seed_batch,
            "settings": dict(zip(("samples", "features", "candidates", "starts", "steps"), settings)),
            "quick": args.quick,
            **host_summary(load_average=False),
            "wall_seconds": wall_seconds,
        }
        write_json(output / f"{stem}.json", {"meta": meta, "records": records})

    for name in args.functions.split(","):
        function = functions[name]
        keys = jax.random.split(jax.random.key(2021), seeds)
        for per_dimension in train_sizes:
            tic = time.time()
            values = np.concatenate(
                [
                    np.asarray(
                        scheme_rmse(
                            keys[first : first + args.seed_batch],
                            function,
                            per_dimension * function.dimension,
                            settings,
                        )
                    )
                    for first in range(0, seeds, args.seed_batch)
                ]
            )
            for index, scheme in enumerate(SCHEMES):
                estimate, sample = values[:, index, 0], values[:, index, 1]
                records.append(
                    {
                        "function": name,
                        "dimension": function.dimension,
                        "train_per_dimension": per_dimension,
                        "scheme": scheme,
                        "estimate_rmse": estimate.tolist(),
                        "sample_rmse": sample.tolist(),
                        "seconds": time.time() - tic,
                        "load_average": os.getloadavg(),
                    }
                )
            medians = ", ".join(f"{s} {np.median(values[:, i, 0]):.3f}" for i, s in enumerate(SCHEMES))
            print(f"{name} N={per_dimension}d ({time.time() - tic:.0f} s): estimate RMSE {medians}", flush=True)
            save(time.time() - start)
    total = time.time() - start
    save(total)

    def lookup(name, per_dimension, scheme, metric):
        record = next(
            r
            for r in records
            if (r["function"], r["train_per_dimension"], r["scheme"]) == (name, per_dimension, scheme)
        )
        return np.asarray(record[metric])

    names = list(dict.fromkeys(r["function"] for r in records))
    for metric in ("estimate_rmse", "sample_rmse"):
        print(f"\n{metric}: median (interquartile range) over {seeds} seeds, standardised units")
        print("| function | N_train | " + " | ".join(SCHEMES) + " |")
        print("|---|---|" + "---|" * len(SCHEMES))
        for name in names:
            for per_dimension in train_sizes:
                cells = []
                for scheme in SCHEMES:
                    values = lookup(name, per_dimension, scheme, metric)
                    q1, q2, q3 = np.percentile(values, [25, 50, 75])
                    cells.append(f"{q2:.3f} [{q1:.3f}, {q3:.3f}]")
                print(f"| {name} d={functions[name].dimension} | {per_dimension}d | " + " | ".join(cells) + " |")
    print(f"\nwall time {total:.0f} s, {seeds} seeds")

    figure, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), squeeze=False)
    for axis, name in zip(axes[0], names):
        for scheme in SCHEMES:
            medians = [np.median(lookup(name, n, scheme, "estimate_rmse")) for n in train_sizes]
            axis.plot(train_sizes, medians, marker="o", label=scheme)
        axis.set_xlabel("N_train / d")
        axis.set_title(f"{name} (d = {functions[name].dimension})")
        axis.set_yscale("log")
    axes[0][0].set_ylabel("median RMSE of the weighted estimate")
    axes[0][-1].legend(fontsize=7)
    save_figure(figure, output / f"{stem}.png")


if __name__ == "__main__":
    main()
