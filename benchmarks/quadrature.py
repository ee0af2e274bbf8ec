"""Quadrature layer benchmark: one surrogate ELBO and its gradient with respect to every
mixture parameter, the inner step of SVBMC and BVBMC.

Cases (float64, jitted, compile excluded from the timings and reported apart):

- `elbo sparse`: `gpcompose.elbo(posterior, mixture, key, num_entropy_samples)` and its
  `jax.value_and_grad` w.r.t. the `VBMCMixture` (logits, means, log_sigma, log_lambda),
  with K = 30 components, a sparse posterior with M = 300 inducing points on N = 5000
  observations, D = 6, SquaredExponential kernel, negative-quadratic mean, 100·K^{2/3}
  entropy samples (the PyVBMC default, SVBMC digest §2.10).
- `elbo exact`: the same with an exact posterior on N = 300 points.
- `bq only` / `entropy only`: the two halves of the sparse case, to show where time goes.
- `elbo sparse, product Matérn 5/2`: the sparse case with the BVBMC kernel (closed-form
  1-D primitive with erfcx).
- `Monte Carlo baseline`: the expected log joint estimated by plain Monte Carlo through
  `sparse.predict` at the same entropy samples (no BQ), for a speed ratio.

Usage:
    python benchmarks/quadrature.py            # full run (about 1-2 min on 2 cores)
    python benchmarks/quadrature.py --quick    # tiny smoke run
Writes `<output-dir>/quadrature.json` and `<output-dir>/quadrature.png` and prints a table.
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import agg_pyplot, save_figure, utc_timestamp, write_json  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import gp, kernels, means, quadrature, sparse  # noqa: E402
from gpcompose.mixtures import VBMCMixture  # noqa: E402

plt = agg_pyplot()


def make_problem(num_points, num_inducing, num_components, dimension, kernel, seed=0):
    keys = jax.random.split(jax.random.key(seed), 4)
    X = jax.random.normal(keys[0], (num_points, dimension)) * 1.5
    y = -0.5 * jnp.sum(X**2, axis=1) + 0.3 * jnp.sin(X[:, 0])
    mean = means.NegativeQuadratic(maximum=0.0, location=jnp.zeros(dimension), scale=2.0 * jnp.ones(dimension))
    noise = 1e-3
    Z = X[jax.random.choice(keys[1], num_points, (num_inducing,), replace=False)]
    sparse_posterior = sparse.condition(kernel, mean, X, y, noise, Z)
    exact_posterior = gp.condition(kernel, mean, X[:300], y[:300], noise)
    mixture = VBMCMixture(
        logits=jnp.zeros(num_components),
        means=jax.random.normal(keys[2], (num_components, dimension)),
        log_sigma=jnp.log(0.5) * jnp.ones(num_components),
        log_lambda=jnp.zeros(dimension),
        mask=jnp.ones(num_components, bool),
    )
    return sparse_posterior, exact_posterior, mixture


def time_function(function, args, repeats):
    start = time.perf_counter()
    jax.block_until_ready(function(*args))
    compile_seconds = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(function(*args))
        times.append(time.perf_counter() - start)
    return compile_seconds, times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    if options.quick:
        sizes = dict(num_points=200, num_inducing=20, num_components=3, dimension=2)
        options.repeats = 2
    else:
        sizes = dict(num_points=5000, num_inducing=300, num_components=30, dimension=6)
    num_entropy = int(100 * sizes["num_components"] ** (2.0 / 3.0))
    dimension = sizes["dimension"]
    se_kernel = kernels.SquaredExponential(lengthscale=jnp.ones(dimension), variance=4.0)
    matern_kernel = kernels.ProductMatern(2.5, lengthscale=jnp.ones(dimension), variance=4.0)
    sparse_posterior, exact_posterior, mixture = make_problem(**sizes, kernel=se_kernel)
    matern_posterior, _, _ = make_problem(**sizes, kernel=matern_kernel)
    key = jax.random.key(1)

    @eqx.filter_jit
    def elbo_and_gradient(posterior, mixture, key):
        return eqx.filter_value_and_grad(lambda q: gpcompose.elbo(posterior, q, key, num_entropy)[0])(mixture)

    @eqx.filter_jit
    def bq_and_gradient(posterior, mixture):
        return eqx.filter_value_and_grad(lambda q: quadrature.integrate(posterior, q)[0])(mixture)

    per_component = -(-num_entropy // sizes["num_components"])

    @eqx.filter_jit
    def entropy_and_gradient(mixture, key):
        return eqx.filter_value_and_grad(lambda q: q.entropy(key, per_component))(mixture)

    @eqx.filter_jit
    def monte_carlo_and_gradient(posterior, mixture, key):
        def estimate(q):
            samples = q.stratified_sample(key, per_component)
            flat = samples.reshape(-1, samples.shape[-1])
            values = sparse.predict(posterior, flat)[0].reshape(samples.shape[:2])
            return jnp.sum(q.weights * jnp.mean(values, axis=1)) + q.entropy(key, per_component)

        return eqx.filter_value_and_grad(estimate)(mixture)

    cases = {
        "elbo sparse (SE)": (elbo_and_gradient, (sparse_posterior, mixture, key)),
        "elbo exact N=300 (SE)": (elbo_and_gradient, (exact_posterior, mixture, key)),
        "bq only (sparse SE)": (bq_and_gradient, (sparse_posterior, mixture)),
        "entropy only": (entropy_and_gradient, (mixture, key)),
        "elbo sparse (product Matérn 5/2)": (elbo_and_gradient, (matern_posterior, mixture, key)),
        "Monte Carlo baseline (sparse SE)": (monte_carlo_and_gradient, (sparse_posterior, mixture, key)),
    }
    results = {}
    for name, (function, args) in cases.items():
        compile_seconds, times = time_function(function, args, options.repeats)
        results[name] = {"compile_seconds": compile_seconds, "times": times, "median": float(np.median(times))}
        print(f"{name}: median {1e3 * np.median(times):.2f} ms (compile {compile_seconds:.1f} s)", flush=True)

    baseline = results["Monte Carlo baseline (sparse SE)"]["median"]
    lines = [
        "| case (value + gradient) | median (ms) | IQR (ms) | compile (s) | time / MC baseline |",
        "|---|---|---|---|---|",
    ]
    for name, result in results.items():
        q1, q3 = np.percentile(result["times"], [25, 75])
        lines.append(
            f"| {name} | {1e3 * result['median']:.2f} | {1e3 * q1:.2f}–{1e3 * q3:.2f} | "
            f"{result['compile_seconds']:.1f} | {result['median'] / baseline:.2f} |"
        )
    table = "\n".join(lines)
    print(
        f"\nK = {sizes['num_components']}, M = {sizes['num_inducing']}, N = {sizes['num_points']}, "
        f"D = {dimension}, entropy samples = {num_entropy}\n"
    )
    print(table)

    suffix = "_quick" if options.quick else ""
    record = {
        "sizes": sizes,
        "num_entropy_samples": num_entropy,
        "repeats": options.repeats,
        "results": results,
        "jax_version": jax.__version__,
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpu_count": os.cpu_count()},
        "date": utc_timestamp(),
        "table": table,
    }
    write_json(options.output_dir / f"quadrature{suffix}.json", record, indent=2)
    figure, axis = plt.subplots(figsize=(8, 3.5))
    names = list(results)
    axis.barh(names, [1e3 * results[name]["median"] for name in names], color="C0")
    axis.set_xlabel("median time of value + gradient (ms)")
    axis.set_title(f"ELBO + gradient, K={sizes['num_components']}, M={sizes['num_inducing']}, D={dimension}")
    save_figure(figure, options.output_dir / f"quadrature{suffix}.png")


if __name__ == "__main__":
    main()
