"""gpcompose's Bayesian optimisation beside BoTorch's, in one run (issue 8): per-iteration
wall time and final simple regret on Branin and Hartmann-3.

Both libraries minimise the same function (the JAX definition of
`gpcompose.problems.optimization_functions`, evaluated in float64; BoTorch gets its values as
torch tensors) from the same max(d, 2) uniform initial points per seed, then spend 10d
iterations, one point each, on the CPU:

- **gpcompose** `bo.BO` `ask`/`tell` with `bo.ExpectedImprovement()` (log-EI) and
  `bo.BoundedEntropySearch()` (BES± with the exact bounds f⁺ = −min f, f⁻ = −max f and the document's
  looseness), the initial points given to `init`: each `ask` refits the GP by ML-II (BFGS) and
  maximises the acquisition (500 uniform candidates, 5 Adam restarts × 50 steps: the `bo.BO`
  defaults; for BES M = 200 samples, whose extrema are searched from the same candidates with 5
  restarts × 25 steps in float32 with polynomial cosines). `ask` compiles once (in the first
  seed); the first call of every run is timed separately (`compile_seconds`) and left out of the
  per-iteration times.
- **BoTorch** `SingleTaskGP` (inputs normalised to [0, 1]^d by the box, outcomes standardised),
  `fit_gpytorch_mll`, `LogExpectedImprovement` and `optimize_acqf` with 5 restarts from 500 raw
  samples (the same search budget as ours), float64, one torch thread (`torch.set_num_threads(1)`).

Per-iteration time: from the start of the model fit to the proposed point (the function's own
evaluation excluded). Simple regret: min_{i ≤ n} f(x_i) − min f after the budget.

Needs the `botorch` extra (`pip install -e '.[bench,botorch]'`; install a CPU build of torch first
where there is no GPU, e.g. `pip install torch --index-url https://download.pytorch.org/whl/cpu`).

Usage:
    python benchmarks/bes_botorch.py --seeds 10
    python benchmarks/bes_botorch.py --quick
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import time  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import add_output_dir_and_quick, agg_pyplot, host_summary, save_figure, write_json  # noqa: E402

from gpcompose import bo  # noqa: E402
from gpcompose.problems import optimization_functions  # noqa: E402

METHODS = ("gpcompose EI", "gpcompose BES±", "BoTorch LogEI")


def initial_points(function, seed, num_initial):
    rng = np.random.default_rng(seed)
    lower, upper = np.asarray(function.lower), np.asarray(function.upper)
    return lower + (upper - lower) * rng.uniform(size=(num_initial, function.dimension))


def run_gpcompose(function, learner, seed, num_initial, budget):
    """(evaluated values, per-iteration seconds, compile seconds) of one gpcompose run: the
    `ask`/`tell` loop of `gpcompose.run_black_box`, written out to time each `ask`."""
    evaluate = jax.jit(function)
    uses_bounds = isinstance(learner.acquisition, bo.BoundedEntropySearch)
    bounds = dict(f_plus=-function.minimum, f_minus=-function.maximum) if uses_bounds else {}
    X = initial_points(function, seed, num_initial)
    values = [float(evaluate(jnp.asarray(x))) for x in X]
    state = learner.init(
        X,
        -np.asarray(values),
        np.asarray(function.lower),
        np.asarray(function.upper),
        budget=budget - num_initial,
        **bounds,
    )
    key = jax.random.key(seed)
    seconds, compile_seconds = [], None
    for iteration in range(budget - num_initial):
        start = time.perf_counter()
        x, _ = jax.block_until_ready(learner.ask(state, jax.random.fold_in(key, iteration)))
        elapsed = time.perf_counter() - start
        if compile_seconds is None:
            compile_seconds = elapsed
        else:
            seconds.append(elapsed)
        values.append(float(evaluate(x)))
        state, _ = learner.tell(state, x, -values[-1])
    return np.asarray(values), seconds, compile_seconds


def run_botorch(function, seed, num_initial, budget, num_restarts, raw_samples):
    """(evaluated values, per-iteration seconds) of one BoTorch LogEI run (maximising −f)."""
    import torch
    from botorch.acquisition import LogExpectedImprovement
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Normalize, Standardize
    from botorch.optim import optimize_acqf
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.manual_seed(seed)
    evaluate = jax.jit(function)
    bounds = torch.tensor(np.stack([function.lower, function.upper]), dtype=torch.float64)
    X = torch.tensor(initial_points(function, seed, num_initial), dtype=torch.float64)
    values = [float(evaluate(jnp.asarray(x.numpy()))) for x in X]
    seconds = []
    for _ in range(budget - num_initial):
        start = time.perf_counter()
        Y = -torch.tensor(values, dtype=torch.float64)[:, None]
        model = SingleTaskGP(
            X, Y, input_transform=Normalize(function.dimension, bounds=bounds), outcome_transform=Standardize(1)
        )
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        acquisition = LogExpectedImprovement(model, best_f=Y.max())
        candidate, _ = optimize_acqf(acquisition, bounds, q=1, num_restarts=num_restarts, raw_samples=raw_samples)
        seconds.append(time.perf_counter() - start)
        values.append(float(evaluate(jnp.asarray(candidate[0].numpy()))))
        X = torch.cat([X, candidate])
    return np.asarray(values), seconds


def summary(records, function_name, method):
    chosen = [record for record in records if (record["function"], record["method"]) == (function_name, method)]
    regrets = np.asarray([record["regret"][-1] for record in chosen])
    seconds = np.concatenate([record["seconds_per_iteration"] for record in chosen])
    return regrets, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--functions", default="branin,hartmann3")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--raw-samples", type=int, default=500)
    parser.add_argument("--restarts", type=int, default=5)
    add_output_dir_and_quick(parser)
    args = parser.parse_args()
    search, samples = dict(num_candidates=args.raw_samples, num_starts=args.restarts), {}
    if args.quick:
        args.seeds, args.raw_samples, args.restarts = 1, 32, 2
        search, samples = dict(num_candidates=32, num_starts=2, search_steps=5), dict(num_samples=8, num_features=20)
    learners = {
        "gpcompose EI": bo.BO(acquisition=bo.ExpectedImprovement(), **search),
        "gpcompose BES±": bo.BO(acquisition=bo.BoundedEntropySearch(**samples), **search),
    }

    import torch

    torch.set_num_threads(1)  # the machine's cores are shared with XLA's; one thread avoids oversubscription
    functions = optimization_functions()
    records, start = [], time.perf_counter()
    for name in args.functions.split(","):
        function = functions[name]
        num_initial = max(function.dimension, 2)
        budget = num_initial + 10 * function.dimension
        for seed in range(args.seeds):
            for method in METHODS:
                if method == "BoTorch LogEI":
                    values, seconds = run_botorch(function, seed, num_initial, budget, args.restarts, args.raw_samples)
                    compile_seconds = None
                else:
                    learner = dataclasses.replace(learners[method], initial_design_size=num_initial)
                    values, seconds, compile_seconds = run_gpcompose(function, learner, seed, num_initial, budget)
                regret = np.minimum.accumulate(values) - function.minimum
                records.append(
                    dict(
                        function=name,
                        method=method,
                        seed=seed,
                        regret=regret.tolist(),
                        seconds_per_iteration=seconds,
                        compile_seconds=compile_seconds,
                    )
                )
                print(
                    f"{name} seed {seed} {method}: final regret {regret[-1]:.3g}, "
                    f"{np.median(seconds):.3f} s per iteration",
                    flush=True,
                )

    import botorch

    meta = dict(
        seeds=args.seeds,
        raw_samples=args.raw_samples,
        restarts=args.restarts,
        options=search | samples,
        quick=args.quick,
        botorch_version=botorch.__version__,
        torch_version=torch.__version__,
        wall_seconds=time.perf_counter() - start,
        **host_summary(),
    )
    stem = "bes_botorch_quick" if args.quick else "bes_botorch"
    write_json(args.output_dir / f"{stem}.json", dict(meta=meta, records=records))

    names = list(dict.fromkeys(record["function"] for record in records))
    print("\n| function | method | median final regret [IQR] | median s / iteration | time ratio to BoTorch |")
    print("|---|---|---|---:|---:|")
    for name in names:
        botorch_seconds = np.median(summary(records, name, "BoTorch LogEI")[1])
        for method in METHODS:
            regrets, seconds = summary(records, name, method)
            low, high = np.quantile(regrets, [0.25, 0.75])
            print(
                f"| {name} | {method} | {np.median(regrets):.3g} [{low:.3g}, {high:.3g}] | "
                f"{np.median(seconds):.3f} | {np.median(seconds) / botorch_seconds:.2f} |"
            )
    plt = agg_pyplot()
    figure, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.5), squeeze=False)
    for axis, name in zip(axes[0], names):
        for method in METHODS:
            curves = np.asarray([r["regret"] for r in records if (r["function"], r["method"]) == (name, method)])
            axis.semilogy(np.arange(1, curves.shape[1] + 1), np.maximum(np.median(curves, axis=0), 1e-8), label=method)
        axis.set_title(name)
        axis.set_xlabel("evaluations")
    axes[0][0].set_ylabel("median simple regret")
    axes[0][0].legend(fontsize=7)
    save_figure(figure, args.output_dir / f"{stem}.png")


if __name__ == "__main__":
    main()
