"""Bayesian optimisation with approximate bounds (Nguyen, Deisenroth & Osborne 2021,
Fig. 4/16 and Sec. 5): simple regret of BES± (f⁺ and f⁻), BES+ (f⁺ only), EI, UCB, TS,
MES, ERM (f⁺) and random search on the document's synthetic functions.

Every function is minimised as the maximisation of −f, so f⁺ = −min f and f⁻ = −max f
(exact bounds; η at the document's defaults η₊² = 0.02d, η₋² = 0.5d in standardised
units). Budget: max(d, 2) uniform initial points (the document: d) plus 10d iterations.
Simple regret after n evaluations: min_{i ≤ n} f(x_i) − min f. The target is
JAX-traceable, so each (function, method) is one `gpcompose.run_traceable` vmapped over the seeds.
Sample counts and search settings are reduced from the defaults (`--samples`, …) to fit
a 2-core CPU; the document uses M = 200.

Misspecified bounds (document Sec. 5, Fig. 6; `--misspecification`, values of η²): each seed
gets f⁺ = −min f + s₊ η σ_f and f⁻ = −max f + s₋ η σ_f with independent random signs s = ±1
(the main text's Bernoulli sign; App. C.4's N(0, η²) offset is the other reading), σ_f the sd of
f over 10 000 uniform points of the box (so η is in standardised units, as in the document).
The model's looseness stays at the defaults (the document does not say whether it equals η).
Methods without bounds do not depend on η² and run once, in the η² = 0 cell.

Each (function, method, η²) cell is one record of `<output-dir>/<name>.json`, rewritten after
every cell; a rerun skips the cells the file already has (delete it, or use another `--name`,
to start over), so a long grid can be stopped and resumed. `--table` prints the final-regret
table of the file without running anything.

Usage:
    python benchmarks/bes_regret.py --functions branin,forrester --seeds 10
    python benchmarks/bes_regret.py --functions forrester --misspecification 0,0.3,0.5,1 --methods "BES±,ERM"
    python benchmarks/bes_regret.py --table
    python benchmarks/bes_regret.py --quick
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import add_synthetic_function_options, agg_pyplot, host_summary, save_figure, write_json  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import bo  # noqa: E402
from gpcompose.problems import optimization_functions  # noqa: E402

plt = agg_pyplot()

METHODS = {  # name: (acquisition, uses f⁺, uses f⁻)
    "BES±": (bo.BoundedEntropySearch, True, True),
    "BES+": (bo.BoundedEntropySearch, True, False),
    "EI": (bo.ExpectedImprovement, False, False),
    "UCB": (bo.UpperConfidenceBound, False, False),
    "TS": (bo.ThompsonSampling, False, False),
    "MES": (bo.MaxValueEntropySearch, False, False),
    "ERM": (bo.ExpectedRegretMinimization, True, False),
    "random": (bo.RandomSearch, False, False),
}
# `bo.BO` fields; the others are acquisitions'
SEARCH_SETTINGS = ("num_candidates", "num_starts", "search_steps", "extrema_steps")


def make_learner(method, settings):
    """The `bo.BO` of `method`: its acquisition takes those of `settings` that it has as fields."""
    acquisition = METHODS[method][0]
    names = {field.name for field in dataclasses.fields(acquisition)}
    search = {name: settings[name] for name in SEARCH_SETTINGS}
    return bo.BO(acquisition=acquisition(**{k: v for k, v in settings.items() if k in names}), **search)


def output_scale(function, num_points=10_000):
    """σ_f: the sd of f over `num_points` uniform points of its box (the unit of η)."""
    lower, upper = jnp.asarray(function.lower), jnp.asarray(function.upper)
    u = jax.random.uniform(jax.random.key(0), (num_points, function.dimension), lower.dtype)
    return float(jnp.std(jax.vmap(function)(lower + (upper - lower) * u)))


def run_method(function, method, seeds, settings, eta_squared=0.0):
    """Simple regret (seeds × evaluations) of one method, all seeds as one vmapped `run_traceable`."""
    _, use_plus, use_minus = METHODS[method]
    learner = make_learner(method, settings)
    dimension = function.dimension
    offset = math.sqrt(eta_squared) * output_scale(function) if eta_squared else 0.0
    keys = jax.random.split(jax.random.key(2021), seeds)
    signs = jnp.where(jax.random.bernoulli(jax.random.key(6), 0.5, (seeds, 2)), 1.0, -1.0)

    def one_run(key, sign):
        state = learner.init(
            np.zeros((0, dimension)),
            np.zeros(0),
            np.asarray(function.lower),
            np.asarray(function.upper),
            budget=max(dimension, 2) + 10 * dimension,
            f_plus=-function.minimum + sign[0] * offset if use_plus else None,
            f_minus=-function.maximum + sign[1] * offset if use_minus else None,
        )
        return gpcompose.run_traceable(learner, lambda x: -function(x), state, key)

    final = jax.jit(jax.vmap(one_run))(keys, signs).evaluations
    targets = np.where(np.asarray(final.succeeded), np.asarray(final.values), -np.inf)
    return -np.maximum.accumulate(targets, axis=1) - function.minimum


def cell_label(record):
    """A record's column name: the method, with η² when the bounds are misspecified."""
    return record["method"] + (f" η²={record['eta_squared']:g}" if record["eta_squared"] else "")


