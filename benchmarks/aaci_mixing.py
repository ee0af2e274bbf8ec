"""AACI Gibbs sampler vs NUTS (numpyro) on small real data sets (AACI document §5.1, Table 2).

For each likelihood the same GP model (SE kernel, lengthscale √(mean pairwise squared distance) and
variance 1 as in the document's code; inputs standardised; regression targets standardised) is
sampled by `gpcompose.aaci.Gibbs` (exact ω samplers) and by numpyro's NUTS on the whitened latent
f = L z (the document's HMC baseline also whitens).

Reported per sampler: seconds per sample (Gibbs: all chains in one vmapped program, timed after a
compile-and-warm-up call, burn-in of num_samples/10 sweeps included in the timed call; NUTS:
numpyro's "vectorized" chains, timed for the sampling phase after `mcmc.warmup`, whose time
(adaptation over num_samples/2 iterations plus compilation) is reported separately), the lag-1
autocorrelation of f averaged over data points and chains, ESS per second (numpyro's
`effective_sample_size`, min and median over the N latent dimensions) and the split R-hat (max
over dimensions).

Data: the first `--num-points` rows (the document's code used the first 100) of
classification/heart.csv (logistic, labels {0,1} → {−1,1}) and uci/boston.csv (Student-t ν = 3,
Laplace b = 1, Matérn-3/2 ρ = 1; the document's code values) under `--data-dir`.
"""

import argparse
import json
import os
import platform
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from _common import add_aaci_dirs, agg_pyplot, save_figure, write_json  # noqa: E402
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402

import gpcompose  # noqa: E402

DOCUMENT = {  # Table 2 (HMC, Gibbs): seconds per sample, lag-1 autocorrelation, Gelman–Rubin
    "logistic": {"HMC": (0.041, 0.53, 1.00), "Gibbs": (0.01, 0.11, 1.00)},
    "student_t": {"HMC": (0.573, 0.857, 1.00), "Gibbs": (0.028, 0.04, 1.00)},
    "laplace": {"HMC": (0.082, 0.931, 1.01), "Gibbs": (0.028, 0.26, 1.00)},
    "matern32": {"HMC": (0.15, 0.995, 1.10), "Gibbs": (0.029, 0.05, 1.00)},
}


def load(data_dir, name, num_points):
    path = os.path.join(data_dir, "classification/heart.csv" if name == "logistic" else "uci/boston.csv")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)[:num_points]
    X, y = data[:, :-1], data[:, -1]
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    y = 2 * y - 1 if name == "logistic" else (y - y.mean()) / y.std()
    return jnp.asarray(X), jnp.asarray(y)


def likelihood_of(name):
    return {
        "logistic": gpcompose.likelihoods.Logistic(),
        "student_t": gpcompose.likelihoods.StudentT(3.0, 1.0),
        "laplace": gpcompose.likelihoods.Laplace(1.0),
        "matern32": gpcompose.likelihoods.Matern32Likelihood(1.0),
    }[name]


def lag_one_autocorrelation(chains):
    """Mean over chains and dimensions of the lag-1 autocorrelation; chains: (C, T, N)."""
    centred = chains - chains.mean(1, keepdims=True)
    numerator = np.sum(centred[:, 1:] * centred[:, :-1], 1)
    denominator = np.sum(centred**2, 1)
    return float(np.mean(numerator / np.where(denominator > 0, denominator, 1.0)))


def summarise(chains, seconds):
    ess = np.asarray(effective_sample_size(chains))
    num_samples = chains.shape[0] * chains.shape[1]
    return {
        "seconds_per_sample": seconds / num_samples,
        "lag1": lag_one_autocorrelation(chains),
        "ess_min_per_second": float(ess.min() / seconds),
        "ess_median_per_second": float(np.median(ess) / seconds),
        "rhat_max": float(np.max(split_gelman_rubin(chains))),
    }


def run_gibbs(kernel, likelihood, X, y, num_chains, num_samples, burn_in, key):
    sampler = gpcompose.aaci.Gibbs(kernel, likelihood)

    @jax.jit
    def chains(key):
        def chain(chain_key):
            init_key, run_key = jax.random.split(chain_key)
            return gpcompose.run(sampler, sampler.init(X, key=init_key), run_key, burn_in + num_samples, y)[1].latent

        return jax.vmap(chain)(jax.random.split(key, num_chains))

    start = time.perf_counter()
    jax.block_until_ready(chains(jax.random.key(1)))  # compile + warm-up
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    draws = np.asarray(jax.block_until_ready(chains(key)))[:, burn_in:]
    seconds = time.perf_counter() - start
    return draws, seconds, compile_seconds


