"""Acceptance ratios of GP and square-root-GP (SRGP) posterior samples under approximate
bounds (Nguyen, Deisenroth & Osborne 2021, Table 1).

For each function and seed: N_train = `--train-per-dimension`·d uniform points in the
unit cube (inputs scaled to [0, 1]^d, outputs standardised, noise-free), a GP (or the SRGP
with c = f⁺ + 2η₊) fitted by ML-II (`bo.fit_surrogate`), M = 200 pathwise samples with
l = 100 random features, their extrema by `sampling.sample_extrema`, and the fraction
accepted by the per-coordinate 2-sd rule. The functions are minimisation benchmarks and the
document maximises, so by default the sampled function is −f with f⁺ = −min f, f⁻ = −max f
(exact, in standardised units); the document does not say how it negates, and
`--orientation as_given` samples f itself with f⁺ = max f, f⁻ = min f instead. η₊ = η₋ = 0.5d
or 1d (the table header's η, standardised units). The SRGP's prior centre is `--root-center`
(`bounded.root_prior_mean`: "data", f prior mean 0, the library's default; or "bound", f prior
mean c).
The document does not state N_train; the default 5d is ours. Seeds run vmapped.

Usage:
    python benchmarks/bes_acceptance.py --seeds 30
    python benchmarks/bes_acceptance.py --seeds 10 --orientation as_given --root-center bound
    python benchmarks/bes_acceptance.py --quick
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
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
# Document Table 1: (η = 0.5d: GP, SRGP), (η = 1d: GP, SRGP), mean (sd) over 30 runs.
DOCUMENT = {
    "branin": ((".39 (.2)", ".89 (.2)"), (".62 (.1)", ".96 (.2)")),
    "rosenbrock": ((".52 (.2)", ".88 (.2)"), (".62 (.2)", ".95 (.2)")),
    "mccormick": ((".65 (.1)", ".91 (.2)"), (".69 (.1)", "1.0 (.1)")),
    "hartmann3": ((".08 (.1)", ".40 (.3)"), (".31 (.2)", ".76 (.2)")),
    "alpine1": ((".0 (.0)", ".13 (.1)"), (".10 (.1)", ".30 (.2)")),
    "gsobol": ((".01 (.1)", ".46 (.3)"), (".14 (.2)", ".74 (.4)")),
}


@eqx.filter_jit
def acceptance_ratios(keys, function, eta, num_train, square_root, settings, negated=True, root_center="data"):
    """Per key (vmapped over seeds): the fraction of accepted samples, and the fractions
    whose maximum alone (|g⁺ − f⁺| ≤ 2η₊) and whose minimum alone are within 2 sd."""

    def one(key):
        data_key, sample_key, search_key = jax.random.split(key, 3)
        X, y, f_plus, f_minus, _ = standardised_training_set(data_key, function, num_train, negated)
        bounds = bounded.Bounds(f_plus, f_minus, eta, eta)
        offset = bounded.square_root_offset(bounds) if square_root else None
        _, extrema = samples_and_extrema(sample_key, search_key, X, y, offset, settings, root_center)
        both = bounded.accepted(bounds, extrema)
        upper_ok = jnp.abs(extrema.value_max - f_plus) <= 2 * eta
        lower_ok = jnp.abs(extrema.value_min - f_minus) <= 2 * eta
        return jnp.stack([jnp.mean(mask.astype(y.dtype)) for mask in (both, upper_ok, lower_ok)])

    return jax.vmap(one)(keys)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--functions", default=",".join(FUNCTIONS))
    parser.add_argument("--train-per-dimension", type=int, default=5)
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--orientation", choices=("negated", "as_given"), default="negated")
    parser.add_argument("--root-center", choices=("data", "bound"), default="data")
    add_synthetic_function_options(parser)
    args = parser.parse_args()
    settings = (200, 100, args.candidates, args.starts, args.steps)
    seeds = args.seeds
    if args.quick:
        settings, seeds = (8, 20, 32, 2, 5), 2
    functions = optimization_functions()
    records = []
    start = time.time()
    for name in args.functions.split(","):
        function = functions[name]
        dimension = function.dimension
        keys = jax.random.split(jax.random.key(2021), seeds)
        for eta_per_dimension in (0.5, 1.0):
            eta = jnp.asarray(eta_per_dimension * dimension)
            for model in ("GP", "SRGP"):
                tic = time.time()
                ratios = acceptance_ratios(
                    keys,
                    function,
                    eta,
                    args.train_per_dimension * dimension,
                    model == "SRGP",
                    settings,
                    args.orientation == "negated",
                    args.root_center,
                )
                ratios, upper_ok, lower_ok = np.asarray(jax.block_until_ready(ratios)).T
                records.append(
                    {
                        "function": name,
                        "eta_per_dimension": eta_per_dimension,
                        "model": model,
                        "ratios": ratios.tolist(),
                        "max_within_2sd": upper_ok.tolist(),
                        "min_within_2sd": lower_ok.tolist(),
                        "mean": float(ratios.mean()),
                        "sd": float(ratios.std()),
                        "seconds": time.time() - tic,
                    }
                )
                print(
                    f"{name} η={eta_per_dimension}d {model}: {ratios.mean():.2f} ({ratios.std():.2f}); "
                    f"max within 2 sd {upper_ok.mean():.2f}, min within 2 sd {lower_ok.mean():.2f}",
                    flush=True,
                )
    total = time.time() - start
    output = Path(args.output_dir)
    meta = {
        "seeds": seeds,
        "settings": dict(zip(("samples", "features", "candidates", "starts", "steps"), settings)),
        "train_per_dimension": args.train_per_dimension,
        "orientation": args.orientation,
        "root_center": args.root_center,
        "quick": args.quick,
        **host_summary(),
        "wall_seconds": total,
    }
    stem = "bes_acceptance" + ("" if args.orientation == "negated" else "_as_given")
    stem += ("" if args.root_center == "data" else "_bound_centre") + ("_quick" if args.quick else "")
    write_json(output / f"{stem}.json", {"meta": meta, "records": records})

    def cell(name, eta, model):
        record = next(r for r in records if (r["function"], r["eta_per_dimension"], r["model"]) == (name, eta, model))
        return f"{record['mean']:.2f} ({record['sd']:.2f})"

    names = [r["function"] for r in records][::4]
    print("\n| function | η=0.5d GP | SRGP | doc GP | doc SRGP | η=1d GP | SRGP | doc GP | doc SRGP |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        (half_gp, half_sr), (one_gp, one_sr) = DOCUMENT[name]
        row = [cell(name, 0.5, "GP"), cell(name, 0.5, "SRGP"), half_gp, half_sr]
        row += [cell(name, 1.0, "GP"), cell(name, 1.0, "SRGP"), one_gp, one_sr]
        print(f"| {name} d={functions[name].dimension} | " + " | ".join(row) + " |")
    print(f"\nwall time {total:.0f} s, {seeds} seeds")
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
    for axis, eta in zip(axes, (0.5, 1.0)):
        positions = np.arange(len(names))
        for offset, model in ((-0.2, "GP"), (0.2, "SRGP")):
            means = [
                next(
                    r["mean"] for r in records if (r["function"], r["eta_per_dimension"], r["model"]) == (n, eta, model)
                )
                for n in names
            ]
            sds = [
                next(r["sd"] for r in records if (r["function"], r["eta_per_dimension"], r["model"]) == (n, eta, model))
                for n in names
            ]
            axis.bar(positions + offset, means, 0.4, yerr=sds, label=model)
        axis.set_xticks(positions, names, rotation=30)
        axis.set_title(f"η = {eta}d")
    axes[0].set_ylabel("acceptance ratio")
    axes[0].legend()
    save_figure(figure, output / f"{stem}.png")


if __name__ == "__main__":
    main()
