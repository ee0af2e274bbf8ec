"""Ground truth for the Lotka–Volterra benchmark (SVBMC §5.3): reference posterior samples
and log Z of `benchmark_problems.LotkaVolterra` on the Hudson's Bay data.

1. MAP search: L-BFGS (scipy) on z = log x from the prior mean and from prior draws; the
   distinct optima found are reported (a second mode with real mass would show up here).
2. NUTS (numpyro, `potential_fn` U(z) = −log p(eᶻ) − Σ z, dense mass matrix): several chains
   started from the best optimum with jitter. Split R-hat and effective sample sizes come
   from `numpyro.diagnostics`; the run fails loudly if max R-hat > 1.01.
3. log Z by importance sampling on z: a multivariate t proposal (ν = 5) with the mean and
   covariance of the log-samples as location and scale (so its covariance is 5/3 of the
   posterior's), log Ẑ = log mean_n wₙ, wₙ = p(e^{zₙ}) e^{Σ zₙ} / q(zₙ). The Monte Carlo
   standard error is the delta-method one, SE(log Ẑ) ≈ sd(w)/(mean(w) √N); the spread of
   the estimates from 20 disjoint batches is reported next to it, and the importance-
   weighted posterior mean is compared with the MCMC mean.

Usage:
    python benchmarks/reference_lotka_volterra.py            # full run (5-7 min on 2 busy cores)
    python benchmarks/reference_lotka_volterra.py --quick    # smoke run; its numbers mean nothing
Writes `<output-dir>/lotka_volterra.npz` (samples thinned to ~20 000, `log_normaliser`,
`log_normaliser_standard_error`), `<output-dir>/lotka_volterra.json` (summary) and
`<output-dir>/lotka_volterra.png` (marginals and posterior predictive).
"""

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402
from _common import add_reference_dirs, agg_pyplot, machine_with_load, save_figure, utc_timestamp, write_json  # noqa: E402
from _reference_sampling import importance_sampling, run_nuts  # noqa: E402
from benchmark_problems import load_lotka_volterra  # noqa: E402

plt = agg_pyplot()

NAMES = ["alpha", "beta", "gamma", "delta", "hare_initial", "lynx_initial", "sigma_hare", "sigma_lynx"]
MAX_R_HAT = 1.01


def log_target(model):
    """log p(eᶻ) + Σ z: the posterior density of z = log x (up to Z)."""
    return lambda z: model.log_density(jnp.exp(z)) + jnp.sum(z)


def find_optima(model, rng, num_starts):
    """L-BFGS on −log p(eᶻ) − Σ z from the prior median and from `num_starts` − 1 prior draws;
    returns the distinct optima (log density, z, times found, and the Laplace approximation
    log p(z*) + (D/2) log 2π − ½ log det H of the mass around each, H the Hessian of −log p at z*),
    best first."""
    objective = jax.jit(jax.value_and_grad(lambda z: -log_target(model)(z)))

    def numpy_objective(z):
        value, gradient = objective(jnp.asarray(z))
        if not np.isfinite(value):
            return 1e300, np.zeros_like(z)
        return float(value), np.asarray(gradient)

    starts = np.empty((num_starts, 8))
    starts[:, [0, 2]] = np.log(scipy.stats.truncnorm.rvs(-2.0, np.inf, 1.0, 0.5, (num_starts, 2), random_state=rng))
    starts[:, [1, 3]] = np.log(scipy.stats.truncnorm.rvs(-1.0, np.inf, 0.05, 0.05, (num_starts, 2), random_state=rng))
    starts[:, 4:6] = rng.normal(np.log(10.0), 1.0, (num_starts, 2))
    starts[:, 6:8] = rng.normal(-1.0, 1.0, (num_starts, 2))
    starts[0] = np.log([1.0, 0.05, 1.0, 0.05, 10.0, 10.0, np.exp(-1.0), np.exp(-1.0)])
    hessian = jax.jit(jax.hessian(lambda z: -log_target(model)(z)))
    optima = []
    for start in starts:
        result = scipy.optimize.minimize(numpy_objective, start, jac=True, method="L-BFGS-B")
        if result.fun >= 1e300:
            continue
        for optimum in optima:
            if np.max(np.abs(result.x - optimum["z"])) < 1e-2:
                optimum["count"] += 1
                break
        else:
            eigenvalues = np.linalg.eigvalsh(np.asarray(hessian(jnp.asarray(result.x))))
            positive_definite = bool(np.all(eigenvalues > 0))
            log_determinant = np.sum(np.log(np.abs(eigenvalues)))
            laplace = -result.fun + 0.5 * result.x.shape[0] * np.log(2 * np.pi) - 0.5 * log_determinant
            optima.append(
                {
                    "log_density": float(-result.fun),
                    "laplace_log_normaliser": float(laplace) if positive_definite else None,
                    "z": result.x,
                    "count": 1,
                }
            )
    return sorted(optima, key=lambda optimum: -optimum["log_density"])


