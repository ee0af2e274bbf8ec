"""Failure regions: how often BO, BVBMC and SVBMC ask inside a region where the target fails.

Each target returns NaN inside a failure region, which every learner records as a failed
evaluation; the learners fit a failed evaluation as a censored observation at their lowest
fitted value (`gpcompose.active_learning.censor_failures`), so that they move away from it.
Cases (2-D, 10 seeds by default):

- **BO-EI** and **BO-BES**: maximise −Branin on its box [−5, 10] × [0, 15] (`bo.BO()` with
  expected improvement, and `bo.BO(acquisition=bo.BoundedEntropySearch())` with f⁺ = −min
  Branin, the true maximum; both with their default settings), budget 30 from no
  evaluations. The region: the three discs of radius 0.5 around Branin's minimisers. The
  first two successful evaluations are the uniform initial design; "model-chosen" are the
  asks after it.
- **BVBMC**: the banana log density log Z + log N(x₁; 0, 1) + log N(x₂; b(x₁² − 1), s²)
  (b = 0.8, s = 0.6, log Z = 1.7), 12 initial points of N(mode, 4 I) outside the region, budget
  30, the small settings of the tests. The region: the disc of radius 0.5 at the mode (0, −b).
  Every ask is model-chosen.
- **SVBMC**: the same banana, 300 initial points of N(mode, 6.25 I) outside the region, budget 30
  in rounds of 5, the small settings of the tests; the same region.
- **SVBMC-Gaussian**: N((0.5, −1), diag(1, 0.5²)) instead of the banana, the disc of radius 0.5
  at its mode (a larger share of the posterior mass than the banana's disc).

Columns: the share of model-chosen asks inside the region, the failed evaluations, and the
asks at an earlier failed ask's point (within 1e-6). The extra column is the best value's
regret for BO (min Branin over the successful evaluations − its minimum) and the final
ELBO − log Z_out for BVBMC and SVBMC, Z_out the evidence of the density outside the region
(`log_evidence_outside`: a failure read as density 0, the reading the censoring approximates).

Driver: a `lax.scan` over the budget of `x = ask(state, fold_in(key, n))`, the target, and
`tell(state, x, y)` — the loop that `gpcompose.run_traceable` runs, written out so that every
asked point is kept (the library before censoring stored a failed evaluation's input as a
placeholder) — jitted and vmapped over the seeds. To compare with another version of the
library, run this file with that version first on `PYTHONPATH` and `--label` naming it; the
JSON keeps one record per (label, case) and the table puts the labels side by side.

Usage:
    python benchmarks/failure_regions.py --seeds 10 --label after
    PYTHONPATH=/tmp/before python benchmarks/failure_regions.py --seeds 10 --label before
    python benchmarks/failure_regions.py --table
    python benchmarks/failure_regions.py --quick
Writes `<output-dir>/failure_regions.json` (`_quick` with `--quick`) and prints the table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import add_output_dir_and_quick, code_version, host_summary, write_json  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import bo, boosting, bvbmc, kernels, svbmc  # noqa: E402
from gpcompose.problems import optimization_functions  # noqa: E402

RADIUS = 0.5
BRANIN = optimization_functions()["branin"]
BRANIN_MINIMISERS = np.array([[-math.pi, 12.275], [math.pi, 2.275], [9.42478, 2.475]])
BO_BUDGET = 30
DESIGN = 2  # `bo.BO().design_size(2)`: successful evaluations before the model is used
DENSITY_BUDGET = 30
LOG_Z = 1.7
BANANA_BEND, BANANA_SD = 0.8, 0.6
SVBMC_MEAN, SVBMC_SD = np.array([0.5, -1.0]), np.array([1.0, 0.5])
BVBMC_INITIAL, SVBMC_INITIAL = 12, 300
REPEAT_TOLERANCE = 1e-6
CASES = ("BO-EI", "BO-BES", "BVBMC", "SVBMC", "SVBMC-Gaussian")

BVBMC_LEARNER = bvbmc.BVBMC(  # the tests' small settings (tests/test_bvbmc.py)
    max_components=6,
    fit_steps=100,
    initial_joint_steps=150,
    num_candidates=32,
    num_search_starts=2,
    search_steps=10,
    final_entropy_samples=8192,
    boosting=boosting.Boosting(
        relbo_steps=60,
        relbo_samples=64,
        weight_samples=128,
        joint_update_every=2,
        joint_steps=60,
        joint_samples_per_component=32,
    ),
    kernel=kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0),
)
SVBMC_LEARNER = svbmc.SVBMC(  # the tests' small settings (tests/svbmc_targets.py), rounds of 5
    batch_size=5,
    subset_size=60,
    min_inducing=30,
    max_inducing=60,
    max_components=4,
    exact_fit_steps=60,
    sparse_fit_steps=20,
    buildup_steps=100,
    round_steps=30,
    num_candidates=32,
    search_steps=10,
    final_entropy_samples=65536,
    whitening_passes=1,
)


def in_region(x, centres):
    """Whether x (…, 2) lies within `RADIUS` of one of `centres` (k, 2)."""
    distance = jnp.sqrt(jnp.sum((x[..., None, :] - centres) ** 2, axis=-1))
    return jnp.any(distance < RADIUS, axis=-1)


def failing(function, centres):
    """`function`, NaN inside the region around `centres`."""
    centres = jnp.asarray(centres)
    return lambda x: jnp.where(in_region(x, centres), jnp.nan, function(x))


def gaussian_log_density(mean, sd):
    def log_density(x):
        standardised = (x - mean) / sd
        return LOG_Z - 0.5 * jnp.sum(standardised**2) - jnp.sum(jnp.log(sd)) - math.log(2 * math.pi)

    return log_density


def ask_tell_run(learner, target, state, key, budget):
    """The run of `gpcompose.run_traceable` as a scan of ask/tell: the final state, every
    asked point and every ask's diagnostics."""

    def step(state, index):
        x, info = learner.ask(state, jax.random.fold_in(key, index))
        state, _ = learner.tell(state, x, target(x))
        return state, (x, info)

    return jax.lax.scan(step, state, jnp.arange(budget))


