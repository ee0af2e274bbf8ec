"""Step throughput of `gpcompose.svgd.SVGD` against blackjax's SVGD, side by side (issue 5).

Both libraries run the same algorithm on the same target from the same initial particles:
SVGD (Liu & Wang 2016) with the RBF particle kernel κ(x, y) = exp(−‖x − y‖²/ℓ²), the
bandwidth ℓ² = median(D²)/log(J + 1) of the full J×J matrix of squared distances,
re-estimated from the current particles before every update, and the same optax optimiser.

- gpcompose: `SVGD(log_density, optimizer=...)` with its default `RBF()` kernel, whose
  bandwidth is exactly this rule.
- blackjax: `blackjax.svgd(jax.grad(log_density), optimizer, kernel=rbf_kernel,
  update_kernel_parameters=...)`. blackjax's `rbf_kernel(x, y, length_scale)` is
  exp(−‖x − y‖²/length_scale), so `length_scale` plays ℓ². Its default
  `update_median_heuristic` uses a different rule (the median over the J(J − 1)/2 distinct
  pairs, squared, over log J), so this script passes an update function with gpcompose's
  rule instead. blackjax updates the bandwidth *after* each step, so the rule is also
  applied once to the initial state. Then step k of both libraries uses the bandwidth of
  the same particles and the two runs differ only by floating-point rounding.

Each case runs K steps under one jitted `jax.lax.scan` on each side, compiled ahead
(`jax.jit(...).lower(...).compile()`) and called once untimed. The timed number is the wall
time of one more call, with `jax.block_until_ready`; steps/s is K over the median of the
repetitions. The gpcompose step also returns `SVGDInfo`, whose kernelised
Stein discrepancy costs extra work that blackjax's step does not do. gpcompose is therefore
timed twice: once returning the stacked `SVGDInfo`, as `gpcompose.run` does, and once
returning only the final state, which lets XLA drop the discrepancy as dead code.

blackjax is not a dependency of gpcompose, so it runs in its own Python environment. This
script starts it there as a subprocess (`--blackjax-python`, re-running this file with
`--blackjax-worker`), sends it the data and initial particles in a temporary `.npz` file
and asks it for one timed call at a time, so that the repetitions of the two libraries
alternate and see the same machine load. The worker imports only jax, optax, numpy and
blackjax.

Targets (synthetic, fixed seed, float64):
- `logistic`: Bayesian logistic regression, N = 1000 points, 20 standard-normal features
  plus an intercept (P = 21), labels drawn from a true weight vector, prior N(0, I).
- `gaussian`: a correlated 50-D Gaussian, precision A Aᵀ/50 + I with A standard normal.

Usage:
    python -m venv /tmp/bjvenv && /tmp/bjvenv/bin/pip install blackjax==1.7.1 jax==0.10.2 jaxlib==0.10.2 optax==0.2.8
    python benchmarks/steingp_blackjax.py --blackjax-python /tmp/bjvenv/bin/python
    python benchmarks/steingp_blackjax.py --blackjax-python /tmp/bjvenv/bin/python --quick
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from _common import agg_pyplot, machine_info, save_figure, utc_timestamp, write_json  # noqa: E402

SEED = 0
LEARNING_RATE = 0.05
# (target, J, K): K steps per timed call, fewer for large J so that each call takes ~1 s.
FULL_CASES = [
    ("logistic", 20, 200),
    ("logistic", 100, 100),
    ("logistic", 500, 10),
    ("gaussian", 20, 200),
    ("gaussian", 100, 100),
    ("gaussian", 500, 10),
]
QUICK_CASES = [("logistic", 10, 5), ("gaussian", 10, 5)]
LOGISTIC_POINTS = 1000
LOGISTIC_FEATURES = 20
GAUSSIAN_DIMENSION = 50


# --------------------------------------------------------------------------- problem (both sides)


def make_arrays(target: str, num_particles: int) -> dict[str, np.ndarray]:
    """The target's data (the same for every J) and J initial particles N(0, I), as NumPy arrays."""
    rng = np.random.default_rng(SEED)
    if target == "logistic":
        features = rng.standard_normal((LOGISTIC_POINTS, LOGISTIC_FEATURES))
        design = np.concatenate([np.ones((LOGISTIC_POINTS, 1)), features], axis=1)
        true_weights = rng.standard_normal(LOGISTIC_FEATURES + 1) / math.sqrt(LOGISTIC_FEATURES)
        probabilities = 1 / (1 + np.exp(-design @ true_weights))
        labels = (rng.uniform(size=LOGISTIC_POINTS) < probabilities).astype(np.float64)
        arrays = {"design": design, "labels": labels}
        dimension = LOGISTIC_FEATURES + 1
    elif target == "gaussian":
        factor = rng.standard_normal((GAUSSIAN_DIMENSION, GAUSSIAN_DIMENSION))
        precision = factor @ factor.T / GAUSSIAN_DIMENSION + np.eye(GAUSSIAN_DIMENSION)
        arrays = {"mean": rng.standard_normal(GAUSSIAN_DIMENSION), "precision": precision}
        dimension = GAUSSIAN_DIMENSION
    else:
        raise ValueError(f"unknown target {target!r}")
    arrays["initial_particles"] = np.random.default_rng([SEED, num_particles]).standard_normal(
        (num_particles, dimension)
    )
    return arrays


