"""Where an SVBMC run spends its time: compile and run seconds of each phase, per call and per run.

One run of `svbmc_problems.py` (default: two moons κ = 8, 1000 slice-sampling evaluations + 200
active ones in rounds of 5) is split into the calls it makes:

- `init` (whitening passes, each a full training pass) — once;
- `ask` (acquisition search) and `record` (rank-1 update of the sparse GP) — once per evaluation;
- `update`, the retraining that ends a round — once per round: rounds that refit the
  hyperparameters (`SVBMC.refit_schedule`) and rounds between refits timed apart, the refitting
  round itself split into its phases by timing each as its own compiled program (the glue
  between them runs eagerly):
  `hyperparameter starts` (the exact-GP MAP on the stratified subset), `sparse refit` (inducing
  points and the SGPR MAP from those starts, with the refit guard), `mixture` (the variational
  fit and growth stage) and `final ELBO` (the reported ELBO with its large entropy sample); the
  round between refits likewise into `inducing points and conditioning` (the last round's
  hyperparameters on inducing points selected afresh), `refit guard check` (its mean at the
  training inputs and draws of q), `mixture` and `final ELBO`;
- the target's evaluations and the host loop (`run_black_box`), the rest of the measured run.

Each compiled program is called twice on the same arguments: the first call's time less the
second's is its compilation (tracing included); the second is its run time. Per-run seconds are
run time × the number of calls in a run; the "measured" row is a whole `svbmc_problems.run_seed`
in a fresh process state of the same script (compilation included), so that the rows add up to
what a user waits for.

Usage:
    python benchmarks/svbmc_phases.py --problem two_moons_vsbq
Writes `<output-dir>/svbmc_phases_<problem>.json` and prints the Markdown table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_output_dir_and_quick, compile_and_run_seconds, utc_timestamp, write_json  # noqa: E402
from svbmc_problems import initialise, make_problem, run_seed, seed_keys  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import svbmc  # noqa: E402
from gpcompose.svbmc import _training  # noqa: E402

RETRAINING_PHASES = {
    "_hyperparameter_starts": "hyperparameter starts (exact subset MAP)",
    "_guarded_refit": "sparse refit (inducing points, SGPR MAP)",
    "_active_phase": "mixture (variational fit, growth)",
    "elbo": "final ELBO",
}
KEPT_ROUND_PHASES = {
    "_last_round_posterior": "inducing points and conditioning",
    "exceeds_ceiling": "refit guard check",
    "_active_phase": "mixture (variational fit, growth)",
    "elbo": "final ELBO",
}


def timed_phases(record: dict, phases: dict):
    """Replace the retraining's `phases` in `_training` by compiled, timed ones that write their
    (compile, run) seconds into `record`; returns the originals to restore."""
    originals = {name: getattr(_training, name) for name in phases}

    def timed(name, function):
        def call(*args, **kwargs):
            output, compile_seconds, run_seconds = compile_and_run_seconds(function, *args, **kwargs)
            record[name] = (compile_seconds, run_seconds)
            return output

        return call

    for name, function in originals.items():
        setattr(_training, name, timed(name, function))
    return originals


def split_round(learner, state, key, phases: dict, label: str, calls: int) -> list[tuple]:
    """The rows of one retraining of `state` split into its `phases`, each timed as its own
    compiled program (`timed_phases`)."""
    record = {}
    originals = timed_phases(record, phases)
    try:
        svbmc._workflow._retrain(learner, state, key)
    finally:
        for name, function in originals.items():
            setattr(_training, name, function)
    return [(f"  {label}: {text}", *record[name], calls) for name, text in phases.items()]


def profile(problem_name: str, seed: int) -> dict:
    problem = make_problem(problem_name)
    learner = svbmc.SVBMC(batch_size=problem.batch_size)
    data_key, fit_key, _, _ = seed_keys(seed)
    X, y = (np.asarray(a) for a in problem.initial_set(data_key))
    rows = []

    start = time.perf_counter()
    state = jax.block_until_ready(initialise(problem, learner, X, y, fit_key))
    first = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(initialise(problem, learner, X, y, jax.random.fold_in(fit_key, 1)))
    init_run = time.perf_counter() - start
    rows.append(("init", max(first - init_run, 0.0), init_run, 1))

    budget = int(state.evaluations.budget)
    num_rounds = budget // learner.batch_size
    target = problem.log_density
    key = jax.random.fold_in(fit_key, 2)
    ask_times, record_times = [], []
    for index in range(learner.batch_size):  # one round of asks and records, all but the retraining
        ask_key = jax.random.fold_in(key, index)
        (x, _), ask_compile, ask_run = compile_and_run_seconds(learner.ask, state, ask_key)
        value = target(x)
        new_state, record_compile, record_run = compile_and_run_seconds(learner.record, state, x, value)
        state = new_state[0]
        ask_times.append((ask_compile, ask_run))
        record_times.append((record_compile, record_run))
    rows.append(("ask", ask_times[0][0], float(np.median([t[1] for t in ask_times])), budget))
    rows.append(("record", record_times[0][0], float(np.median([t[1] for t in record_times])), budget))

    rounds = np.arange(1, num_rounds + 1)
    refits = np.asarray(jax.vmap(learner.refit_schedule)(rounds, rounds == num_rounds), bool)
    num_refits = int(np.sum(np.broadcast_to(refits, rounds.shape)))
    # the same state as the round after `refit_round` (the schedule reads the round number only)
    as_round = lambda number: eqx.tree_at(lambda s: s.history.num_rounds, state, jnp.asarray(number, jnp.int32))  # noqa: E731
    _, update_compile, update_run = compile_and_run_seconds(learner.update, as_round(1), key)
    rows.append(("update, refitting round (whole, one program)", update_compile, update_run, num_refits))
    if num_refits < num_rounds:
        kept_round = int(rounds[~np.broadcast_to(refits, rounds.shape)][0])
        _, kept_compile, kept_run = compile_and_run_seconds(learner.update, as_round(kept_round), key)
        rows.append(("update, round between refits (whole)", kept_compile, kept_run, num_rounds - num_refits))
    # the refitting round split into its phases: with `EveryRound` the retraining holds no
    # `lax.cond` on the schedule, so that its glue runs eagerly, each phase compiled
    refitting = dataclasses.replace(learner, refit_schedule=svbmc.EveryRound())
    rows += split_round(refitting, state, key, RETRAINING_PHASES, "refitting round", num_refits)
    if num_refits < num_rounds:
        # eagerly, the kept path's glue (its `lax.cond`s) runs outside the timed phases
        rows += split_round(
            learner, as_round(kept_round), key, KEPT_ROUND_PHASES, "round between refits", num_rounds - num_refits
        )

    start = time.perf_counter()
    outcome = run_seed(problem, seed, learner, num_metric_samples=1000)
    measured = time.perf_counter() - start
    return {
        "problem": problem_name,
        "seed": seed,
        "budget": budget,
        "num_rounds": num_rounds,
        "rows": [
            {"phase": name, "compile_seconds": c, "run_seconds_per_call": r, "calls_per_run": n, "run_seconds": r * n}
            for name, c, r, n in rows
        ],
        "measured_run_seconds": outcome["total_seconds"],
        "measured_with_metrics_seconds": measured,
        "delta_lml": outcome["delta_lml"],
        "mmtv": outcome["mmtv"],
        "timestamp": utc_timestamp(),
        "version": gpcompose.__version__,
    }


def table(result: dict) -> str:
    lines = [
        "| phase | compile (s) | run per call (s) | calls per run | run per run (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['phase']} | {row['compile_seconds']:.1f} | {row['run_seconds_per_call']:.3f} | "
            f"{row['calls_per_run']} | {row['run_seconds']:.1f} |"
        )
    lines.append(
        f"| measured run (`run_seed`, programs already compiled) | | | 1 | {result['measured_run_seconds']:.1f} |"
    )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", default="two_moons_vsbq")
    parser.add_argument("--seed", type=int, default=0)
    add_output_dir_and_quick(parser)
    args = parser.parse_args()
    result = profile(args.problem, args.seed)
    write_json(Path(args.output_dir) / f"svbmc_phases_{args.problem}.json", result)
    print(table(result))


if __name__ == "__main__":
    main()
