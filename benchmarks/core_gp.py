"""Core GP layer benchmark: value and gradient of the exact log marginal likelihood and of
the collapsed SGPR ELBO, next to the machine's dense float64 matmul and Cholesky rates.

Cases (all float64, all jitted, compile excluded from the timings and reported apart):

- `matmul`: jitted `A @ B` with A, B of shape (2000, 2000); 2n³ flops. The ratios in the
  table are against this rate. `matmul (NumPy)` times the same product through NumPy's
  OpenBLAS dgemm, for context.
- `cholesky`: `jnp.linalg.cholesky` of a 2000 × 2000 SPD matrix; n³/3 flops.
- `exact`: `jax.value_and_grad` of
  `gp.log_marginal_likelihood(gp.condition(kernel, mean, X, y, noise))` with respect to the
  trainable (unconstrained) leaves of an ARD `SquaredExponential` kernel, a `Constant`
  mean and a `Positive` noise variance; N = 2000, D = 6.
- `sgpr`: the same for `sparse.elbo(sparse.condition(kernel, mean, X, y, noise, Z))`;
  N = 10 000, M = 300, D = 6, Z a random subset of X.
- `exact (value)`, `sgpr (value)`: the objectives alone, to show what the gradient costs.
- `exact GPJax`: the same exact objective in GPJax (≥ 1.0, `bench` extra), side by side in the
  same run: `conjugate_mll` of `Prior(Constant(0), RBF(ARD)) * Gaussian(obs_stddev=0.1)` on the
  same data, differentiated with respect to every inexact leaf of the GPJax model (its
  unconstrained parameters); the JSON records both libraries' values (they differ by GPJax's
  prior jitter of 10⁻⁶).

Flop counts are the flops the compiled program executes: XLA's own cost analysis
(`jax.jit(f).lower(...).compile().cost_analysis()["flops"]`, which covers dots and
elementwise ops) plus an analytic count for each LAPACK custom call XLA cannot see
(`potrf`: n³/3, `trsm`: n² per right-hand-side column). Only the calls in the entry
computation are counted: the retry loop of the jitter policy and the error branches of
`eqx.error_if` do not run when the first factorisation succeeds.

Usage:
    python benchmarks/core_gp.py                 # full run (about 100 s on 2 cores)
    python benchmarks/core_gp.py --quick         # tiny smoke run
Writes `<output-dir>/core_gp.json` (raw results) and `<output-dir>/core_gp.png`, and prints
a Markdown table.
"""

import argparse
import math
import os
import re
import time
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from _common import agg_pyplot, machine_info, save_figure, utc_timestamp, write_json

from gpcompose import gp, kernels, means, parameters, sparse

# The library never changes global config; this script runs in float64. No array exists
# before this line (importing gpcompose creates none), so every array below is float64.
jax.config.update("jax_enable_x64", True)
plt = agg_pyplot()


SEED = 20261122
FULL_SIZES = {"reference_n": 2000, "exact_n": 2000, "sgpr_n": 10_000, "sgpr_m": 300, "dimension": 6}
QUICK_SIZES = {"reference_n": 200, "exact_n": 200, "sgpr_n": 1000, "sgpr_m": 30, "dimension": 6}


# --------------------------------------------------------------------------- flop counting


def _entry_computation(hlo_text: str) -> list[str]:
    lines = hlo_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("}"))
    return lines[start + 1 : end]


def _operand_shapes(line: str) -> list[tuple[int, ...]]:
    constraints = line.split("operand_layout_constraints=", 1)[1]
    return [
        tuple(int(size) for size in dims.split(",") if size)
        for dims in re.findall(r"\b[fc]\d+\[([\d,]*)\]", constraints)
    ]


def lapack_flops(hlo_text: str) -> tuple[float, dict[str, int], list[str]]:
    """Analytic flops of the LAPACK custom calls in the entry computation.

    **Returns:** (flops, count of each call, targets that were not understood).
    """
    flops, counts, unknown = 0.0, {}, []
    for line in _entry_computation(hlo_text):
        match = re.search(r'custom_call_target="([^"]+)"', line)
        if match is None:
            continue
        target = match.group(1)
        if "callback" in target:
            unknown.append(target)
            continue
        if "potrf" in target:
            (shape,) = _operand_shapes(line)[:1]
            n = shape[-1]
            flops += math.prod(shape[:-2]) * n**3 / 3
        elif "trsm" in target:
            a_shape, b_shape = _operand_shapes(line)[:2]
            flops += a_shape[-1] * math.prod(b_shape)
        else:
            unknown.append(target)
            continue
        counts[target] = counts.get(target, 0) + 1
    return flops, counts, unknown