def plot(model, samples, path):
    figure, axes = plt.subplots(3, 4, figsize=(14, 9))
    for dimension, axis in enumerate(axes[:2].ravel()):
        axis.hist(samples[:, dimension], bins=80, density=True, color="tab:blue", alpha=0.7)
        axis.set_title(NAMES[dimension])
    paths = np.exp(np.asarray(jax.vmap(model.log_populations)(jnp.asarray(samples[:: max(1, len(samples) // 200)]))))
    years = np.asarray(model.years) + 1900
    for species, (axis, observed, name) in enumerate(zip(axes[2, :2], (model.hare, model.lynx), ("hare", "lynx"))):
        axis.plot(years, paths[:, :, species].T, color="tab:blue", alpha=0.05)
        axis.plot(years, np.asarray(observed), "ko", markersize=3)
        axis.set_title(f"{name}: ODE paths, data")
    for axis in axes[2, 2:]:
        axis.axis("off")
    save_figure(figure, path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_reference_dirs(parser)
    parser.add_argument("--num-chains", type=int, default=4)
    parser.add_argument("--num-warmup", type=int, default=2000)
    parser.add_argument("--num-samples", type=int, default=10000, help="per chain")
    parser.add_argument("--num-thinned", type=int, default=20000, help="samples kept in the .npz")
    parser.add_argument("--num-proposals", type=int, default=2_000_000)
    parser.add_argument("--num-starts", type=int, default=16, help="L-BFGS starts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.num_warmup, arguments.num_samples, arguments.num_starts = 200, 200, 2
        arguments.num_proposals, arguments.num_thinned = 20_000, 400
    started = time.perf_counter()
    load_before = os.getloadavg()
    model = load_lotka_volterra(arguments.data_dir)
    rng = np.random.default_rng(arguments.seed)

    optima = find_optima(model, rng, arguments.num_starts)
    print(f"{len(optima)} distinct optima from {arguments.num_starts} starts:")
    for optimum in optima:
        x = np.round(np.exp(optimum["z"]), 4)
        laplace = optimum["laplace_log_normaliser"]
        print(f"  log density {optimum['log_density']:10.4f}  Laplace log Z {laplace}  found {optimum['count']:2d}×")
        print(f"    x = {x}", flush=True)

    start = optima[0]["z"]
    initial_key, nuts_key = jax.random.split(jax.random.key(arguments.seed))
    initial = start + 0.05 * jax.random.normal(initial_key, (arguments.num_chains, start.shape[0]))
    nuts = run_nuts(lambda z: -log_target(model)(z), nuts_key, initial, arguments.num_warmup, arguments.num_samples)
    samples, r_hat = nuts.pop("samples"), nuts["split_r_hat"]
    print(
        f"NUTS: max split R-hat {np.max(r_hat):.4f}, min ESS {np.min(nuts['effective_sample_size']):.0f}, "
        f"divergences {nuts['divergences']}, mean leapfrog steps {nuts['mean_leapfrog_steps']:.1f}",
        flush=True,
    )

    log_samples = samples.reshape(-1, samples.shape[-1])
    importance = importance_sampling(
        jax.jit(jax.vmap(log_target(model))), log_samples, np.exp, rng, arguments.num_proposals, 10_000
    )
    samples_x = np.exp(log_samples)
    mcmc_mean, mcmc_sd = samples_x.mean(axis=0), samples_x.std(axis=0)
    mean_gap = (importance.pop("weighted_mean") - mcmc_mean) / mcmc_sd
    stride = max(1, samples_x.shape[0] // arguments.num_thinned)
    thinned = samples_x[::stride][: arguments.num_thinned]
    truncation = 2 * scipy.special.log_ndtr(2.0) + 2 * scipy.special.log_ndtr(1.0)
    print(
        f"IS: log Z = {importance['log_normaliser']:.4f} ± {importance['standard_error_delta_method']:.4f} "
        f"(batch SE {importance['standard_error_batches']:.4f}), ESS {importance['effective_sample_size']:.0f} "
        f"of {importance['num_proposals']}; |IS mean − MCMC mean| / sd ≤ {np.max(np.abs(mean_gap)):.3f}"
    )

    arguments.output_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        arguments.output_dir / "lotka_volterra.npz",
        samples=thinned,
        log_normaliser=np.float64(importance["log_normaliser"]),
        log_normaliser_standard_error=np.float64(importance["standard_error_delta_method"]),
    )
    summary = {
        "problem": "LotkaVolterra (benchmarks/benchmark_problems), Hudson's Bay 1900-1920, D = 8",
        "parameter_names": NAMES,
        "num_substeps": model.num_substeps,
        "log_normaliser": importance["log_normaliser"],
        "log_normaliser_standard_error": importance["standard_error_delta_method"],
        "log_normaliser_stan_convention": importance["log_normaliser"] + float(truncation),
        "importance_sampling": importance,
        "importance_mean_minus_mcmc_mean_in_sd": dict(zip(NAMES, mean_gap.tolist())),
        "optima": [
            {
                "log_density": optimum["log_density"],
                "laplace_log_normaliser": optimum["laplace_log_normaliser"],
                "count": optimum["count"],
                "x": np.exp(optimum["z"]).tolist(),
            }
            for optimum in optima
        ],
        "nuts": {
            **nuts,
            "split_r_hat": dict(zip(NAMES, r_hat.tolist())),
            "max_split_r_hat": float(np.max(r_hat)),
            "effective_sample_size": dict(zip(NAMES, nuts["effective_sample_size"].tolist())),
        },
        "posterior_mean": dict(zip(NAMES, mcmc_mean.tolist())),
        "posterior_sd": dict(zip(NAMES, mcmc_sd.tolist())),
        "num_thinned_samples": int(thinned.shape[0]),
        "thinning_stride": int(stride),
        "quick": arguments.quick,
        "seed": arguments.seed,
        "wall_time_s": time.perf_counter() - started,
        "machine": machine_with_load(load_before, numpyro=numpyro.__version__),
        "date": utc_timestamp("seconds"),
    }
    write_json(arguments.output_dir / "lotka_volterra.json", summary, indent=2)
    plot(model, thinned, arguments.output_dir / "lotka_volterra.png")
    print(f"wrote {arguments.output_dir}/lotka_volterra.{{npz,json,png}} in {summary['wall_time_s']:.0f} s")
    if not arguments.quick and np.max(r_hat) > MAX_R_HAT:
        raise SystemExit(f"max split R-hat {np.max(r_hat):.4f} > {MAX_R_HAT}: the reference is not converged.")


if __name__ == "__main__":
    main()
