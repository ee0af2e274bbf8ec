"""Where a `bo.BO` iteration spends its time: compile and run seconds of each phase of `ask`.

The learners of `bes_botorch.py` (500 uniform candidates, 5 Adam restarts × 50 steps, 25 for the
samples' extrema; BES± with the document's M = 200 pathwise samples of 100 random Fourier
features and the exact bounds; EI beside it) on Branin and Hartmann-3, at the states of one run
after 5d, 10d and the full 10d evaluations (the random design included). One `ask` is split
into its phases by timing each as its own compiled program:

- `surrogate fit`: standardisation and the ML-II BFGS fit of the GP (`bo._propose.proposal_context`);
- `sample extrema` (BES±): the pathwise samples and their maxima and minima on the box
  (`ProposalContext.extrema`);
- `acquisition search`: the rest of the acquisition's `propose` (BES±: weights, acceptance and
  the multi-start search of the entropy criterion; EI: its multi-start search), measured as
  `propose` less the phases above;
- `whole ask` as one program.

Each program is called twice on the same arguments: compile = first call − second, run = second.

Usage:
    python benchmarks/bo_phases.py
Writes `<output-dir>/bo_phases.json` and prints the Markdown table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import add_output_dir_and_quick, compile_and_run_seconds, host_summary, utc_timestamp, write_json  # noqa: E402
from bes_botorch import initial_points  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import bo  # noqa: E402
from gpcompose.bo._propose import proposal_context  # noqa: E402
from gpcompose.problems import optimization_functions  # noqa: E402


def states_along_a_run(function, learner, seed, num_initial, budget, stops):
    """The learner's states after each of `stops` evaluations (design included) of one run."""
    uses_bounds = isinstance(learner.acquisition, bo.BoundedEntropySearch)
    bounds = dict(f_plus=-function.minimum, f_minus=-function.maximum) if uses_bounds else {}
    X = initial_points(function, seed, num_initial)
    evaluate = jax.jit(function)
    values = [float(evaluate(jnp.asarray(x))) for x in X]
    lower, upper = np.asarray(function.lower), np.asarray(function.upper)
    state = learner.init(X, -np.asarray(values), lower, upper, budget=budget - num_initial, **bounds)
    key, states = jax.random.key(seed), {}
    for count in range(num_initial, budget + 1):
        if count in stops:
            states[count] = state
        if count == budget:
            break
        x, _ = learner.ask(state, jax.random.fold_in(key, count))
        state, _ = learner.tell(state, x, -float(evaluate(x)))
    return states


def sample_extrema(context, key, num_samples, num_features):
    """`ProposalContext.extrema` as a function, compiled once per shape."""
    return context.extrema(key, num_samples, num_features)


def phases(learner, state, key):
    """{phase: (compile, run)} of one `ask` on `state`."""
    _, sample_key, search_key = jax.random.split(key, 3)
    acquisition = learner.acquisition
    (context, _), fit_compile, fit_run = compile_and_run_seconds(proposal_context, learner, state)
    timed = {"surrogate fit": (fit_compile, fit_run)}
    _, propose_compile, propose_run = compile_and_run_seconds(acquisition.propose, context, sample_key, search_key)
    rest_compile, rest_run = propose_compile, propose_run
    if isinstance(acquisition, bo.BoundedEntropySearch):
        _, extrema_compile, extrema_run = compile_and_run_seconds(
            sample_extrema, context, sample_key, acquisition.num_samples, acquisition.num_features
        )
        timed["sample extrema"] = (extrema_compile, extrema_run)
        rest_compile, rest_run = propose_compile - extrema_compile, propose_run - extrema_run
    timed["acquisition search"] = (rest_compile, rest_run)
    _, ask_compile, ask_run = compile_and_run_seconds(learner.ask, state, key)
    timed["whole ask"] = (ask_compile, ask_run)
    return timed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--functions", default="branin,hartmann3")
    parser.add_argument("--seed", type=int, default=0)
    add_output_dir_and_quick(parser)
    args = parser.parse_args()
    search, samples = dict(num_candidates=500, num_starts=5), {}
    if args.quick:
        search, samples = dict(num_candidates=32, num_starts=2, search_steps=5), dict(num_samples=8, num_features=20)
    learners = {
        "EI": bo.BO(acquisition=bo.ExpectedImprovement(), **search),
        "BES±": bo.BO(acquisition=bo.BoundedEntropySearch(**samples), **search),
    }
    functions = optimization_functions()
    rows = []
    for name in args.functions.split(","):
        function = functions[name]
        num_initial, budget = max(function.dimension, 2), 10 * function.dimension + max(function.dimension, 2)
        stops = sorted({num_initial + 5 * function.dimension, budget})
        for method, learner in learners.items():
            states = states_along_a_run(function, learner, args.seed, num_initial, budget, stops)
            for count, state in states.items():
                key = jax.random.fold_in(jax.random.key(args.seed), count)
                for phase, (compile_seconds, run_seconds) in phases(learner, state, key).items():
                    rows.append(
                        dict(
                            function=name,
                            method=method,
                            evaluations=count,
                            phase=phase,
                            compile_seconds=compile_seconds,
                            run_seconds=run_seconds,
                        )
                    )
                    print(rows[-1], flush=True)
    result = dict(rows=rows, host=host_summary(), timestamp=utc_timestamp(), version=gpcompose.__version__)
    write_json(Path(args.output_dir) / "bo_phases.json", result)
    print(table(rows))


def table(rows) -> str:
    lines = [
        "| function | method | evaluations | phase | compile (s) | run (s) |",
        "|---|---|---:|---|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['function']} | {row['method']} | {row['evaluations']} | {row['phase']} | "
            f"{row['compile_seconds']:.1f} | {row['run_seconds']:.3f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