def make_log_density(target: str, arrays: dict[str, np.ndarray]):
    """The unnormalised log target of one flat particle, closing over the target's data."""
    if target == "logistic":
        design, labels = jnp.asarray(arrays["design"]), jnp.asarray(arrays["labels"])

        def log_density(weights):
            logits = design @ weights
            log_likelihood = labels * jax.nn.log_sigmoid(logits) + (1 - labels) * jax.nn.log_sigmoid(-logits)
            return jnp.sum(log_likelihood) - 0.5 * jnp.sum(weights**2)

    else:
        mean, precision = jnp.asarray(arrays["mean"]), jnp.asarray(arrays["precision"])

        def log_density(x):
            centred = x - mean
            return -0.5 * centred @ precision @ centred

    return log_density


def compile_program(function, argument):
    """`function` compiled for `argument`, the compile time, and XLA's temporary buffer size in bytes."""
    start = time.perf_counter()
    compiled = jax.jit(function).lower(argument).compile()
    compile_s = time.perf_counter() - start
    return compiled, {"compile_s": compile_s, "temporary_bytes": compiled.memory_analysis().temp_size_in_bytes}


def time_call(function, argument) -> float:
    """Wall time of one call of `function(argument)`, waiting for the result."""
    start = time.perf_counter()
    jax.block_until_ready(function(argument))
    return time.perf_counter() - start


# --------------------------------------------------------------------------- blackjax side (worker)


def blackjax_worker() -> None:
    """Serve requests from the parent on stdin, one JSON object per line, answer on stdout.

    `{"inputs": path}` loads the `.npz` of every case and returns the worker's versions;
    `{"compile": case}` builds and compiles the case's K-step scan, runs it once and returns
    the compile time, XLA's temporary buffer size and the final particles; `{"time": case}`
    returns the wall time of one more call.
    """
    import blackjax
    from blackjax.vi.svgd import rbf_kernel

    def matched_bandwidth(state):
        """blackjax's `length_scale` (= ℓ²) by gpcompose's rule: median of the full D² over log(J + 1)."""
        particles = state.particles
        squared_distances = jnp.sum((particles[:, None, :] - particles[None, :, :]) ** 2, axis=-1)
        length_scale = jnp.median(squared_distances) / math.log(particles.shape[0] + 1)
        return state._replace(kernel_parameters={"length_scale": length_scale})

    inputs, compiled = None, {}
    for line in sys.stdin:
        request = json.loads(line)
        if "inputs" in request:
            inputs = dict(np.load(request["inputs"]))
            answer = {
                "blackjax": importlib.metadata.version("blackjax"),
                "jax": jax.__version__,
                "jaxlib": importlib.metadata.version("jaxlib"),
                "optax": importlib.metadata.version("optax"),
                "numpy": np.__version__,
                "python": platform.python_version(),
            }
        elif "compile" in request:
            target, num_particles, num_steps = request["compile"]
            prefix = f"{target}_{num_particles}_"
            arrays = {name[len(prefix) :]: value for name, value in inputs.items() if name.startswith(prefix)}
            log_density = make_log_density(target, arrays)
            algorithm = blackjax.svgd(
                jax.grad(log_density),
                optax.adam(LEARNING_RATE),
                kernel=rbf_kernel,
                update_kernel_parameters=matched_bandwidth,
            )
            initial_state = matched_bandwidth(algorithm.init(jnp.asarray(arrays["initial_particles"])))

            def run_steps(state, algorithm=algorithm, num_steps=num_steps):
                def body(carry, _):
                    return algorithm.step(carry), None

                return jax.lax.scan(body, state, length=num_steps)[0]

            function, answer = compile_program(run_steps, initial_state)
            final = jax.block_until_ready(function(initial_state))
            compiled[prefix] = (function, initial_state)
            answer["particles"] = np.asarray(final.particles).tolist()
        else:
            target, num_particles, num_steps = request["time"]
            function, initial_state = compiled[f"{target}_{num_particles}_"]
            answer = {"seconds": time_call(function, initial_state)}
        print(json.dumps(answer), flush=True)