def print_table(records):
    names = list(dict.fromkeys(r["function"] for r in records))
    labels = list(dict.fromkeys(cell_label(r) for r in records))
    print("\n| function | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name in names:
        cells = []
        for label in labels:
            found = [r for r in records if r["function"] == name and cell_label(r) == label]
            cells.append(f"{np.median(np.asarray(found[0]['regret'])[:, -1]):.3g}" if found else "–")
        print(f"| {name} | " + " | ".join(cells) + " |")
    seeds = sorted({len(r["regret"]) for r in records})
    print(f"\nmedian final simple regret over {', '.join(map(str, seeds))} seeds")


def plot(records, path):
    names = list(dict.fromkeys(r["function"] for r in records))
    figure, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.5), squeeze=False)
    for axis, name in zip(axes[0], names):
        for record in (r for r in records if r["function"] == name):
            regret = np.asarray(record["regret"])
            median = np.maximum(np.median(regret, axis=0), 1e-8)
            axis.semilogy(np.arange(1, regret.shape[1] + 1), median, label=cell_label(record))
        axis.set_title(name)
        axis.set_xlabel("evaluations")
    axes[0][0].set_ylabel("median simple regret")
    axes[0][0].legend(fontsize=6)
    save_figure(figure, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--functions", default="forrester,branin")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--misspecification", default="0", help="comma-separated η² values of the bounds' offset")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--candidates", type=int, default=256)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--extrema-steps", type=int, default=25, help="Adam steps of the samples' extrema search")
    parser.add_argument(
        "--square-root-center", choices=("data", "bound"), default="data", help="the SRGP's prior center (BES, ERM)"
    )
    parser.add_argument("--name", default=None, help="the JSON is OUTPUT_DIR/NAME.json (default bes_regret)")
    parser.add_argument("--table", action="store_true", help="only print the table of the stored results")
    add_synthetic_function_options(parser)
    args = parser.parse_args()
    settings = {
        "num_samples": args.samples,
        "num_features": 100,
        "num_candidates": args.candidates,
        "num_starts": args.starts,
        "search_steps": args.steps,
        "extrema_steps": args.extrema_steps,
        "square_root_center": args.square_root_center,
    }
    seeds = args.seeds
    if args.quick:
        small = {"num_samples": 4, "num_features": 20, "num_candidates": 16, "num_starts": 2}
        settings |= small | {"search_steps": 3, "extrema_steps": 3}
        seeds = 2
    output = Path(args.output_dir)
    stem = args.name or ("bes_regret_quick" if args.quick else "bes_regret")
    path = output / f"{stem}.json"
    stored = json.loads(path.read_text()) if path.exists() else {"runs": [], "records": []}
    records = [r | {"eta_squared": r.get("eta_squared", 0.0)} for r in stored["records"]]
    if args.table:
        print_table(records)
        return
    meta = {
        "seeds": seeds,
        "options": settings,
        "quick": args.quick,
        **host_summary(),
    }
    runs = stored.get("runs") or ([stored["meta"]] if "meta" in stored else [])
    runs = runs + [meta]
    functions = optimization_functions()
    done = {(r["function"], r["method"], r["eta_squared"]) for r in records}
    for name in args.functions.split(","):
        for method in args.methods.split(","):
            _, use_plus, use_minus = METHODS[method]
            levels = [float(v) for v in args.misspecification.split(",")] if use_plus or use_minus else [0.0]
            for eta_squared in levels:
                if (name, method, eta_squared) in done:
                    continue
                tic = time.time()
                regret = run_method(functions[name], method, seeds, settings, eta_squared)
                seconds = time.time() - tic
                records.append(
                    {
                        "function": name,
                        "method": method,
                        "eta_squared": eta_squared,
                        "regret": regret.tolist(),
                        "seconds": seconds,
                        "run": len(runs) - 1,
                    }
                )
                write_json(path, {"runs": runs, "records": records})
                label = cell_label(records[-1])
                print(f"{name} {label}: median final regret {np.median(regret[:, -1]):.4g} ({seconds:.0f} s)")
    print_table(records)
    plot(records, output / f"{stem}.png")


if __name__ == "__main__":
    main()
