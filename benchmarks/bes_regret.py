"""Bayesian optimisation with approximate bounds (Nguyen, Deisenroth & Osborne 2021,
Fig. 4/16 and Sec. 5): simple regret of BES± (f⁺ and f⁻), BES+ (f⁺ only), EI, UCB, TS,
MES, ERM (f⁺) and random search on the document's synthetic functions.

Every function is minimised as the maximisation of −f, so f⁺ = −min f and f⁻ = −max f
(exact bounds; η at the document's defaults η₊² = 0.02d, η₋² = 0.5d in standardised
units). Budget: max(d, 2) uniform initial points (the document: d) plus 10d iterations.
Simple regret after n evaluations: min_{i ≤ n} f(x_i) − min f. The target is
JAX-traceable, so each (function, method) is one `bo.run` vmapped over the seeds.
Sample counts and search settings are reduced from the defaults (`--samples`, …) to fit
a 2-core CPU; the document uses M = 200.

Usage:
    python benchmarks/bes_regret.py --functions branin,forrester --seeds 10
    python benchmarks/bes_regret.py --quick
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from _common import add_synthetic_function_options, agg_pyplot, host_summary, save_figure, write_json  # noqa: E402

from gpcompose import bo  # noqa: E402
from gpcompose.benchmarks import optimisation_functions  # noqa: E402

plt = agg_pyplot()

METHODS = {  # name: (acquisition, uses f⁺, uses f⁻)
    "BES±": ("bes", True, True),
    "BES+": ("bes", True, False),
    "EI": ("ei", False, False),
    "UCB": ("ucb", False, False),
    "TS": ("ts", False, False),
    "MES": ("mes", False, False),
    "ERM": ("erm", True, False),
    "random": ("random", False, False),
}


def run_method(function, method, seeds, options):
    acquisition, use_plus, use_minus = METHODS[method]
    dimension = function.dimension
    state = bo.init(
        np.asarray(function.lower),
        np.asarray(function.upper),
        budget=max(dimension, 2) + 10 * dimension,
        f_plus=-function.minimum if use_plus else None,
        f_minus=-function.maximum if use_minus else None,
        options=dataclasses.replace(options, acquisition=acquisition),
    )
    keys = jax.random.split(jax.random.key(2021), seeds)
    final = jax.jit(jax.vmap(lambda key: bo.run(lambda x: -function(x), state, key)))(keys)
    targets = np.where(np.asarray(final.succeeded), np.asarray(final.targets), -np.inf)
    return -np.maximum.accumulate(targets, axis=1) - function.minimum


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--functions", default="forrester,branin")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--candidates", type=int, default=256)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    add_synthetic_function_options(parser)
    args = parser.parse_args()
    options = bo.BOOptions(
        num_samples=args.samples, num_candidates=args.candidates, num_starts=args.starts, search_steps=args.steps
    )
    seeds = args.seeds
    if args.quick:
        options = bo.BOOptions(num_samples=4, num_features=20, num_candidates=16, num_starts=2, search_steps=3)
        seeds = 2
    functions = optimisation_functions()
    records = []
    start = time.time()
    for name in args.functions.split(","):
        for method in args.methods.split(","):
            tic = time.time()
            regret = run_method(functions[name], method, seeds, options)
            records.append(
                {"function": name, "method": method, "regret": regret.tolist(), "seconds": time.time() - tic}
            )
            print(f"{name} {method}: median final regret {np.median(regret[:, -1]):.4g} ({time.time() - tic:.0f} s)")
    total = time.time() - start
    output = Path(args.output_dir)
    meta = {
        "seeds": seeds,
        "options": {field.name: getattr(options, field.name) for field in dataclasses.fields(options)},
        "quick": args.quick,
        **host_summary(),
        "wall_seconds": total,
    }
    stem = "bes_regret_quick" if args.quick else "bes_regret"
    write_json(output / f"{stem}.json", {"meta": meta, "records": records})
    names = list(dict.fromkeys(r["function"] for r in records))
    methods = list(dict.fromkeys(r["method"] for r in records))
    print("\n| function | " + " | ".join(methods) + " |")
    print("|---|" + "---|" * len(methods))
    for name in names:
        cells = []
        for method in methods:
            regret = np.asarray(next(r["regret"] for r in records if (r["function"], r["method"]) == (name, method)))
            cells.append(f"{np.median(regret[:, -1]):.3g}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nmedian final simple regret over {seeds} seeds; wall time {total:.0f} s")
    figure, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.5), squeeze=False)
    for axis, name in zip(axes[0], names):
        for method in methods:
            regret = np.asarray(next(r["regret"] for r in records if (r["function"], r["method"]) == (name, method)))
            axis.semilogy(np.arange(1, regret.shape[1] + 1), np.maximum(np.median(regret, axis=0), 1e-8), label=method)
        axis.set_title(name)
        axis.set_xlabel("evaluations")
    axes[0][0].set_ylabel("median simple regret")
    axes[0][0].legend(fontsize=7)
    save_figure(figure, output / f"{stem}.png")


if __name__ == "__main__":
    main()
