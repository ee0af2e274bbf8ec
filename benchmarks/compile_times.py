"""First-call compilation of each workflow, and whether a second run in the same process
compiles again.

Each workflow runs in a fresh Python process (an empty compilation cache), at the size of its
example script (`examples/<name>.py`, 2-D problems for the active learners), with XLA's default
flags (the tour lowers the backend optimisation level; a user's script does not):

- `SVBMC`: `svbmc_two_moons.run` (4 slice-sampling chains, then `svbmc.fit`);
- `BVBMC`: `bvbmc_banana.run`;
- `BO, EI` and `BO, BES±`: `bes_branin.minimise` with the example's learner of each acquisition;
- `SteinGP`: `steingp_neal.run`; `AACI`: `aaci_classification.run` (CAVI, with its Gibbs reference).

In the process, the workflow runs three times: (1) first call, (2) a new key (new initial data of
the same size, where the example draws them), (3) a new budget where the workflow has one
(active learners: one evaluation fewer, which at every example's budget keeps the buffer rows,
`active_learning.buffer_rows`: SVBMC 10 → 9, BVBMC 40 → 39, BO 22 → 21; a budget of other rows
changes the shapes and compiles the learner's programs again). Compilation is read from JAX's monitoring events (the
sum of the jaxpr tracing, MLIR lowering and XLA backend compile durations, and the number of
backend compiles), so that it is measured, not inferred from wall-time differences.

Usage:
    python benchmarks/compile_times.py
Writes `<output-dir>/compile_times.json` and prints the Markdown table.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, utc_timestamp, write_json  # noqa: E402

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"

# workflow: (example module, setup code run once after import, body of `run_once(key, extra)`, which
# runs the workflow once with `extra` evaluations added to the example's budget; −1 below)
WORKFLOWS = {
    "SVBMC": (
        "svbmc_two_moons",
        "sizes = dict(module.SIZES)",
        "module.SIZES = {**sizes, False: (sizes[False][0], sizes[False][1] + extra)}; module.run(key, out_dir=out_dir)",
    ),
    "BVBMC": (
        "bvbmc_banana",
        "settings = module.settings",
        "module.settings = lambda smoke: (lambda n, b, l: (n, b + extra, l))(*settings(smoke)); "
        "module.run(key, out_dir=out_dir)",
    ),
    "BO EI": (
        "bes_branin",
        "budget, learners = module.settings(False)",
        "module.minimise(learners['EI'], key, budget + extra)",
    ),
    "BO BES±": (
        "bes_branin",
        "budget, learners = module.settings(False)",
        "module.minimise(learners['BES'], key, budget + extra)",
    ),
    "SteinGP": ("steingp_neal", "pass", "module.run(key, out_dir=out_dir)"),
    "AACI": ("aaci_classification", "pass", "module.run(key, out_dir=out_dir)"),
}
BUDGETED = ("SVBMC", "BVBMC", "BO EI", "BO BES±")

CHILD = """
import importlib, json, sys, tempfile, time
import jax
jax.config.update("jax_enable_x64", True)
sys.path.insert(0, {examples!r})
EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
          "/jax/core/compile/backend_compile_duration")
totals = {{"seconds": 0.0, "compiles": 0}}
def listener(event, duration, **kwargs):
    if event in EVENTS:
        totals["seconds"] += duration
        totals["compiles"] += event == EVENTS[2]
jax.monitoring.register_event_duration_secs_listener(listener)
module = importlib.import_module({module!r})
out_dir = tempfile.mkdtemp()
{setup}
def run_once(key, extra):
    global module
    {call}
runs = [("first", 0, 0), ("new key", 1, 0)] + ([("new budget", 1, -1)] if {budgeted} else [])
rows = []
for label, key, extra in runs:
    before = dict(totals)
    start = time.perf_counter()
    run_once(jax.random.key(key), extra)
    rows.append({{"run": label, "wall_seconds": time.perf_counter() - start,
                 "compile_seconds": totals["seconds"] - before["seconds"],
                 "compiles": totals["compiles"] - before["compiles"]}})
print("RESULT " + json.dumps(rows))
"""


def measure(workflow: str, timeout: float) -> list[dict]:
    module, setup, call = WORKFLOWS[workflow]
    code = CHILD.format(
        examples=str(EXAMPLES_DIR), module=module, setup=setup, call=call, budgeted=workflow in BUDGETED
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, check=False
    )
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(f"{workflow} failed:\n{completed.stderr[-3000:]}")


def table(results: dict) -> str:
    lines = [
        "| workflow | first run (s) | of it compiling (s) | compiles | new key: compiles | budget − 1: compiles |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for workflow, rows in results.items():
        by_run = {row["run"]: row for row in rows}
        first, new_key = by_run["first"], by_run["new key"]
        new_budget = by_run.get("new budget")
        budget_cell = "–" if new_budget is None else f"{new_budget['compiles']} ({new_budget['compile_seconds']:.1f} s)"
        lines.append(
            f"| {workflow} | {first['wall_seconds']:.1f} | {first['compile_seconds']:.1f} | {first['compiles']} | "
            f"{new_key['compiles']} ({new_key['compile_seconds']:.1f} s) | {budget_cell} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workflows", default=",".join(WORKFLOWS))
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    results = {}
    for workflow in args.workflows.split(","):
        results[workflow] = measure(workflow, args.timeout)
        print(workflow, results[workflow], flush=True)
    write_json(
        Path(args.output_dir) / "compile_times.json",
        {"timestamp": utc_timestamp(), "results": results, "table": table(results)},
    )
    print(table(results))


if __name__ == "__main__":
    main()