# --------------------------------------------------------------------------- timing


def benchmark(name, function, args, repeats, analytic_flops=None):
    """Compile `jax.jit(function)` ahead of time, warm up once, then time `repeats` calls."""
    jitted = jax.jit(function)
    start = time.perf_counter()
    lowered = jitted.lower(*args)
    lower_seconds = time.perf_counter() - start
    start = time.perf_counter()
    compiled = lowered.compile()
    compile_seconds = time.perf_counter() - start

    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list | tuple) else cost
    xla_flops = float(cost.get("flops", 0.0)) if cost else 0.0
    custom_flops, custom_calls, uncounted = lapack_flops(compiled.as_text())

    load_before = os.getloadavg()[0]
    output = jax.block_until_ready(compiled(*args))  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)

    median = float(np.median(times))
    q25, q75 = (float(q) for q in np.percentile(times, [25, 75]))
    flops = xla_flops + custom_flops
    result = {
        "name": name,
        "repeats": repeats,
        "times_s": times,
        "median_s": median,
        "iqr_s": [q25, q75],
        "trace_and_lower_s": lower_seconds,
        "compile_s": compile_seconds,
        "flops_xla_cost_analysis": xla_flops,
        "flops_lapack_custom_calls": custom_flops,
        "lapack_custom_calls": custom_calls,
        "uncounted_custom_calls": sorted(set(uncounted)),
        "flops": flops,
        "gflops_per_s": flops / median / 1e9,
        "load_average_1min": [load_before, os.getloadavg()[0]],
    }
    if analytic_flops is not None:
        result["flops_analytic"] = analytic_flops
    print(
        f"  {name:<22} median {median * 1e3:9.1f} ms   "
        f"trace+compile {lower_seconds + compile_seconds:5.1f} s   "
        f"{flops / 1e9:8.3g} GFLOP   {flops / median / 1e9:6.3g} GFLOP/s",
        flush=True,
    )
    return result, output


def numpy_matmul(A, B, repeats):
    """The same product through NumPy (OpenBLAS dgemm), for context: not jitted, no compile."""
    A @ B  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        A @ B
        times.append(time.perf_counter() - start)
    median = float(np.median(times))
    flops = 2 * A.shape[0] * A.shape[1] * B.shape[1]
    print(f"  {'matmul (NumPy)':<22} median {median * 1e3:9.1f} ms", flush=True)
    return {
        "name": "matmul (NumPy)",
        "size": f"{A.shape[0]}×{A.shape[1]} @ {B.shape[0]}×{B.shape[1]}",
        "repeats": repeats,
        "times_s": times,
        "median_s": median,
        "iqr_s": [float(q) for q in np.percentile(times, [25, 75])],
        "compile_s": None,
        "flops": float(flops),
        "flops_analytic": float(flops),
        "gflops_per_s": flops / median / 1e9,
    }


# --------------------------------------------------------------------------- problems


def make_data(key, num_points, dimension):
    """y = Σ_d sin(3 x_d)/√D + 0.1 ε on x ~ U[0, 1]^D (fixed seed)."""
    input_key, noise_key = jax.random.split(key)
    X = jax.random.uniform(input_key, (num_points, dimension), jnp.float64)
    y = jnp.sum(jnp.sin(3.0 * X), axis=1) / math.sqrt(dimension)
    y = y + 0.1 * jax.random.normal(noise_key, (num_points,), jnp.float64)
    return X, y


def make_model(dimension):
    kernel = kernels.SquaredExponential(lengthscale=jnp.full((dimension,), 0.5), variance=1.0)
    mean = means.Constant(0.0)
    noise = parameters.Positive(0.01)
    return kernel, mean, noise


def exact_objective(trainable, rest, X, y):
    kernel, mean, noise = eqx.combine(trainable, rest)
    return gp.log_marginal_likelihood(gp.condition(kernel, mean, X, y, noise))


def gpjax_exact_model(dimension):
    """GPJax's model of `make_model`: ARD RBF (ℓ = 0.5, σ² = 1), constant mean 0, noise sd 0.1."""
    import gpjax

    prior = gpjax.gps.Prior(
        mean_function=gpjax.mean_functions.Constant(0.0),
        kernel=gpjax.kernels.RBF(lengthscale=jnp.full((dimension,), 0.5), variance=1.0),
    )
    return eqx.partition(prior * gpjax.likelihoods.Gaussian(obs_stddev=0.1), eqx.is_inexact_array)


