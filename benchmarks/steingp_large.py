"""Sparse SteinGP on a large data set against an SVGP baseline (SteinGP §5.3, Table 5).

The document's large experiment (550 134 NO2 readings) is not in `shared/data`; the largest UCI
set there is protein (CASP, N = 45 730, D = 9), used here with the document's protocol: random
70/30 splits (`steingp_uci.split`: seeded by the split index, inputs and targets standardised
with the training statistics), M inducing inputs Z from k-means (k-means++ seeding and 20 Lloyd
steps on the training inputs, `aaci_convergence.kmeans`; the document draws Z by a DPP), Z fixed,
minibatches of 256.

1. **SteinGP**: `gpcompose.steingp.fit` with `inducing_points=Z` (model (c): particles over the
   SE-ARD hyperparameters, the noise variance and the M whitened inducing values; minibatch
   scores scaled by N/|B|), J = 30 particles drawn from the default Gamma(1, 2) priors
   (`--initialization around_initial`: u₀ + N(0, I) around lengthscales √D and unit variances),
   1000 steps of Adam (document: learning rate 0.001).
2. **SVGP-Adam** (Hensman et al. 2015; `aaci_convergence.svgp_adam`): q(v) = N(m, L Lᵀ) over the
   whitened inducing values and the hyperparameters (no priors; lengthscales √(mean pairwise
   squared distance), variance 1, noise variance 1 at the start) by one Adam on the minibatch
   ELBO, 10 000 steps at the same learning rate (document's SVI baseline settings).

Reported per split: test log-likelihood (mean per point of log p(y* | data), standardised
units: the particle mixture's for SteinGP, q's predictive for SVGP), RMSE of the predictive mean
(standardised), and wall time. SteinGP's wall time runs from the call of `fit` until the test
densities are computed (compilation included, once per split); SVGP's is its training time with
compilation given apart, and its test metrics at checkpoints are outside the clock.

Usage:
    python benchmarks/steingp_large.py --splits 5
    python benchmarks/steingp_large.py --num-inducing 300 --splits 2
    python benchmarks/steingp_large.py --quick
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import types  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from _common import agg_pyplot, save_figure, timed_steingp_fit, utc_timestamp, write_json  # noqa: E402
from aaci_convergence import initial_model as svgp_initial_model  # noqa: E402
from aaci_convergence import kmeans, run_method  # noqa: E402
from steingp_uci import initial_model, split, summary  # noqa: E402

# Document Table 5 (NO2, 5 random 70/30 splits): a different data set, for scale only.
DOCUMENT_TABLE_5 = {
    "SteinGP": {"rmse": "0.82 ± 0.09", "test_log_likelihood": "-1.358 ± 0.15", "wall_s": 332},
    "SVI": {"rmse": "0.79 ± 0.07", "test_log_likelihood": "-1.342 ± 0.11", "wall_s": 141},
}


def load(data_dir, max_points):
    data = np.loadtxt(os.path.join(data_dir, "uci", "protein.csv"), delimiter=",", skiprows=1, ndmin=2)
    if max_points is not None:
        data = data[np.random.default_rng(0).permutation(data.shape[0])[:max_points]]
    return data[:, :-1], data[:, -1]


def steingp_record(X, y, X_test, y_test, Z, split_index, args):
    kernel, likelihood = initial_model(X.shape[1], classification=False)
    result, mean, log_density, wall = timed_steingp_fit(
        X,
        y,
        X_test,
        y_test,
        split_index,
        kernel=kernel,
        likelihood=likelihood,
        num_particles=args.particles,
        num_steps=args.steingp_steps,
        inducing_points=Z,
        batch_size=args.batch_size,
        optimizer=optax.adam(args.learning_rate),
        initialization=args.initialization,
    )
    kernels, likelihoods = result.components
    return {
        "test_log_likelihood": float(jnp.mean(log_density)),
        "rmse": float(jnp.sqrt(jnp.mean((mean - y_test) ** 2))),
        "wall_s": wall,
        "steps_finite": float(jnp.mean(result.info.finite)),
        "particle_lengthscales": np.asarray(kernels.lengthscale.value).tolist(),
        "particle_noise_variances": np.asarray(likelihoods.variance.value).tolist(),
    }


def svgp_record(X, y, X_test, y_test, Z, split_index, args):
    key = jax.random.key(split_index)
    model = svgp_initial_model(X, "gaussian", key)
    options = types.SimpleNamespace(batch_size=args.batch_size, learning_rate=args.learning_rate)
    result = run_method("svgp_adam", model, Z, X, y, X_test, y_test, options, args.svgp_steps, key)
    return {
        "test_log_likelihood": -result["final_nll"],
        "rmse": result["final_metric"],
        "wall_s": result["train_seconds"],
        "compile_s": result["compile_seconds"],
        "curve": result["curve"],
        "hyperparameters": result["hyperparameters"],
    }


def plot(records, path):
    """SVGP's test log-likelihood against training time per split, SteinGP's final value as a marker."""
    plt = agg_pyplot()
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for record in records:
        if record["method"] == "SVGP-Adam":
            curve = [point for point in record["curve"] if point["seconds"] > 0]
            axis.plot([p["seconds"] for p in curve], [-p["nll"] for p in curve], color="C0", alpha=0.7)
        else:
            axis.plot(record["wall_s"], record["test_log_likelihood"], "o", color="C1")
    axis.plot([], [], color="C0", label="SVGP-Adam (training time)")
    axis.plot([], [], "o", color="C1", label="SteinGP (wall time incl. compile and prediction)")
    axis.set_xscale("log")
    axis.set_xlabel("wall time [s]")
    axis.set_ylabel("test log-likelihood per point (std. units)")
    axis.set_title("protein (CASP), sparse SteinGP vs SVGP")
    axis.legend()
    save_figure(figure, path)


def svgp_at_step(record, step):
    """SVGP's (test log-likelihood, RMSE, training seconds) at checkpoint `step` of its curve."""
    point = next(point for point in record["curve"] if point["step"] == step)
    return {"test_log_likelihood": -point["nll"], "rmse": point["metric"], "wall_s": point["seconds"]}


