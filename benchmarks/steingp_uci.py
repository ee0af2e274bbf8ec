"""SteinGP on UCI regression and binary classification sets (SteinGP §5.1, Table 8)
against our own ML-II (regression) baseline.

Protocol (document §5.1): random 70/30 splits; inputs and (for regression) targets
standardised with the training split's mean and sd; ARD squared-exponential kernel with
initial lengthscales √D, signal variance 1 and noise variance 1; SteinGP's default
Gamma(shape 1, scale 2) priors; J particles of `gpcompose.steingp.fit` (conjugate model for
regression, whitened model with the logit link for classification), Adam. Baselines on the
same splits: ML-II of the exact GP (regression; BFGS, no priors) and, for classification,
variational type-II ML with the same logit link (`gpcompose.aaci.fit`: full-GP CAVI on the
Pólya-Gamma augmented model with Adam on the kernel hyperparameters, no priors; the
document's "VI" column). Reported per data set: mean test log-likelihood per point (in
standardised units for regression, as the document's values are) and RMSE (standardised)
or accuracy, mean ± standard error over splits, and wall time per fit (the first fit of a
configuration includes compilation). `--lengthscale-prior scaled` replaces the lengthscales'
Gamma(1, scale 2) prior by Gamma(1, scale 2√D) (mean 2√D, in proportion to the initial
lengthscales √D; [ours]), whose rows are labelled "(ℓ prior scale 2√D)". `--deduplicate` keeps
only the first of the rows with equal inputs ([ours]; wine-red repeats 240 rows, so about a fifth
of its test inputs are also training inputs). Every record counts the test inputs seen in
training and, when there are any, splits the test log-likelihood between those and the rest; each
fit also records its hyperparameters (per particle for SteinGP). The JSON is
rewritten after every fit, so a run that is stopped keeps what it finished; `--first-split`
resumes at a later split.

Usage:
    python benchmarks/steingp_uci.py --datasets boston,yacht --splits 5 --particles 2,5,10,20
    python benchmarks/steingp_uci.py --quick
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from _common import code_version, ml2_fit_predict, timed_steingp_fit, utc_timestamp, write_json  # noqa: E402

from gpcompose.kernels import SquaredExponential  # noqa: E402
from gpcompose.likelihoods import Bernoulli, Gaussian  # noqa: E402
from gpcompose.parameters import Positive  # noqa: E402
from gpcompose.priors import Gamma  # noqa: E402

FILES = {
    "boston": "uci/boston.csv",
    "concrete": "uci/concrete.csv",
    "energy": "uci/energy.csv",
    "yacht": "uci/yacht.csv",
    "wine_quality_red": "uci/wine_quality_red.csv",
    "breast_cancer": "classification/breast_cancer.csv",
    "heart": "classification/heart.csv",
    "ionosphere": "classification/ionosphere.csv",
    "sonar": "classification/sonar.csv",
}
PRIOR_LABEL = "(ℓ prior scale 2√D)"
CLASSIFICATION = {"breast_cancer", "heart", "ionosphere", "sonar"}
# Document Table 8, mean test log-likelihood (SteinGP2, SteinGP5, SteinGP10, SteinGP20, ML), where the set overlaps.
DOCUMENT_TABLE_8 = {
    "boston": {2: "-0.3±0.12", 5: "-0.28±0.11", 10: "-0.3±0.12", 20: "-0.3±0.13", "ML": "-0.31±0.13"},
    "concrete": {2: "-0.25±0.07", 5: "-0.25±0.07", 10: "-0.25±0.07", 20: "-0.25±0.07", "ML": "-0.24±0.05"},
    "wine_quality_red": {2: "-1.17±0.03", 5: "-1.17±0.03", 10: "-1.17±0.03", 20: "-1.17±0.03", "ML": "-1.16±0.03"},
}


def load(data_dir, name, deduplicate=False):
    """Inputs and targets of a data set; with `deduplicate`, only the first of every set of rows
    with equal inputs (wine-red has 240 such repeats, all with equal targets)."""
    data = np.loadtxt(os.path.join(data_dir, FILES[name]), delimiter=",", skiprows=1, ndmin=2)
    if deduplicate:
        _, first = np.unique(data[:, :-1], axis=0, return_index=True)
        data = data[np.sort(first)]
    return data[:, :-1], data[:, -1]


def inputs_seen_in_training(X_train, X_test):
    """Mask of the test inputs that equal some training input (row for row)."""
    return np.any(np.all(X_test[:, None, :] == X_train[None, :, :], axis=-1), axis=1)


def fitted_hyperparameters(kernel, likelihood):
    """Signal variance, median lengthscale and (regression) noise variance, as lists over the
    leading particle axis when there is one."""
    values = {
        "signal_variance": np.asarray(kernel.variance.value),
        "median_lengthscale": np.median(np.asarray(kernel.lengthscale.value), axis=-1),
    }
    if isinstance(likelihood, Gaussian):
        values["noise_variance"] = np.asarray(likelihood.variance.value)
    return {key: np.atleast_1d(value).tolist() for key, value in values.items()}


def split(X, y, seed, classification):
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    cut = int(round(0.7 * len(y)))
    train, test = order[:cut], order[cut:]
    mean, sd = X[train].mean(axis=0), X[train].std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    X_train, X_test = (X[train] - mean) / sd, (X[test] - mean) / sd
    if classification:
        return X_train, y[train], X_test, y[test]
    y_mean, y_sd = y[train].mean(), y[train].std()
    return X_train, (y[train] - y_mean) / y_sd, X_test, (y[test] - y_mean) / y_sd


def initial_model(dimension, classification, lengthscale_prior="document"):
    """SE-ARD kernel with lengthscales √D and unit variance, and the likelihood. The lengthscales'
    prior is SteinGP's default Gamma(1, scale 2) for `"document"`, or Gamma(1, scale 2√D) for
    `"scaled"` (mean 2√D, in proportion to the initial lengthscales; [ours])."""
    lengthscale = np.full(dimension, np.sqrt(dimension))
    if lengthscale_prior == "scaled":
        lengthscale = Positive(lengthscale, minimum=1e-6, prior=Gamma(1.0, 2.0 * np.sqrt(dimension)))
    kernel = SquaredExponential(lengthscale=lengthscale, variance=1.0)
    return kernel, (Bernoulli(link="logit") if classification else Gaussian(variance=1.0))


def steingp_fit(
    X, y, X_test, y_test, seen, seed, num_particles, num_steps, optimizer, classification, lengthscale_prior
):
    kernel, likelihood = initial_model(X.shape[1], classification, lengthscale_prior)
    result, mean, log_density, wall = timed_steingp_fit(
        X,
        y,
        X_test,
        y_test,
        seed,
        kernel=kernel,
        likelihood=likelihood,
        num_particles=num_particles,
        num_steps=num_steps,
        optimizer=optimizer,
    )
    return metrics(np.asarray(mean), np.asarray(log_density), y_test, classification, seen) | {
        "wall_s": wall,
        "steps_finite": float(np.mean(result.info.finite)),
        "particles": fitted_hyperparameters(*result.components),
    }


def metrics(mean, log_density, y_test, classification, seen):
    """Test log-likelihood per point (also over the test inputs `seen` in training and the rest,
    when there are any of the first) and RMSE or accuracy."""
    record = {"test_log_likelihood": float(np.mean(log_density))}
    if seen.any():
        record["test_log_likelihood_seen_inputs"] = float(np.mean(log_density[seen]))
        record["test_log_likelihood_unseen_inputs"] = float(np.mean(log_density[~seen]))
    if classification:
        record["accuracy"] = float(np.mean((mean > 0.5) == (y_test > 0.5)))
    else:
        record["rmse"] = float(np.sqrt(np.mean((mean - y_test) ** 2)))
    return record


def ml2_fit(X, y, X_test, y_test, seen):
    # the same 10⁻⁶ lower bound as SteinGP's constraint: without a prior ML-II can drive the
    # noise variance to 0 on a nearly noise-free set (yacht), which a zero bound rejects
    dimension = X.shape[1]
    kernel = SquaredExponential(
        lengthscale=Positive(np.full(dimension, np.sqrt(dimension)), minimum=1e-6), variance=Positive(1.0, minimum=1e-6)
    )
    likelihood = Gaussian(variance=Positive(1.0, minimum=1e-6))
    start = time.perf_counter()
    kernel, likelihood, mean, variance = ml2_fit_predict(kernel, likelihood, X, y, X_test)
    log_density = likelihood.log_predictive_density(jnp.asarray(y_test), mean, variance)
    jax.block_until_ready(log_density)
    wall = time.perf_counter() - start
    return metrics(np.asarray(mean), np.asarray(log_density), y_test, False, seen) | {
        "wall_s": wall,
        "hyperparameters": fitted_hyperparameters(kernel, likelihood),
    }


def vi_fit(X, y, X_test, y_test, seen, seed, num_steps, learning_rate):
    """Variational type-II ML for classification: `gpcompose.aaci.fit` (full-GP CAVI, logit link)
    with Adam on the SE-ARD hyperparameters (same start as SteinGP's kernel, no priors)."""
    import gpcompose

    kernel, _ = initial_model(X.shape[1], classification=True)
    start = time.perf_counter()
    result = gpcompose.aaci.fit(
        X,
        y,
        key=jax.random.key(seed),
        likelihood=gpcompose.likelihoods.Logistic(),
        kernel=kernel,
        num_steps=num_steps,
        optimizer=optax.adam(learning_rate),
    )
    probability = result.class_probability(X_test)
    log_density = result.log_predictive_density(X_test, y_test)
    jax.block_until_ready(log_density)
    wall = time.perf_counter() - start
    return metrics(np.asarray(probability), np.asarray(log_density), y_test, True, seen) | {"wall_s": wall}


def summary(values):
    values = np.asarray(values)
    standard_error = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else float("nan")
    return f"{values.mean():.3f} ± {standard_error:.3f}"


def print_table(records):
    header = ("data set", "method", "test log-lik. (ours)", "RMSE / accuracy", "wall s per fit", "splits", "Table 8")
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|---|---|---|---|")
    for dataset in dict.fromkeys(record["dataset"] for record in records):
        for method in dict.fromkeys(record["method"] for record in records if record["dataset"] == dataset):
            rows = [r for r in records if r["dataset"] == dataset and r["method"] == method]
            second = summary([r.get("rmse", r.get("accuracy")) for r in rows])
            walls = ", ".join(f"{r['wall_s']:.0f}" for r in rows)
            key = {"ML-II": "ML", "VI": "VI"}.get(method) or int(re.match(r"SteinGP(\d+)", method)[1])
            document = DOCUMENT_TABLE_8.get(dataset, {}).get(key, "–") if PRIOR_LABEL not in method else "–"
            log_likelihood = summary([r["test_log_likelihood"] for r in rows])
            splits = ",".join(str(r["split"]) for r in rows)
            print(f"| {dataset} | {method} | {log_likelihood} | {second} | {walls} | {splits} | {document} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--output-dir", default="benchmarks/results")
    parser.add_argument("--name", default="steingp_uci", help="the JSON is OUTPUT_DIR/NAME.json")
    parser.add_argument("--datasets", default="boston,concrete,energy,yacht,wine_quality_red,heart,ionosphere,sonar")
    parser.add_argument("--particles", default="2,5,10,20", help="comma-separated particle counts J")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--first-split", type=int, default=0)
    parser.add_argument("--num-steps", type=int, default=1000)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument(
        "--lengthscale-prior",
        choices=("document", "scaled"),
        default="document",
        help="Gamma(1, scale 2) on the lengthscales (the document's), or Gamma(1, scale 2√D)",
    )
    parser.add_argument("--skip-baseline", action="store_true", help="no ML-II / VI fits")
    parser.add_argument(
        "--deduplicate", action="store_true", help="keep only the first of the rows with equal inputs ([ours])"
    )
    parser.add_argument("--table", nargs="+", metavar="JSON", help="only print the table of these result files")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.table:
        records = []
        for path in args.table:
            with open(path) as file:
                records += json.load(file)["records"]
        print_table(records)
        return
    if args.quick:
        args.datasets, args.particles, args.splits, args.num_steps = "yacht", "2", 1, 10
        args.name = "steingp_uci_quick"
    particle_counts = [int(count) for count in args.particles.split(",")]
    optimizer = optax.adam(args.learning_rate)
    records = []
    code = code_version()  # at the start: the modules are imported, later edits do not run

    def add(record):
        records.append(record)
        print(record, flush=True)
        write_json(
            os.path.join(args.output_dir, args.name + ".json"),
            {
                "arguments": vars(args),
                "date": utc_timestamp(),
                "code": code,
                "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "load": os.getloadavg()},
                "records": records,
                "document_table_8": {key: {str(k): v for k, v in row.items()} for key, row in DOCUMENT_TABLE_8.items()},
            },
        )

    for name in args.datasets.split(","):
        classification = name in CLASSIFICATION
        X_all, y_all = load(args.data_dir, name, args.deduplicate)
        for split_index in range(args.first_split, args.first_split + args.splits):
            X, y, X_test, y_test = split(X_all, y_all, split_index, classification)
            seen = inputs_seen_in_training(X, X_test)
            fields = {
                "dataset": name + (" (deduplicated)" if args.deduplicate else ""),
                "split": split_index,
                "test_inputs_seen_in_training": int(seen.sum()),
            }
            for num_particles in particle_counts:
                record = steingp_fit(
                    X,
                    y,
                    X_test,
                    y_test,
                    seen,
                    split_index,
                    num_particles,
                    args.num_steps,
                    optimizer,
                    classification,
                    args.lengthscale_prior,
                )
                label = f"SteinGP{num_particles}" + (f" {PRIOR_LABEL}" if args.lengthscale_prior == "scaled" else "")
                add(fields | {"method": label} | record)
            if args.skip_baseline:
                continue
            if classification:
                baseline = vi_fit(X, y, X_test, y_test, seen, split_index, args.num_steps, args.learning_rate)
                add(fields | {"method": "VI"} | baseline)
            else:
                add(fields | {"method": "ML-II"} | ml2_fit(X, y, X_test, y_test, seen))
    print()
    print_table(records)


if __name__ == "__main__":
    main()
