"""What a best-of-recent final report would have given on recorded SVBMC runs.

VBMC reports, when its run is unstable, the variational posterior of the recent iterations
with the highest ELBO − k·sd (a lower confidence bound; k = 5). Such a rule changes only the
final report, not the run, so a `svbmc_problems.py --trace` log answers it exactly up to the
trace's own numbers: each round's line holds the round's ELBO, BQ sd, ELBO − log Z and MMTV
(MMTV on the trace's reference draws, fewer than the final metrics use).

For every window W (the last W rounds, the final one included) and weight k, the script picks
per seed the round with the highest ELBO − k·sd and reports the median |ELBO − log Z| and MMTV
over seeds (bootstrap 95 % CIs as in `svbmc_problems.py`), how many seeds are within both of
the problem's bars, and how many picks differ from the last round. W = 1 is the report as it is.

Usage: `python benchmarks/svbmc_best_of_recent.py --trace A.txt [--trace B.txt ...]`; a seed
found in several traces is taken from the first. Writes a JSON beside the first trace.
"""

import argparse
import json
import re
from pathlib import Path

import numpy as np
from _common import utc_timestamp, write_json
from svbmc_problems import ACCEPTANCE, bootstrap_median

ROUND_LINE = re.compile(r"\s+(\d+) evaluations, ELBO (\S+) ± (\S+),.*ELBO − log Z (\S+), MMTV (\S+),")
RULES = ((1, 0.0), (2, 5.0), (3, 5.0), (5, 5.0), (10, 5.0), (10, 2.0), (10, 10.0))


def rounds_per_seed(trace_path: Path) -> tuple[str, dict[int, np.ndarray]]:
    """The problem name and, per seed, its rounds as rows (evaluations, ELBO, sd, ELBO − log Z,
    MMTV); a seed's round lines precede its JSON line `<problem> {...}`."""
    problem, seeds, rounds = None, {}, []
    for line in trace_path.read_text().splitlines():
        match = ROUND_LINE.match(line)
        if match:
            rounds.append([float(value) for value in match.groups()])
        elif " {" in line:
            name, _, record = line.partition(" ")
            problem = name
            seeds[json.loads(record)["seed"]] = np.asarray(rounds)
            rounds = []
    return problem, seeds


def pick(rounds: np.ndarray, window: int, weight: float) -> np.ndarray:
    """The row of the last `window` rounds with the highest ELBO − weight·sd (the earliest on ties)."""
    recent = rounds[-window:]
    return recent[np.argmax(recent[:, 1] - weight * recent[:, 2])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, action="append", required=True)
    args = parser.parse_args()
    problem, seeds = None, {}
    for path in args.trace:
        name, found = rounds_per_seed(path)
        problem = problem or name
        for seed, rounds in found.items():
            seeds.setdefault(seed, rounds)
    delta_bar, mmtv_bar = ACCEPTANCE[problem]
    rows = []
    header = ("rule", "seeds", "median ΔLML [95 % CI]", "median MMTV [95 % CI]", "within both bars", "picks moved")
    print("| " + " | ".join(header) + " |")
    print("|---|---:|---|---|---:|---:|")
    for window, weight in RULES:
        picks = {seed: pick(rounds, window, weight) for seed, rounds in sorted(seeds.items())}
        delta = np.array([abs(row[3]) for row in picks.values()])
        mmtv = np.array([row[4] for row in picks.values()])
        within = int(np.sum((delta <= delta_bar) & (mmtv <= mmtv_bar)))
        moved = int(sum(row[0] != seeds[seed][-1, 0] for seed, row in picks.items()))
        (delta_median, delta_low, delta_high), (mmtv_median, mmtv_low, mmtv_high) = (
            bootstrap_median(delta),
            bootstrap_median(mmtv),
        )
        rule = "the last round (as reported)" if window == 1 else f"last {window} rounds, k = {weight:g}"
        print(
            f"| {rule} | {len(picks)} | {delta_median:.3f} [{delta_low:.3f}, {delta_high:.3f}] | "
            f"{mmtv_median:.3f} [{mmtv_low:.3f}, {mmtv_high:.3f}] | {within} of {len(picks)} | {moved} |"
        )
        rows.append(
            {
                "window": window,
                "weight": weight,
                "picked_evaluations": {seed: int(row[0]) for seed, row in picks.items()},
                "delta_lml": dict(zip(picks, delta.tolist())),
                "mmtv": dict(zip(picks, mmtv.tolist())),
                "within_both_bars": within,
                "picks_not_last": moved,
            }
        )
    output = args.trace[0].with_name(f"{problem}_best_of_recent.json")
    write_json(
        output, {"problem": problem, "traces": [str(p) for p in args.trace], "date": utc_timestamp(), "rules": rows}
    )
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
