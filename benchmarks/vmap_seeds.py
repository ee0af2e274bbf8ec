"""A whole BVBMC run vmapped over 16 seeds in one call against 16 sequential calls (issue 9).

The problem is the one of `examples/compose_vmap_seeds.py` (imported from there, not copied):
BVBMC on the 2-D Lumpy density, each seed with its own 20-point initial design, the example's
reduced constants and a budget of 20 new evaluations. Two ways to run the 16 seeds:

- **vmapped**: `jax.jit(jax.vmap(whole_run))(keys)`, one call for all seeds (each seed's `BVBMC.init`
  and `gpcompose.run_traceable`), read per seed with `gpcompose.unstack`;
- **sequential**: `jax.jit(whole_run)(key)` called 16 times, one seed after another.

Each is compiled once first (`.lower(...).compile()`, timed and reported separately); then
the compiled program is timed `--repeats` times (wall clock with `jax.block_until_ready`; for
sequential, one repeat is the 16 calls). The speed-up is sequential / vmapped, of the median
repeat, without and with compilation. The per-seed gsKL of both ways are recorded, with
their largest difference: both compute the same runs up to the rounding of the batched
program, which the ML-II fit of `init` amplifies (to ~1e-6 relative in the first states).

Usage:
    python benchmarks/vmap_seeds.py
    python benchmarks/vmap_seeds.py --quick
Writes `<output-dir>/vmap_seeds.json` and `.png` (`_quick` with `--quick`) and prints the table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    BENCHMARKS_DIR,
    add_output_dir_and_quick,
    agg_pyplot,
    host_summary,
    machine_info,
    save_figure,
    write_json,
)

import gpcompose  # noqa: E402

sys.path.insert(0, str(BENCHMARKS_DIR.parent / "examples"))
import compose_vmap_seeds as problem  # noqa: E402

plt = agg_pyplot()


def timed(function):
    """(result, wall seconds) of `function()`, waiting for the result."""
    start = time.perf_counter()
    result = jax.block_until_ready(function())
    return result, time.perf_counter() - start


def compile_both(keys, budget):
    """The compiled vmapped and single-seed programs and their trace+compile seconds."""
    vmapped, vmapped_compile = timed(lambda: problem.batched_run.lower(keys, budget=budget).compile())
    single, single_compile = timed(lambda: problem.whole_run.lower(keys[0], budget=budget).compile())
    return vmapped, vmapped_compile, single, single_compile


def seed_divergences(states):
    """gsKL of every seed's final state, from a batch (`gpcompose.unstack`) or a list."""
    seeds = gpcompose.unstack(states) if not isinstance(states, list) else states
    return np.array([float(problem.seed_gskl(state)) for state in seeds])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_output_dir_and_quick(parser)
    parser.add_argument("--seeds", type=int, default=problem.NUM_SEEDS)
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--key", type=int, default=1)
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.seeds, arguments.budget, arguments.repeats = 2, 2, 1
    suffix = "_quick" if arguments.quick else ""
    keys = jax.random.split(jax.random.key(arguments.key), arguments.seeds)
    load_before = os.getloadavg()

    vmapped, vmapped_compile, single, single_compile = compile_both(keys, arguments.budget)
    vmapped_seconds, sequential_seconds, loads = [], [], []
    for _ in range(arguments.repeats):
        (_, batched_states), seconds = timed(lambda: vmapped(keys))
        vmapped_seconds.append(seconds)
        sequential_runs, seconds = timed(lambda: [single(key) for key in keys])
        sequential_states = [final for _, final in sequential_runs]
        sequential_seconds.append(seconds)
        loads.append(os.getloadavg())

    vmapped_gskl = seed_divergences(batched_states)
    sequential_gskl = seed_divergences(sequential_states)
    vmapped_median = statistics.median(vmapped_seconds)
    sequential_median = statistics.median(sequential_seconds)
    summary = {
        "vmapped_compile_s": vmapped_compile,
        "sequential_compile_s": single_compile,
        "vmapped_median_s": vmapped_median,
        "sequential_median_s": sequential_median,
        "speedup": sequential_median / vmapped_median,
        "speedup_with_compile": (sequential_median + single_compile) / (vmapped_median + vmapped_compile),
        "max_abs_gskl_difference": float(np.max(np.abs(vmapped_gskl - sequential_gskl))),
        "median_gskl": float(np.median(vmapped_gskl)),
    }
    output = {
        "meta": host_summary()
        | {"machine_detail": machine_info("equinox", "optax"), "load_average_before": load_before},
        "arguments": {key: str(value) for key, value in vars(arguments).items()},
        "problem": {
            "target": "Lumpy",
            "dimension": problem.DIMENSION,
            "num_initial": problem.NUM_INITIAL,
            "learner": repr(problem.LEARNER),
        },
        "vmapped_seconds": vmapped_seconds,
        "sequential_seconds": sequential_seconds,
        "load_average_per_repeat": loads,
        "vmapped_gskl": vmapped_gskl.tolist(),
        "sequential_gskl": sequential_gskl.tolist(),
        "summary": summary,
    }
    write_json(arguments.output_dir / f"vmap_seeds{suffix}.json", output)

    figure, (timing_axis, gskl_axis) = plt.subplots(1, 2, figsize=(10, 3.6))
    labels = [f"vmapped\n(1 call, {arguments.seeds} seeds)", f"sequential\n({arguments.seeds} calls)"]
    timing_axis.bar(labels, [vmapped_median, sequential_median], color=["C0", "C1"], label="run (median)")
    timing_axis.bar(
        labels,
        [vmapped_compile, single_compile],
        bottom=[vmapped_median, sequential_median],
        color=["C0", "C1"],
        alpha=0.35,
        label="trace + compile (once)",
    )
    timing_axis.set_ylabel("wall time (s)")
    timing_axis.set_title(f"speed-up {summary['speedup']:.2f}× ({summary['speedup_with_compile']:.2f}× with compile)")
    timing_axis.legend(fontsize=8)
    seeds = np.arange(arguments.seeds)
    gskl_axis.semilogy(seeds, vmapped_gskl, "o", label="vmapped")
    gskl_axis.semilogy(seeds, sequential_gskl, "x", color="C1", label="sequential")
    gskl_axis.set_xlabel("seed")
    gskl_axis.set_ylabel("gsKL to the target")
    gskl_axis.set_title(f"same runs: largest |ΔgsKL| {summary['max_abs_gskl_difference']:.1e}")
    gskl_axis.legend(fontsize=8)
    save_figure(figure, arguments.output_dir / f"vmap_seeds{suffix}.png")

    print(
        "| way | seeds | budget | trace+compile (s) | run, median of "
        f"{arguments.repeats} (s) | speed-up | speed-up with compile | median gsKL | max abs ΔgsKL |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| vmapped, 1 call | {arguments.seeds} | {arguments.budget} | {vmapped_compile:.1f} | {vmapped_median:.2f} "
        f"| {summary['speedup']:.2f}× | {summary['speedup_with_compile']:.2f}× | {summary['median_gskl']:.3g} "
        f"| {summary['max_abs_gskl_difference']:.1e} |"
    )
    print(
        f"| sequential, {arguments.seeds} calls | {arguments.seeds} | {arguments.budget} | {single_compile:.1f} "
        f"| {sequential_median:.2f} | 1 | 1 | {float(np.median(sequential_gskl)):.3g} | – |"
    )
    print(f"load average before {load_before}, per repeat {loads}")


if __name__ == "__main__":
    main()