def gpjax_exact_objective(trainable, rest, X, y):
    import gpjax

    return gpjax.objectives.conjugate_mll(eqx.combine(trainable, rest), gpjax.Dataset(X=X, y=y[:, None]))


def sgpr_objective(trainable, rest, X, y, Z):
    kernel, mean, noise = eqx.combine(trainable, rest)
    return sparse.elbo(sparse.condition(kernel, mean, X, y, noise, Z))


def gradient_summary(output):
    value, gradient = output
    leaves = jax.tree_util.tree_leaves(gradient)
    norm = float(jnp.sqrt(sum(jnp.sum(leaf**2) for leaf in leaves)))
    finite = bool(jnp.isfinite(value)) and all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in leaves)
    return {"value": float(value), "gradient_norm": norm, "num_gradient_leaves": len(leaves), "finite": finite}


# --------------------------------------------------------------------------- reporting


def markdown_table(results, matmul_rate, cholesky_rate):
    header = (
        "| case | size | median (ms) | IQR (ms) | trace+compile (s) | GFLOP | GFLOP/s "
        "| / matmul | / Cholesky |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    rows = [header]
    for result in results:
        q25, q75 = result["iqr_s"]
        rate = result["gflops_per_s"]
        if result["compile_s"] is None:
            compile_column = "–"
        else:
            compile_column = f"{result['trace_and_lower_s'] + result['compile_s']:.2f}"
        rows.append(
            f"| {result['name']} | {result['size']} | {result['median_s'] * 1e3:.1f} "
            f"| {q25 * 1e3:.1f}–{q75 * 1e3:.1f} | {compile_column} "
            f"| {result['flops'] / 1e9:.3g} | {rate:.3g} | {rate / matmul_rate:.2f} "
            f"| {rate / cholesky_rate:.2f} |"
        )
    return "\n".join(rows)


def plot(results, path):
    names = [result["name"] for result in results]
    rates = [result["gflops_per_s"] for result in results]
    medians = [result["median_s"] * 1e3 for result in results]
    errors = np.array([[m - r["iqr_s"][0] * 1e3, r["iqr_s"][1] * 1e3 - m] for m, r in zip(medians, results)]).T
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    colors = ["tab:gray" if name.startswith(("matmul", "cholesky")) else "tab:blue" for name in names]
    left.bar(names, rates, color=colors)
    left.set_ylabel("GFLOP/s (float64)")
    left.set_title("Achieved rate (grey: machine references)")
    right.bar(names, medians, yerr=errors, capsize=3, color="tab:orange")
    right.set_ylabel("median time per call (ms), IQR bars")
    right.set_title("Time per call")
    for axis in (left, right):
        axis.tick_params(axis="x", rotation=30)
        for label in axis.get_xticklabels():
            label.set_horizontalalignment("right")
    save_figure(figure, path)


# --------------------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per case (default 20)")
    parser.add_argument(
        "--output-dir", type=Path, default=Path(__file__).parent / "results", help="where JSON and PNG go"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and 3 repeats (smoke test)")
    args = parser.parse_args()

    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    repeats = 3 if args.quick else args.repeats
    wall_start = time.perf_counter()
    info = machine_info("jaxlib", "equinox")
    info["load_average_before"] = os.getloadavg()
    print(f"gpcompose core GP benchmark on {info['cpu_model']} ({info['cpu_count']} CPUs), jax {jax.__version__}")
    print(f"sizes {sizes}, repeats {repeats}", flush=True)

    key = jax.random.key(SEED)
    matrix_key, exact_key, sgpr_key, subset_key = jax.random.split(key, 4)
    results, checks = [], {}

    # Reference rates of this machine.
    n = sizes["reference_n"]
    A, B = jax.random.normal(matrix_key, (2, n, n), jnp.float64)
    spd = A @ A.T + n * jnp.eye(n, dtype=jnp.float64)
    result, _ = benchmark("matmul", lambda a, b: a @ b, (A, B), repeats, analytic_flops=2 * n**3)
    result["size"] = f"{n}×{n} @ {n}×{n}"
    results.append(result)
    results.append(numpy_matmul(np.asarray(A), np.asarray(B), repeats))
    result, _ = benchmark("cholesky", jnp.linalg.cholesky, (spd,), repeats, analytic_flops=n**3 / 3)
    # The reference rate is the textbook n³/3, whatever else the program does.
    result["flops"] = n**3 / 3
    result["gflops_per_s"] = result["flops"] / result["median_s"] / 1e9
    result["size"] = f"{n}×{n}"
    results.append(result)

    trainable, rest = parameters.partition(make_model(sizes["dimension"]))

    # Exact GP.
    n, d = sizes["exact_n"], sizes["dimension"]
    X, y = make_data(exact_key, n, d)
    exact_args = (trainable, rest, X, y)
    # Analytic cross-check (Gram formation ~(4D + 2) N² flops left out): value = potrf N³/3 +
    # two triangular solves 2N²; the gradient transposes the Cholesky JVP
    # dL = L Φ(L⁻¹ dA L⁻ᵀ): one dense N × N product (2N³) and two N × N trsm (2N³).
    result, _ = benchmark("exact (value)", exact_objective, exact_args, repeats, analytic_flops=n**3 / 3 + 2 * n**2)
    result["size"] = f"N={n}, D={d}"
    results.append(result)
    result, output = benchmark(
        "exact (value+grad)",
        jax.value_and_grad(exact_objective),
        exact_args,
        repeats,
        analytic_flops=13 * n**3 / 3 + 4 * n**2,
    )
    result["size"] = f"N={n}, D={d}"
    results.append(result)
    checks["exact"] = gradient_summary(output)
    gpjax_trainable, gpjax_rest = gpjax_exact_model(d)
    result, output = benchmark(
        "exact GPJax (value+grad)",
        jax.value_and_grad(lambda trainable, X, y: gpjax_exact_objective(trainable, gpjax_rest, X, y)),
        (gpjax_trainable, X, y),
        repeats,
    )
    result["size"] = f"N={n}, D={d}"
    results.append(result)
    checks["exact GPJax"] = gradient_summary(output)

    # SGPR.
    n, m = sizes["sgpr_n"], sizes["sgpr_m"]
    X, y = make_data(sgpr_key, n, d)
    Z = X[jax.random.choice(subset_key, n, (m,), replace=False)]
    sgpr_args = (trainable, rest, X, y, Z)
    result, _ = benchmark("sgpr (value)", sgpr_objective, sgpr_args, repeats)
    result["size"] = f"N={n}, M={m}, D={d}"
    results.append(result)
    result, output = benchmark("sgpr (value+grad)", jax.value_and_grad(sgpr_objective), sgpr_args, repeats)
    result["size"] = f"N={n}, M={m}, D={d}"
    results.append(result)
    checks["sgpr"] = gradient_summary(output)

    matmul_rate = results[0]["gflops_per_s"]
    cholesky_rate = results[2]["gflops_per_s"]
    for result in results:
        result["fraction_of_matmul"] = result["gflops_per_s"] / matmul_rate
        result["fraction_of_cholesky"] = result["gflops_per_s"] / cholesky_rate

    wall_seconds = time.perf_counter() - wall_start
    info["load_average_after"] = os.getloadavg()
    table = markdown_table(results, matmul_rate, cholesky_rate)
    print()
    print(table)
    print()
    for name, check in checks.items():
        print(f"{name}: value {check['value']:.6g}, |grad| {check['gradient_norm']:.6g}, finite {check['finite']}")
    by_name = {result["name"]: result for result in results}
    gpjax_ratio = by_name["exact GPJax (value+grad)"]["median_s"] / by_name["exact (value+grad)"]["median_s"]
    print(f"exact value+grad: GPJax time / gpcompose time = {gpjax_ratio:.2f}")
    print(f"wall time {wall_seconds:.1f} s")

    record = {
        "benchmark": "core_gp",
        "date": utc_timestamp("seconds"),
        "command": "python benchmarks/core_gp.py" + (" --quick" if args.quick else f" --repeats {args.repeats}"),
        "quick": args.quick,
        "seed": SEED,
        "sizes": sizes,
        "dtype": "float64",
        "machine": info,
        "wall_time_s": wall_seconds,
        "flop_counting": (
            "XLA cost_analysis()['flops'] of the compiled program (dots, elementwise) plus "
            "potrf n^3/3 and trsm n^2 per right-hand-side column for each LAPACK custom call in "
            "the entry computation; the cholesky reference uses the textbook n^3/3."
        ),
        "checks": checks,
        "exact_gradient_time_ratio_gpjax_over_gpcompose": gpjax_ratio,
        "results": results,
        "markdown_table": table,
    }
    write_json(args.output_dir / "core_gp.json", record, indent=2)
    plot(results, args.output_dir / "core_gp.png")
    print(f"wrote {args.output_dir / 'core_gp.json'} and {args.output_dir / 'core_gp.png'}")


if __name__ == "__main__":
    main()