def outside_region(key, num_points, scale, centre, mean):
    """`num_points` draws of N(`mean`, scale² I) outside the disc around `centre` (NumPy)."""
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel())
    points = np.empty((0, 2))
    while points.shape[0] < num_points:
        draws = mean + scale * rng.standard_normal((2 * num_points, 2))
        points = np.concatenate([points, draws[np.linalg.norm(draws - centre, axis=1) >= RADIUS]])
    return points[:num_points]


def bo_case(acquisition, keys, budget):
    learner = bo.BO(acquisition=acquisition)
    lower, upper = np.asarray(BRANIN.lower), np.asarray(BRANIN.upper)
    f_plus = -BRANIN.minimum if isinstance(acquisition, bo.BoundedEntropySearch) else None
    state = learner.init(np.zeros((0, 2)), np.zeros(0), lower, upper, budget=budget, f_plus=f_plus)
    target = failing(lambda x: -BRANIN(x), BRANIN_MINIMISERS)
    run = jax.jit(jax.vmap(lambda key: ask_tell_run(learner, target, state, key, budget)))
    final, (asked, info) = run(keys)
    values = np.where(np.asarray(final.evaluations.succeeded), np.asarray(final.evaluations.values), -np.inf)
    extra = -np.max(values, axis=1) - BRANIN.minimum
    # the design lasts until `DESIGN` evaluations succeeded; the asks after it are the model's
    successes = np.cumsum(np.asarray(final.evaluations.succeeded), axis=1)
    model = np.concatenate([np.zeros((len(keys), 1), bool), successes[:, :-1] >= DESIGN], axis=1)
    return np.asarray(asked), model, BRANIN_MINIMISERS, extra


def banana_log_density(x):
    """log Z + log N(x₁; 0, 1) + log N(x₂; b(x₁² − 1), s²): the banana x₂ = b(x₁² − 1) + s z₂."""
    return (
        LOG_Z
        - 0.5 * x[0] ** 2
        - 0.5 * ((x[1] - BANANA_BEND * (x[0] ** 2 - 1.0)) / BANANA_SD) ** 2
        - math.log(2 * math.pi * BANANA_SD)
    )


def banana_draws(rng, num_draws):
    first = rng.standard_normal(num_draws)
    return np.stack([first, BANANA_BEND * (first**2 - 1.0) + BANANA_SD * rng.standard_normal(num_draws)], axis=1)


def gaussian_draws(rng, num_draws):
    return SVBMC_MEAN + SVBMC_SD * rng.standard_normal((num_draws, 2))


TARGETS = {  # name: (log density, exact draws, the region's centre: the mode)
    "banana": (banana_log_density, banana_draws, np.array([0.0, -BANANA_BEND])),
    "gaussian": (gaussian_log_density(jnp.asarray(SVBMC_MEAN), jnp.asarray(SVBMC_SD)), gaussian_draws, SVBMC_MEAN),
}


def log_evidence_outside(draws, centres, num_draws=4_000_000):
    """log ∫ of the target outside the region, log Z + log P(x ∉ region) from exact draws of
    the target (sd of the estimate below 2e-4): the evidence when a failure means density 0."""
    sample = draws(np.random.default_rng(0), num_draws)
    outside = np.min(np.linalg.norm(sample[:, None, :] - centres[None], axis=-1), axis=1) >= RADIUS
    return LOG_Z + math.log(np.mean(outside))


