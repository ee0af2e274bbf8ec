"""What a best-of-recent final report gives on recorded SVBMC runs.

VBMC reports, when its run is unstable, the variational posterior of the recent iterations
with the highest ELBO − k·sd (a lower confidence bound; k = 5). Such a rule changes only the
final report, not the run, so a `svbmc_problems.py --trace` log answers it exactly up to the
trace's own numbers: each round's line holds the round's ELBO, BQ sd, ELBO − log Z and MMTV
(MMTV on the trace's reference draws, fewer than the final metrics use). A run's rounds start
at its "0 evaluations" line (the state after `init`); the `<problem> {...}` JSON line after them,
where the trace has one, names its seed.

Two rule families:
- "last W rounds, k": per run, the round of the last W with the highest ELBO − k·sd, ungated
  (W = 1 is the last round, the document's report);
- "library": `SVBMC.result`'s rule, run through `gpcompose.svbmc._report.reported_slot` itself
  on a history of the run's rounds: the last round if its BQ sd ≤ `report_sd_tolerance` (0.1),
  else the round of the last quarter with the highest ELBO − 5·sd (VBMC's `best_vbmc`).

Usage:
- `python benchmarks/svbmc_best_of_recent.py --trace A.txt [--trace B.txt ...]`: the table of
  rules over the runs of one problem (a seed found in several traces is taken from the first);
  writes a JSON beside the first trace.
- `python benchmarks/svbmc_best_of_recent.py --per-trace A.txt B.txt ...`: one row per trace
  (runs of 150 evaluations or more): last round against the library's report, and every run
  whose report differs from its last round.
"""

import argparse
import re
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from _common import utc_timestamp, write_json
from svbmc_problems import ACCEPTANCE, bootstrap_median

from gpcompose import svbmc
from gpcompose.mixtures import VBMCMixture
from gpcompose.svbmc._report import record_round, reported_slot, start_history

ROUND_LINE = re.compile(r"\s+(\d+) evaluations, ELBO (\S+) ± (\S+),.*ELBO − log Z (\S+), MMTV (\S+),")
SEED_LINE = re.compile(r'[a-z_]+ \{"seed": (\d+),')
RULES = ((1, 0.0), (2, 5.0), (3, 5.0), (5, 5.0), (10, 5.0), (10, 2.0), (10, 10.0), ("library", None))


def traced_runs(trace_path: Path) -> list[tuple[int | None, np.ndarray]]:
    """The runs of a trace: (seed or None, rounds as rows (evaluations, ELBO, sd, ELBO − log Z, MMTV))."""
    runs = []
    for line in trace_path.read_text().splitlines():
        match = ROUND_LINE.match(line)
        if match:
            if int(match[1]) == 0:
                runs.append([None, []])
            if runs:
                runs[-1][1].append([float(value) for value in match.groups()])
        elif (seed := SEED_LINE.match(line)) and runs and runs[-1][0] is None:
            runs[-1][0] = int(seed[1])
    return [(seed, np.asarray(rounds)) for seed, rounds in runs]


def problem_of(trace_path: Path) -> str:
    """The problem whose bars apply: the longest `ACCEPTANCE` name the trace's file name starts with."""
    names = [name for name in ACCEPTANCE if trace_path.name.startswith(name)]
    return max(names, key=len)


def library_pick(rounds: np.ndarray) -> np.ndarray:
    """The row `_report.reported_slot` reports, with the default options and the run's budget and
    batch size, on a history holding the rounds' ELBOs and sds (a placeholder mixture)."""
    options = svbmc.SVBMC(batch_size=int(rounds[1, 0] - rounds[0, 0]))
    budget = int(rounds[-1, 0])
    zero = jnp.zeros(1)
    placeholder = VBMCMixture(zero, jnp.zeros((1, 1)), zero, zero, jnp.ones(1, bool))
    history = start_history(placeholder, jnp.asarray(rounds[0, 1]), jnp.asarray(rounds[0, 2]), options, budget)
    for evaluations, elbo, sd, _, _ in rounds[1:]:
        history = record_round(history, placeholder, jnp.asarray(elbo), jnp.asarray(sd), jnp.asarray(int(evaluations)))
    return rounds[int(history.rounds[reported_slot(history, options)])]


def pick(rounds: np.ndarray, window, weight) -> np.ndarray:
    """The row of the last `window` rounds with the highest ELBO − weight·sd (the earliest on
    ties), or the library's pick for `window` = "library"."""
    if window == "library":
        return library_pick(rounds)
    recent = rounds[-window:]
    return recent[np.argmax(recent[:, 1] - weight * recent[:, 2])]