class BlackjaxWorker:
    """The parent's handle on the worker process: one request, one answer."""

    def __init__(self, python: str):
        self.process = subprocess.Popen(
            [python, __file__, "--blackjax-worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def request(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the blackjax worker exited with code {self.process.wait()}")
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait()


# --------------------------------------------------------------------------- gpcompose side


def gpcompose_functions(target: str, arrays: dict[str, np.ndarray], num_steps: int):
    """The initial state and two K-step runs: one returning the stacked `SVGDInfo`, one the final state only."""
    import gpcompose

    svgd = gpcompose.svgd.SVGD(make_log_density(target, arrays), optimizer=optax.adam(LEARNING_RATE))
    initial_state = svgd.init(jnp.asarray(arrays["initial_particles"]))
    key = jax.random.key(SEED)

    def with_info(state):
        return gpcompose.run(svgd, state, key, num_steps)

    def state_only(state):
        return gpcompose.run(svgd, state, key, num_steps)[0]

    return initial_state, {"gpcompose_with_info": with_info, "gpcompose_state_only": state_only}


# --------------------------------------------------------------------------- reporting


def busy_cores(seconds: float = 5.0) -> float:
    """How many CPU cores were busy, on average, over the next `seconds` (from /proc/stat).

    Measured before the benchmark starts, this is the load that other processes put on the machine.
    """

    def busy_and_total():
        with open("/proc/stat") as stat:
            ticks = [int(field) for field in stat.readline().split()[1:]]
        idle = ticks[3] + ticks[4]  # idle and iowait
        return sum(ticks) - idle, sum(ticks)

    busy_start, total_start = busy_and_total()
    time.sleep(seconds)
    busy_end, total_end = busy_and_total()
    return os.cpu_count() * (busy_end - busy_start) / (total_end - total_start)


def repetition_ratio_quartiles(seconds: dict[str, list[float]], name: str) -> list[float]:
    """The 25th and 75th percentiles over repetitions of blackjax's time over `name`'s time."""
    ratios = np.asarray(seconds["blackjax"]) / np.asarray(seconds[name])
    return np.percentile(ratios, [25, 75]).tolist()


def markdown_table(results: list[dict]) -> str:
    rows = [
        "| target | P | J | K | gpcompose steps/s (with info) | gpcompose steps/s (state only) | blackjax steps/s "
        "| ratio with info (IQR) | ratio state only (IQR) | max abs. diff. of particles "
        "| max abs. diff. of particle mean |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def quartiles(pair):
        return f"{pair[0]:.2f}–{pair[1]:.2f}"

    for result in results:
        rate = result["steps_per_s"]
        rows.append(
            f"| {result['target']} | {result['dimension']} | {result['num_particles']} | {result['num_steps']} "
            f"| {rate['gpcompose_with_info']:.1f} | {rate['gpcompose_state_only']:.1f} | {rate['blackjax']:.1f} "
            f"| {result['ratio_with_info']:.2f} ({quartiles(result['ratio_quartiles_with_info'])}) "
            f"| {result['ratio_state_only']:.2f} ({quartiles(result['ratio_quartiles_state_only'])}) "
            f"| {result['agreement']['max_abs_particle_difference']:.1e} "
            f"| {result['agreement']['max_abs_mean_difference']:.1e} |"
        )
    return "\n".join(rows)


def plot(results: list[dict], path: Path) -> None:
    plt = agg_pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    styles = {"gpcompose_with_info": "o-", "gpcompose_state_only": "s--", "blackjax": "^:"}
    for target, colour in (("logistic", "C0"), ("gaussian", "C1")):
        cases = [result for result in results if result["target"] == target]
        if not cases:
            continue
        particles = [result["num_particles"] for result in cases]
        for name, style in styles.items():
            rates = [result["steps_per_s"][name] for result in cases]
            left.plot(particles, rates, style, color=colour, label=f"{target}, {name.replace('_', ' ')}")
        right.plot(particles, [result["ratio_with_info"] for result in cases], "o-", color=colour, label=target)
        right.plot(
            particles, [result["ratio_state_only"] for result in cases], "s--", color=colour, label=f"{target}, no info"
        )
    particle_counts = sorted({result["num_particles"] for result in results})
    for axes in (left, right):
        axes.set_xscale("log")
        axes.set_xticks(particle_counts, [str(count) for count in particle_counts])
        axes.minorticks_off()
    left.set(yscale="log", xlabel="particles J", ylabel="steps/s (median)", title="SVGD step throughput")
    left.legend(fontsize=6)
    right.axhline(1.0, color="grey", linewidth=0.8)
    right.set(xlabel="particles J", ylabel="gpcompose / blackjax steps/s", title="Throughput ratio")
    right.legend(fontsize=7)
    save_figure(figure, path)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blackjax-python", help="Python with blackjax installed (default: this interpreter)")
    parser.add_argument("--repeats", type=int, default=11, help="timed calls per case and side (default 11)")
    parser.add_argument(
        "--output-dir", type=Path, default=Path(__file__).parent / "results", help="where JSON and PNG go"
    )
    parser.add_argument("--quick", action="store_true", help="tiny cases and 2 repeats (smoke test)")
    parser.add_argument("--blackjax-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.blackjax_worker:
        blackjax_worker()
        return

    cases = QUICK_CASES if args.quick else FULL_CASES
    repeats = 2 if args.quick else args.repeats
    blackjax_python = args.blackjax_python or sys.executable
    wall_start = time.perf_counter()
    info = machine_info("jaxlib", "optax", "equinox")
    info["load_average_before"] = os.getloadavg()
    info["busy_cores_before"] = busy_cores()
    print(
        f"SVGD throughput, gpcompose vs blackjax, on {info['cpu_model']} ({info['cpu_count']} CPUs); "
        f"{info['busy_cores_before']:.2f} cores busy before the start",
        flush=True,
    )

    arrays = {(target, num_particles): make_arrays(target, num_particles) for target, num_particles, _ in cases}
    worker = BlackjaxWorker(blackjax_python)
    results = []
    try:
        with tempfile.TemporaryDirectory() as directory:
            inputs_path = os.path.join(directory, "inputs.npz")
            np.savez(
                inputs_path,
                **{
                    f"{target}_{num_particles}_{name}": value
                    for (target, num_particles), case_arrays in arrays.items()
                    for name, value in case_arrays.items()
                },
            )
            blackjax_versions = worker.request(inputs=inputs_path)
        print(f"blackjax side: {blackjax_versions}", flush=True)

        for target, num_particles, num_steps in cases:
            case_arrays = arrays[target, num_particles]
            load_before = os.getloadavg()
            initial_state, functions = gpcompose_functions(target, case_arrays, num_steps)
            compilation, outputs = {}, {}
            for name, function in functions.items():
                functions[name], compilation[name] = compile_program(function, initial_state)
                outputs[name] = jax.block_until_ready(functions[name](initial_state))
            answer = worker.request(compile=[target, num_particles, num_steps])
            compilation["blackjax"] = {name: answer[name] for name in ("compile_s", "temporary_bytes")}

            # Alternate the sides within each repetition, rotating which goes first.
            names = [*functions, "blackjax"]
            seconds = {name: [] for name in names}
            for repeat in range(repeats):
                for name in names[repeat % 3 :] + names[: repeat % 3]:
                    if name == "blackjax":
                        seconds[name].append(worker.request(time=[target, num_particles, num_steps])["seconds"])
                    else:
                        seconds[name].append(time_call(functions[name], initial_state))

            gpcompose_particles = np.asarray(outputs["gpcompose_state_only"].particles)
            with_info_particles = np.asarray(outputs["gpcompose_with_info"][0].particles)
            blackjax_particles = np.asarray(answer["particles"])
            initial_particles = case_arrays["initial_particles"]
            steps_per_s = {name: num_steps / float(np.median(values)) for name, values in seconds.items()}
            result = {
                "target": target,
                "dimension": initial_particles.shape[1],
                "num_particles": num_particles,
                "num_steps": num_steps,
                "seconds": seconds,
                "compilation": compilation,
                "steps_per_s": steps_per_s,
                "ratio_with_info": steps_per_s["gpcompose_with_info"] / steps_per_s["blackjax"],
                "ratio_state_only": steps_per_s["gpcompose_state_only"] / steps_per_s["blackjax"],
                # Quartiles of the ratio within each repetition, whose calls ran back to back.
                "ratio_quartiles_with_info": repetition_ratio_quartiles(seconds, "gpcompose_with_info"),
                "ratio_quartiles_state_only": repetition_ratio_quartiles(seconds, "gpcompose_state_only"),
                "agreement": {
                    "max_abs_particle_difference": float(np.max(np.abs(gpcompose_particles - blackjax_particles))),
                    "max_abs_mean_difference": float(
                        np.max(np.abs(gpcompose_particles.mean(axis=0) - blackjax_particles.mean(axis=0)))
                    ),
                    "max_abs_difference_with_info_vs_state_only": float(
                        np.max(np.abs(with_info_particles - gpcompose_particles))
                    ),
                    "max_abs_particle_displacement": float(np.max(np.abs(gpcompose_particles - initial_particles))),
                    "particle_sd_median": float(np.median(gpcompose_particles.std(axis=0))),
                },
                "load_average": [load_before, os.getloadavg()],
            }
            results.append(result)
            print(
                f"{target} J={num_particles} K={num_steps}: "
                + ", ".join(f"{name} {rate:.1f} steps/s" for name, rate in steps_per_s.items())
                + f"; ratio {result['ratio_with_info']:.2f} (with info), {result['ratio_state_only']:.2f} (state only)"
                + f"; max |Δ particles| {result['agreement']['max_abs_particle_difference']:.1e}",
                flush=True,
            )
    finally:
        worker.close()

    wall_seconds = time.perf_counter() - wall_start
    info["load_average_after"] = os.getloadavg()
    table = markdown_table(results)
    print()
    print(table)
    print(f"\nwall time {wall_seconds:.1f} s")

    command = "python benchmarks/steingp_blackjax.py"
    if args.blackjax_python:
        command += f" --blackjax-python {args.blackjax_python}"
    command += " --quick" if args.quick else f" --repeats {args.repeats}"
    record = {
        "benchmark": "steingp_blackjax",
        "date": utc_timestamp("seconds"),
        "command": command,
        "quick": args.quick,
        "seed": SEED,
        "dtype": "float64",
        "optimizer": f"optax.adam({LEARNING_RATE})",
        "kernel": "RBF exp(-|x - y|^2 / l^2), l^2 = median of the full JxJ squared distances / log(J + 1), every step",
        "timing": (
            "median wall time of one jitted lax.scan of K steps, after a warm-up call, with "
            "jax.block_until_ready; the sides alternate within each repetition"
        ),
        "repeats": repeats,
        "machine": info,
        "blackjax_environment": blackjax_versions,
        "wall_time_s": wall_seconds,
        "results": results,
        "markdown_table": table,
    }
    write_json(args.output_dir / "steingp_blackjax.json", record, indent=2)
    plot(results, args.output_dir / "steingp_blackjax.png")
    print(f"wrote {args.output_dir / 'steingp_blackjax.json'} and {args.output_dir / 'steingp_blackjax.png'}")


if __name__ == "__main__":
    main()
