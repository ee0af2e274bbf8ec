"""Runs that used to deadlock XLA's CPU thread pool, repeated in fresh processes beside a
CPU-bound burner, with `PJRT_NPROC` unset.

Batched (vmapped) Cholesky factorisations and triangular solves on the CPU once hung in
LAPACK's parallel batch map when the thread pool was busy (2 of 7 runs of the SVGD × CAVI
example on a 2-core machine). gpcompose now runs them as a sequence of one-matrix calls on
the CPU (`gpcompose/_linalg.py`). This script checks that the fix holds where the hang was
seen:

- `svgd_cavi`: `examples/compose_svgd_cavi.py`'s `run` (J particles, each with a vmapped
  CAVI state, under one `lax.scan`), a new key each run;
- `bvbmc_vmap`: `examples/compose_vmap_seeds.py`'s whole BVBMC run vmapped over `--seeds`
  seeds (its reduced constants, budget 20), a new key each run.

Each run is a new Python process with `PJRT_NPROC` removed from its environment; a run that
does not finish within `--timeout` seconds is killed and counted as a hang. With `--burner`
(default on) a second process multiplies 400 × 400 matrices in a loop for the whole
experiment, so that the pool never has the machine to itself.

Usage:
    python benchmarks/cpu_thread_pool_stress.py --runs 20
Writes `<output-dir>/cpu_thread_pool_stress.json` and prints the table.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

from _common import BENCHMARKS_DIR, add_output_dir_and_quick, machine_info, write_json

EXAMPLES = BENCHMARKS_DIR.parent / "examples"

WORKLOADS = {
    "svgd_cavi": (
        "import sys, tempfile, jax; sys.path.insert(0, {examples!r}); import compose_svgd_cavi as e; "
        "e.run(jax.random.key({run}), out_dir=tempfile.mkdtemp())"
    ),
    "bvbmc_vmap": (
        "import sys, jax; sys.path.insert(0, {examples!r}); import compose_vmap_seeds as e; "
        "jax.block_until_ready(e.batched_run(jax.random.split(jax.random.key({run}), {seeds}), budget=20))"
    ),
}

BURNER = "import numpy as np\na = np.random.default_rng(0).random((400, 400))\nwhile True:\n    a = a @ a; a /= a.max()"


def environment() -> dict:
    """This process's environment without `PJRT_NPROC`."""
    return {name: value for name, value in os.environ.items() if name != "PJRT_NPROC"}


def one_run(name: str, run: int, seeds: int, timeout: float) -> dict:
    code = WORKLOADS[name].format(examples=str(EXAMPLES), run=run, seeds=seeds)
    start = time.perf_counter()
    try:
        finished = subprocess.run(
            [sys.executable, "-c", code], env=environment(), timeout=timeout, capture_output=True, text=True
        )
        outcome = "ok" if finished.returncode == 0 else f"exit {finished.returncode}: {finished.stderr[-300:]}"
    except subprocess.TimeoutExpired:
        outcome = "hang"
    return {"workload": name, "run": run, "outcome": outcome, "seconds": time.perf_counter() - start}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=8, help="seeds of the vmapped BVBMC run")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a run counts as hung")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--no-burner", action="store_true")
    add_output_dir_and_quick(parser)
    arguments = parser.parse_args()
    runs = 2 if arguments.quick else arguments.runs
    names = arguments.workloads.split(",")
    stem = "cpu_thread_pool_stress_quick" if arguments.quick else "cpu_thread_pool_stress"
    burner = None if arguments.no_burner else subprocess.Popen([sys.executable, "-c", BURNER])
    records = []
    try:
        for name in names:
            for run in range(runs):
                record = one_run(name, run, arguments.seeds, arguments.timeout)
                records.append(record)
                print(f"{name} run {run}: {record['outcome'][:80]} in {record['seconds']:.1f} s", flush=True)
                table = summary_table(records, names)
                write_json(  # after every run, so that a stopped experiment keeps its runs
                    arguments.output_dir / f"{stem}.json",
                    {
                        "machine": machine_info(),
                        "burner": not arguments.no_burner,
                        "pjrt_nproc": None,
                        "seeds": arguments.seeds,
                        "timeout": arguments.timeout,
                        "table": table,
                        "runs": records,
                    },
                )
    finally:
        if burner is not None:
            burner.kill()
    print("| workload | runs | completed | hung | median wall (s) |\n|---|---:|---:|---:|---:|")
    for row in summary_table(records, names):
        median = "–" if row["median_seconds"] is None else f"{row['median_seconds']:.1f}"
        print(f"| {row['workload']} | {row['runs']} | {row['completed']} | {row['hung']} | {median} |")


def summary_table(records, names):
    """Per workload: runs, completed runs, hung runs and the median wall time of the completed."""
    table = []
    for name in names:
        mine = [record for record in records if record["workload"] == name]
        completed = [record["seconds"] for record in mine if record["outcome"] == "ok"]
        table.append(
            {
                "workload": name,
                "runs": len(mine),
                "completed": len(completed),
                "hung": sum(record["outcome"] == "hang" for record in mine),
                "median_seconds": statistics.median(completed) if completed else None,
            }
        )
    return table


if __name__ == "__main__":
    main()