def within_bars(rows: list[np.ndarray], problem: str) -> int:
    delta_bar, mmtv_bar = ACCEPTANCE[problem]
    return int(sum(abs(row[3]) <= delta_bar and row[4] <= mmtv_bar for row in rows))


def rule_table(traces: list[Path]):
    """The rules over the runs of one problem, one row each, and the JSON beside the first trace."""
    problem, seeds = problem_of(traces[0]), {}
    for path in traces:
        for index, (seed, rounds) in enumerate(traced_runs(path)):
            seeds.setdefault(seed if seed is not None else f"{path}:{index}", rounds)
    rows = []
    header = ("rule", "seeds", "median ΔLML [95 % CI]", "median MMTV [95 % CI]", "within both bars", "picks moved")
    print("| " + " | ".join(header) + " |")
    print("|---|---:|---|---|---:|---:|")
    for window, weight in RULES:
        picks = {seed: pick(rounds, window, weight) for seed, rounds in seeds.items()}
        delta = np.array([abs(row[3]) for row in picks.values()])
        mmtv = np.array([row[4] for row in picks.values()])
        within = within_bars(list(picks.values()), problem)
        moved = int(sum(row[0] != seeds[seed][-1, 0] for seed, row in picks.items()))
        (delta_median, delta_low, delta_high), (mmtv_median, mmtv_low, mmtv_high) = (
            bootstrap_median(delta),
            bootstrap_median(mmtv),
        )
        if window == "library":
            rule = "the library's report (last round if sd ≤ 0.1, else last quarter, k = 5)"
        else:
            rule = "the last round (the document's report)" if window == 1 else f"last {window} rounds, k = {weight:g}"
        print(
            f"| {rule} | {len(picks)} | {delta_median:.3f} [{delta_low:.3f}, {delta_high:.3f}] | "
            f"{mmtv_median:.3f} [{mmtv_low:.3f}, {mmtv_high:.3f}] | {within} of {len(picks)} | {moved} |"
        )
        rows.append(
            {
                "window": window,
                "weight": weight,
                "picked_evaluations": {str(seed): int(row[0]) for seed, row in picks.items()},
                "delta_lml": dict(zip(map(str, picks), delta.tolist())),
                "mmtv": dict(zip(map(str, picks), mmtv.tolist())),
                "within_both_bars": within,
                "picks_not_last": moved,
            }
        )
    output = traces[0].with_name(f"{problem}_best_of_recent.json")
    write_json(output, {"problem": problem, "traces": [str(p) for p in traces], "date": utc_timestamp(), "rules": rows})
    print(f"wrote {output}")


def per_trace(traces: list[Path]):
    """One row per trace, last round against the library's report, and the runs it changes."""

    def summary(rows, problem):
        delta = np.median([abs(row[3]) for row in rows])
        mmtv = np.median([row[4] for row in rows])
        return f"{delta:.3f} / {mmtv:.3f}, {within_bars(rows, problem)} within both bars"

    print("| trace | runs | last round: median ΔLML / MMTV | the library's report |")
    print("|---|---:|---|---|")
    changed, total = [], 0
    for path in traces:
        runs = [rounds for _, rounds in traced_runs(path) if rounds[-1, 0] >= 150]
        if not runs:
            continue
        problem = problem_of(path)
        total += len(runs)
        last = [rounds[-1] for rounds in runs]
        reported = [library_pick(rounds) for rounds in runs]
        print(f"| {path} | {len(runs)} | {summary(last, problem)} | {summary(reported, problem)} |")
        changed += [(path, index, a, b) for index, (a, b) in enumerate(zip(last, reported)) if a[0] != b[0]]
    print(f"\n{total} runs; the library's report is not the last round in {len(changed)}:")
    for path, index, last, chosen in changed:
        print(
            f"  {path} run {index}: last round (sd {last[2]:.3f}) ELBO − log Z {last[3]:+.3f}, MMTV {last[4]:.3f}"
            f" → round at {chosen[0]:.0f} evaluations (sd {chosen[2]:.3f}) {chosen[3]:+.3f}, {chosen[4]:.3f}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, action="append", help="traces of one problem: the table of rules")
    parser.add_argument("--per-trace", type=Path, nargs="+", help="traces of any problems: one row per trace")
    args = parser.parse_args()
    if (args.trace is None) == (args.per_trace is None):
        parser.error("give either --trace (one or more times) or --per-trace")
    if args.trace is not None:
        rule_table(args.trace)
    else:
        per_trace(args.per_trace)


if __name__ == "__main__":
    main()