def print_table(records, steingp_steps):
    """SteinGP, SVGP after all its steps, and SVGP after as many steps as SteinGP (from its curve)."""
    svgp = [record for record in records if record["method"] == "SVGP-Adam"]
    rows = {
        "SteinGP": [record for record in records if record["method"] == "SteinGP"],
        "SVGP-Adam": svgp,
        f"SVGP-Adam after {steingp_steps} steps": [svgp_at_step(record, steingp_steps) for record in svgp],
    }
    print("| method | test log-lik. | RMSE (std.) | wall s per fit | document Table 5 (NO2, other data) |")
    print("|---|---|---|---|---|")
    for method, entries in rows.items():
        if not entries:
            continue
        walls = ", ".join(f"{entry['wall_s']:.0f}" for entry in entries)
        reference = DOCUMENT_TABLE_5.get({"SteinGP": "SteinGP", "SVGP-Adam": "SVI"}.get(method))
        document = ""
        if reference:
            document = f"{reference['test_log_likelihood']} / {reference['rmse']} / {reference['wall_s']} s"
        log_likelihood = summary([entry["test_log_likelihood"] for entry in entries])
        rmse = summary([entry["rmse"] for entry in entries])
        print(f"| {method} | {log_likelihood} | {rmse} | {walls} | {document} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--output-dir", default="benchmarks/results")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--first-split", type=int, default=0)
    parser.add_argument("--num-inducing", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--particles", type=int, default=30)
    parser.add_argument("--steingp-steps", type=int, default=1000)
    parser.add_argument("--svgp-steps", type=int, default=10000)
    parser.add_argument("--learning-rate", type=float, default=0.001)
    parser.add_argument("--methods", default="SteinGP,SVGP-Adam")
    parser.add_argument(
        "--initialization",
        default="prior",
        choices=("prior", "around_initial"),
        help="SteinGP's initial particles: from the priors (document) or u₀ + N(0, I) around the initial values",
    )
    parser.add_argument("--name", default="steingp_large", help="the JSON and plot are OUTPUT_DIR/NAME.{json,png}")
    parser.add_argument("--max-points", type=int, default=None, help="use this many (shuffled) rows")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; its numbers mean nothing")
    parser.add_argument("--table", metavar="JSON", help="only print the table of this result file")
    args = parser.parse_args()
    if args.table:
        with open(args.table) as file:
            results = json.load(file)
        print_table(results["records"], results["arguments"]["steingp_steps"])
        return
    if args.quick:
        args.max_points, args.num_inducing, args.splits = 2000, 20, 1
        args.particles, args.steingp_steps, args.svgp_steps = 4, 20, 50
    X_all, y_all = load(args.data_dir, args.max_points)
    records = []
    for split_index in range(args.first_split, args.first_split + args.splits):
        X, y, X_test, y_test = (jnp.asarray(a) for a in split(X_all, y_all, split_index, classification=False))
        Z = kmeans(jax.random.key(split_index), X, args.num_inducing)
        for method in args.methods.split(","):
            record = {"SteinGP": steingp_record, "SVGP-Adam": svgp_record}[method]
            entry = {"split": split_index, "method": method} | record(X, y, X_test, y_test, Z, split_index, args)
            records.append(entry)
            shown = {key: value for key, value in entry.items() if not isinstance(value, list)}
            print(shown, flush=True)
    name = args.name + ("_quick" if args.quick else "")
    write_json(
        os.path.join(args.output_dir, name + ".json"),
        {
            "arguments": vars(args),
            "date": utc_timestamp(),
            "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "load": os.getloadavg()},
            "num_train": int(X.shape[0]),
            "num_test": int(X_test.shape[0]),
            "records": records,
            "document_table_5_no2": DOCUMENT_TABLE_5,
        },
    )
    plot(records, os.path.join(args.output_dir, name + ".png"))
    print()
    print_table(records, args.steingp_steps)


if __name__ == "__main__":
    main()