def density_case(learner, target, num_initial, scale, keys, budget):
    """BVBMC or SVBMC on `target` (a `TARGETS` name) from `num_initial` points of
    N(mode, scale² I) outside the region."""
    log_density, draws, centre = TARGETS[target]
    centres = centre[None, :]
    X = np.stack([outside_region(key, num_initial, scale, centre, centre) for key in keys])
    y = np.asarray(jax.vmap(jax.vmap(log_density))(jnp.asarray(X)))

    def one(key, X, y):
        state = learner.init(X, y, budget=budget, key=jax.random.fold_in(key, 1))
        final, (asked, _) = ask_tell_run(learner, failing(log_density, centres), state, key, budget)
        return asked, learner.progress_summary(final)["ELBO"][0]

    asked, elbo = jax.jit(jax.vmap(one))(keys, jnp.asarray(X), jnp.asarray(y))
    extra = np.asarray(elbo) - log_evidence_outside(draws, centres)
    return np.asarray(asked), np.ones(np.shape(asked)[:2], bool), centres, extra


def summarise(asked, model, centres, extra):
    """Per seed: model-chosen asks, those inside the region, failures, repeats of a failed point."""
    inside = np.asarray(in_region(jnp.asarray(asked), jnp.asarray(centres)))
    repeats = []
    for points, failed in zip(asked, inside):
        count = 0
        for index in range(1, len(points)):
            earlier = points[:index][failed[:index]]
            if len(earlier) and np.any(
                np.all(np.abs(earlier - points[index]) <= REPEAT_TOLERANCE * (1 + np.abs(earlier)), axis=1)
            ):
                count += 1
        repeats.append(count)
    return {
        "model_chosen": model.sum(axis=1).tolist(),
        "inside_model_chosen": (inside & model).sum(axis=1).tolist(),
        "failed": inside.sum(axis=1).tolist(),
        "repeats": repeats,
        "extra": np.asarray(extra).tolist(),
        "asked": np.asarray(asked).tolist(),
    }


def run_case(case, keys, budget_scale):
    if case == "BO-EI":
        return bo_case(bo.ExpectedImprovement(), keys, int(BO_BUDGET * budget_scale))
    if case == "BO-BES":
        return bo_case(bo.BoundedEntropySearch(), keys, int(BO_BUDGET * budget_scale))
    budget = int(DENSITY_BUDGET * budget_scale)
    if case == "BVBMC":
        return density_case(BVBMC_LEARNER, "banana", BVBMC_INITIAL, 2.0, keys, budget)
    if case == "SVBMC":
        return density_case(SVBMC_LEARNER, "banana", SVBMC_INITIAL, 2.5, keys, budget)
    return density_case(SVBMC_LEARNER, "gaussian", SVBMC_INITIAL, 2.5, keys, budget)


def print_table(records):
    labels = list(dict.fromkeys(record["label"] for record in records))
    print("| case | " + " | ".join(f"inside, {label}" for label in labels) + " | failed | repeats | extra |")
    print("|---|" + "---:|" * len(labels) + "---|---|---|")
    for case in dict.fromkeys(record["case"] for record in records):
        shares, failed, repeats, extra = [], [], [], []
        for label in labels:
            found = [r for r in records if r["case"] == case and r["label"] == label]
            if not found:
                shares.append("–")
                continue
            record = found[-1]
            inside, chosen = sum(record["inside_model_chosen"]), sum(record["model_chosen"])
            shares.append(f"{inside}/{chosen} = {100 * inside / max(chosen, 1):.0f} %")
            failed.append(f"{label} {sum(record['failed'])}")
            repeats.append(f"{label} {sum(record['repeats'])}")
            name = "median regret" if case.startswith("BO") else "median ELBO − log Z_out"
            extra.append(f"{label} {np.median(record['extra']):.3g}")
        print(
            f"| {case} | " + " | ".join(shares) + f" | {', '.join(failed)} | {', '.join(repeats)} "
            f"| {name}: {', '.join(extra)} |"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_output_dir_and_quick(parser)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--label", default="working tree", help="the library version's name in the table")
    parser.add_argument("--table", action="store_true", help="print the table of the JSON and run nothing")
    arguments = parser.parse_args()
    suffix = "_quick" if arguments.quick else ""
    path = arguments.output_dir / f"failure_regions{suffix}.json"
    records = json.loads(path.read_text())["records"] if path.exists() else []
    if not arguments.table:
        seeds, budget_scale = (2, 0.2) if arguments.quick else (arguments.seeds, 1.0)
        keys = jax.random.split(jax.random.key(2024), seeds)
        for case in arguments.cases.split(","):
            if case not in CASES:
                raise ValueError(f"unknown case {case!r}; the cases are {', '.join(CASES)}.")
            start = time.perf_counter()
            summary = summarise(*run_case(case, keys, budget_scale))
            seconds = time.perf_counter() - start
            records = [r for r in records if not (r["case"] == case and r["label"] == arguments.label)]
            library = {"gpcompose": os.path.dirname(gpcompose.__file__), "checkout": code_version()}
            run = host_summary() | {"arguments": {key: str(value) for key, value in vars(arguments).items()}}
            records.append(
                {"case": case, "label": arguments.label, "seconds": seconds, "run": run | library, **summary}
            )
            print(f"{case} ({arguments.label}): {seconds:.0f} s", flush=True)
            write_json(path, {"records": records})
    print_table(records)


if __name__ == "__main__":
    main()
