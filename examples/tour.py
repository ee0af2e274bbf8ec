"""The gpcompose tour: the five research methods, each on a small problem with a known answer.

Run with `make demo` (or `python examples/tour.py [--out-dir DIR]`). Each method runs the
example script of its own (`examples/<name>.py`, runnable alone) at the same size; the tour
prints one summary table (each method's key metric against ground truth, and its wall time
including JAX compilation), and writes one PNG per method plus `summary.md` and
`summary.json` into the output directory (default `tour_output/`).

| method | example | problem |
|---|---|---|
| SVBMC | `svbmc_two_moons.py` | two moons, from the evaluations of 4 short MCMC chains |
| Stein variational GP | `steingp_neal.py` | Neal's multimodal regression |
| AACI | `aaci_classification.py` | a small classification set, logistic likelihood |
| BVBMC | `bvbmc_banana.py` | a 2-D banana |
| bounded entropy search | `bes_branin.py` | Branin |
"""

import argparse
import importlib
import json
import os
import pathlib
import sys
import time

# Each example runs for seconds and spends most of its time in XLA compilation: LLVM's
# optimisation passes cost more than they save here (as in tests/conftest.py). Set before JAX
# creates its backend; a user's own XLA_FLAGS are kept.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

EXAMPLES_DIR = pathlib.Path(__file__).resolve().parent
if str(EXAMPLES_DIR) not in sys.path:  # the tour imports its sibling scripts
    sys.path.insert(0, str(EXAMPLES_DIR))

TOUR = ("svbmc_two_moons", "steingp_neal", "aaci_classification", "bvbmc_banana", "bes_branin")
COLUMNS = ("method", "problem", "metric", "value", "reference", "seconds")


def format_table(rows):
    """The summary rows as a Markdown table (values to 4 significant digits, seconds to 0.1 s;
    a "|" inside a cell, as in |ΔP|, is escaped)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = [str(row[column]) for column in COLUMNS[:3]]
        cells += [f"{row['value']:.4g}", str(row["reference"]), f"{row['seconds']:.1f}"]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def summary_record(row):
    """The summary columns of one example's row (and its plot's path), as JSON-ready values."""
    record = {column: row[column] for column in COLUMNS}
    record["value"] = float(record["value"])
    record["seconds"] = float(record["seconds"])
    record["png"] = str(row["png"])
    return record


def run_tour(key, *, out_dir, smoke=False, names=TOUR, log=print):
    """Runs each example's `run` with its own key, logging progress; returns the summary rows."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    start = time.perf_counter()
    for index, (name, example_key) in enumerate(zip(names, jax.random.split(key, len(names))), start=1):
        log(f"[{index}/{len(names)}] {name} ...", flush=True)
        row = importlib.import_module(name).run(example_key, out_dir=out_dir, smoke=smoke)
        rows.append(row)
        log(
            f"[{index}/{len(names)}] {row['method']}: {row['metric']} = {row['value']:.4g} "
            f"({row['seconds']:.1f} s; tour so far {time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    return rows


def write_summary(rows, total_seconds, out_dir):
    """Writes `summary.md` (the table and the total wall time) and `summary.json` into `out_dir`;
    returns the table."""
    out_dir = pathlib.Path(out_dir)
    table = format_table(rows)
    (out_dir / "summary.md").write_text(table + f"\n\nTotal wall time {total_seconds:.1f} s.\n")
    records = [summary_record(row) for row in rows]
    (out_dir / "summary.json").write_text(json.dumps({"rows": records, "total_seconds": total_seconds}, indent=2))
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("tour_output"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    start = time.perf_counter()
    rows = run_tour(jax.random.key(args.seed), out_dir=args.out_dir)
    total = time.perf_counter() - start
    print()
    print(write_summary(rows, total, args.out_dir))
    print(f"\ntotal {total:.0f} s; plots and summary in {args.out_dir}/")


if __name__ == "__main__":
    main()
