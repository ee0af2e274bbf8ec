"""Replay of SVBMC's report rule (`gpcompose.svbmc._report.reported_slot`) on the per-round traces
that `svbmc_problems.py --trace` wrote: for every traced run that reached 150 evaluations or more,
the round the rule reports and that round's ELBO − log Z and MMTV, beside the last round's (what
the document reports, and what `result` returned before the rule).

The traces print each round's ELBO and BQ sd (3 decimals), ELBO − log Z and the MMTV of that
round's mixture against 20 000 reference draws, so the replay is the rule applied to the same
numbers the runs produced, rounded as printed; the runs' JSON metrics use other sample keys and
can differ from the trace's in the third decimal. One trace file holds one or more runs, each
starting with its "0 evaluations" line (the state after `init`).

    python benchmarks/svbmc_report_replay.py [--results-dir benchmarks/results/svbmc]

prints one line per trace file (runs, median |ΔLML| and MMTV, runs within both bars, last round vs
the rule) and every run whose reported round differs from its last."""

import argparse
import dataclasses
import re
import statistics
from pathlib import Path

import jax
import jax.numpy as jnp

from gpcompose import svbmc
from gpcompose.mixtures import VBMCMixture
from gpcompose.svbmc._report import record_round, reported_slot, start_history

jax.config.update("jax_enable_x64", True)

ROUND = re.compile(r"^\s*(\d+) evaluations, ELBO (\S+) ± (\S+), .*?ELBO − log Z (\S+), MMTV (\S+),")
# the bars (median ΔLML, median MMTV) per problem; a trace's problem is the first name in its path
BARS = {
    "two_moons_vsbq": (0.05, 0.05),
    "rosenbrock": (0.5, 0.12),
    "lotka_volterra": (0.3, 0.1),
    "timing": (0.5, 0.1),
}


def traced_runs(path: Path):
    """The runs of one trace file: lists of (evaluations, ELBO, sd, ELBO − log Z, MMTV) per round."""
    runs = []
    for line in path.read_text().splitlines():
        match = ROUND.match(line)
        if match is None:
            continue
        evaluations = int(match[1])
        if evaluations == 0:
            runs.append([])
        if runs:
            runs[-1].append((evaluations, *(float(match[index]) for index in range(2, 6))))
    return runs


def reported_round(rounds, options: svbmc.SVBMCOptions):
    """The round `_report.reported_slot` picks, on a history filled with the run's rounds (a
    placeholder mixture in every slot; the budget and batch size are the run's)."""
    batch_size = rounds[1][0] - rounds[0][0]
    options = dataclasses.replace(options, budget=rounds[-1][0], batch_size=batch_size)
    zero = jnp.zeros(1)
    placeholder = VBMCMixture(zero, jnp.zeros((1, 1)), zero, zero, jnp.ones(1, bool))
    history = start_history(placeholder, jnp.asarray(rounds[0][1]), jnp.asarray(rounds[0][2]), options)
    for entry in rounds[1:]:
        history = record_round(
            history, placeholder, jnp.asarray(entry[1]), jnp.asarray(entry[2]), jnp.asarray(entry[0], jnp.int32)
        )
    return rounds[int(history.rounds[reported_slot(history, options)])]


def summary(entries, bars):
    delta = statistics.median(abs(entry[3]) for entry in entries)
    mmtv = statistics.median(entry[4] for entry in entries)
    passing = sum(abs(entry[3]) <= bars[0] and entry[4] <= bars[1] for entry in entries)
    return f"{delta:.3f} / {mmtv:.3f}, {passing} pass"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results-dir", type=Path, default=Path(__file__).parent / "results" / "svbmc")
    args = parser.parse_args()
    options = svbmc.SVBMCOptions()
    paths = sorted(p for p in args.results_dir.rglob("*trace*") if p.suffix in (".txt", ".log"))
    changed, total = [], 0
    print("| trace | runs | last round: median ΔLML / MMTV, within both bars | reported round (rule) |")
    print("|---|---:|---|---|")
    for path in paths:
        runs = [rounds for rounds in traced_runs(path) if rounds[-1][0] >= 150]
        if not runs:
            continue
        bars = next((bar for name, bar in BARS.items() if name in path.name), None)
        if bars is None:
            continue
        total += len(runs)
        last = [rounds[-1] for rounds in runs]
        reported = [reported_round(rounds, options) for rounds in runs]
        name = path.relative_to(args.results_dir)
        print(f"| {name} | {len(runs)} | {summary(last, bars)} | {summary(reported, bars)} |")
        for index, (final, chosen) in enumerate(zip(last, reported)):
            if chosen is not final:
                changed.append((name, index, final, chosen))
    print(f"\n{total} runs; the rule reports another round than the last in {len(changed)}:")
    for name, index, final, chosen in changed:
        print(
            f"  {name} run {index}: last round ({final[0]} evaluations, sd {final[2]:.3f}) ELBO − log Z "
            f"{final[3]:+.3f}, MMTV {final[4]:.3f} → round at {chosen[0]} (sd {chosen[2]:.3f}) "
            f"{chosen[3]:+.3f}, {chosen[4]:.3f}"
        )


if __name__ == "__main__":
    main()