def run_nuts(kernel, likelihood, X, y, num_chains, num_samples, num_warmup, key):
    lower = jnp.linalg.cholesky(kernel.gram(X) + 1e-8 * jnp.eye(X.shape[0]))

    def model():
        z = numpyro.sample("z", dist.Normal(jnp.zeros(X.shape[0]), 1.0).to_event(1))
        f = numpyro.deterministic("f", lower @ z)
        numpyro.factor("likelihood", jnp.sum(likelihood.log_prob(y, f)))

    mcmc = MCMC(
        NUTS(model),
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        chain_method="vectorized",
        progress_bar=False,
    )
    warmup_key, sample_key = jax.random.split(key)
    start = time.perf_counter()
    mcmc.warmup(warmup_key)  # compilation and adaptation
    warmup_seconds = time.perf_counter() - start
    start = time.perf_counter()
    mcmc.run(sample_key)  # sampling from the adapted state
    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["f"])
    seconds = time.perf_counter() - start
    return draws, seconds, warmup_seconds


def plot(results, path):
    """Lag-1 autocorrelation and minimum ESS per second of both samplers, one group per likelihood."""
    plt = agg_pyplot()
    names = list(results["rows"])
    positions = np.arange(len(names))
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for offset, sampler in [(-0.2, "NUTS"), (0.2, "Gibbs")]:
        axes[0].bar(positions + offset, [results["rows"][n][sampler]["lag1"] for n in names], 0.4, label=sampler)
        axes[1].bar(positions + offset, [results["rows"][n][sampler]["ess_min_per_second"] for n in names], 0.4)
    for axis, title in zip(axes, ["lag-1 autocorrelation of f", "min ESS per second"]):
        axis.set_xticks(positions, names)
        axis.set_title(title)
    axes[0].legend()
    save_figure(figure, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_aaci_dirs(parser)
    parser.add_argument("--num-points", type=int, default=100)
    parser.add_argument("--num-chains", type=int, default=5)
    parser.add_argument("--num-samples", type=int, default=2000)
    parser.add_argument("--likelihoods", default="logistic,student_t,laplace,matern32")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--replot", action="store_true", help="only redraw the PNG from an existing JSON")
    args = parser.parse_args()
    json_path = os.path.join(args.output_dir, "aaci_mixing.json")
    if args.replot:
        with open(json_path) as file:
            plot(json.load(file), json_path.replace(".json", ".png"))
        return
    if args.quick:
        args.num_points, args.num_samples = 20, 200
    results = {"args": vars(args), "machine": platform.platform(), "load_before": os.getloadavg(), "rows": {}}
    for name in args.likelihoods.split(","):
        X, y = load(args.data_dir, name, args.num_points)
        squared = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, -1)
        lengthscale = float(jnp.sqrt(jnp.mean(squared)))
        kernel = gpcompose.kernels.SquaredExponential(lengthscale, 1.0)
        likelihood = likelihood_of(name)
        gibbs, gibbs_seconds, compile_seconds = run_gibbs(
            kernel, likelihood, X, y, args.num_chains, args.num_samples, args.num_samples // 10, jax.random.key(0)
        )
        nuts, nuts_seconds, warmup_seconds = run_nuts(
            kernel, likelihood, X, y, args.num_chains, args.num_samples, args.num_samples // 2, jax.random.key(0)
        )
        results["rows"][name] = {
            "Gibbs": {**summarise(gibbs, gibbs_seconds), "compile_seconds": compile_seconds},
            "NUTS": {**summarise(nuts, nuts_seconds), "warmup_seconds": warmup_seconds},
            "posterior_mean_difference_max": float(np.max(np.abs(gibbs.mean((0, 1)) - nuts.mean((0, 1))))),
            "posterior_sd_max": float(np.max(nuts.std((0, 1)))),
        }
        print(name, json.dumps(results["rows"][name]), flush=True)
    results["load_after"] = os.getloadavg()
    write_json(json_path, results)
    plot(results, json_path.replace(".json", ".png"))
    print(
        "| likelihood | sampler | s/sample | lag-1 | ESS/s (min, median) | R-hat max | document (s/sample, lag-1, R) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, row in results["rows"].items():
        for sampler, document in [("NUTS", "HMC"), ("Gibbs", "Gibbs")]:
            r = row[sampler]
            doc = DOCUMENT[name][document]
            print(
                f"| {name} | {sampler} | {r['seconds_per_sample']:.2g} | {r['lag1']:.3f} | "
                f"{r['ess_min_per_second']:.3g}, {r['ess_median_per_second']:.3g} | {r['rhat_max']:.3f} | "
                f"{document}: {doc[0]}, {doc[1]}, {doc[2]} |"
            )


if __name__ == "__main__":
    main()
