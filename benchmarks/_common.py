"""What several benchmark scripts share: command-line options, the machine facts and dates
they record, the SteinGP and ML-II fits of the steingp_* scripts, and how they write JSON and
figures.

The scripts run as `python benchmarks/<name>.py`, so this folder is `sys.path[0]` and they
import this module as `_common`. At the top it imports only the standard library and jax;
matplotlib and gpcompose are imported inside the helpers that use them, so that the
blackjax worker of `steingp_blackjax.py` (an environment with neither) can import it too.
Each helper keeps the option names, defaults and JSON keys its scripts had before.
"""

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import jax
import jax.numpy as jnp

BENCHMARKS_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCHMARKS_DIR / "results"
QUICK_HELP = "tiny smoke run; its numbers mean nothing"


# --------------------------------------------------------------------------- command line


def add_output_dir_and_quick(parser):
    """`--output-dir` (a Path, default `benchmarks/results`) and `--quick` (a smoke run)."""
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)


def add_synthetic_function_options(parser):
    """`--quick`, `--data-dir` (accepted and unused: the functions are synthetic) and
    `--output-dir` (a string, default `benchmarks/results`), for the bes_* scripts."""
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    parser.add_argument("--data-dir", default="../shared/data", help="unused: the functions are synthetic")
    parser.add_argument("--output-dir", default=str(RESULTS_DIR))


def add_reference_dirs(parser):
    """`--data-dir` (the `shared/data` folder beside the repository) and `--output-dir`
    (`benchmarks/results/reference`), as Paths, for the reference_* scripts."""
    parser.add_argument("--data-dir", type=Path, default=BENCHMARKS_DIR.parent.parent / "shared" / "data")
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR / "reference")


def add_aaci_dirs(parser):
    """`--data-dir` and `--output-dir` of the aaci_* scripts: strings joined onto this folder's
    path (their JSON records the arguments, so the text of the defaults is kept)."""
    here = os.path.dirname(__file__)
    parser.add_argument("--data-dir", default=os.path.join(here, "..", "..", "shared", "data"))
    parser.add_argument("--output-dir", default=os.path.join(here, "results"))


# --------------------------------------------------------------------------- run metadata


def utc_timestamp(timespec="auto"):
    """The current UTC date and time in ISO 8601 (`timespec` as `datetime.isoformat`)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec=timespec)


def host_summary(load_average=True):
    """The flat machine fields of the bes_* scripts' `meta`: platform, CPU count, the load
    average now (unless `load_average` is False), UTC date and jax version."""
    summary = {"machine": platform.platform(), "cpus": os.cpu_count()}
    if load_average:
        summary["load_average"] = os.getloadavg()
    return summary | {"date": utc_timestamp(), "jax": jax.__version__}


def machine_with_load(load_before, **versions):
    """The `machine` record of the reference_* scripts: platform, Python, CPU count, jax and the
    given package `versions`, and the load average at the start (`load_before`) and now."""
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        **versions,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }


def cpu_model():
    """The CPU's model name from /proc/cpuinfo with its family and model numbers (else
    `platform.processor()` or "unknown"). The numbers tell CPU generations apart where the
    name does not (the virtual machines here all say "AMD EPYC"), and results can differ
    between them: XLA compiles for the host's instruction set, and a chaotic computation (a
    CMA-ES run making a benchmark's initial set) amplifies the rounding."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                name, _, value = line.partition(":")
                fields.setdefault(name.strip(), value.strip())
                if not line.strip():  # the first processor's block is enough
                    break
    except OSError:
        pass
    if "model name" not in fields:
        return platform.processor() or "unknown"
    return f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def machine_info(*packages):
    """The `machine` record of the throughput benchmarks (core_gp, steingp_blackjax): CPU model
    and count, platform, Python, jax and the installed versions of `packages`, jax devices."""
    return {
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        **{package: importlib.metadata.version(package) for package in packages},
        "devices": [str(device) for device in jax.devices()],
    }


# --------------------------------------------------------------------------- fits (steingp_*)


def ml2_fit_predict(kernel, likelihood, X, y, X_test):
    """ML-II baseline: maximise the exact log marginal likelihood of a zero-mean GP with Gaussian
    noise over (kernel, likelihood) without their priors (`gpcompose.maximize`, scale N), then
    predict the latent f at `X_test`. **Returns:** (kernel, likelihood, mean, variance)."""
    import gpcompose

    def log_marginal_likelihood(params, data):
        prior_kernel, gaussian = params
        inputs, targets = data
        posterior = gpcompose.gp.condition(prior_kernel, gpcompose.means.Zero(), inputs, targets, gaussian.variance)
        return gpcompose.gp.log_marginal_likelihood(posterior)

    fit = gpcompose.maximize(
        log_marginal_likelihood,
        (kernel, likelihood),
        (jnp.asarray(X), jnp.asarray(y)),
        include_prior=False,
        scale=float(len(y)),
    )
    kernel, likelihood = fit.params
    posterior = gpcompose.gp.condition(kernel, gpcompose.means.Zero(), X, y, likelihood.variance)
    mean, variance = gpcompose.gp.predict(posterior, X_test)
    return kernel, likelihood, mean, variance


def timed_steingp_fit(X, y, X_test, y_test, seed, **fit_options):
    """`gpcompose.steingp.fit` on (X, y) with key `seed` and `fit_options`, then the predictive
    mean and the log predictive density at `X_test`, timed from the start of the fit until the
    density is computed. **Returns:** (result, mean, log_density, wall seconds)."""
    import gpcompose

    start = time.perf_counter()
    result = gpcompose.steingp.fit(X, y, key=jax.random.key(seed), **fit_options)
    mean, _ = result.predict(X_test)
    log_density = result.log_predictive_density(X_test, y_test)
    jax.block_until_ready(log_density)
    return result, mean, log_density, time.perf_counter() - start


# --------------------------------------------------------------------------- output files


def strong_types(tree):
    """`tree` with weakly typed array leaves (from Python numbers) made strong, so that the state a
    jitted step returns has exactly the types of the state it received and the step compiles once."""

    def strong(leaf):
        return jnp.asarray(leaf, dtype=leaf.dtype) if isinstance(leaf, jax.Array) else leaf

    return jax.tree.map(strong, tree)


def code_version() -> str:
    """The commit the run used, with "+changes" if gpcompose/ or benchmarks/ differ from it."""

    def git(*arguments):
        return subprocess.run(
            ["git", *arguments], cwd=Path(__file__).resolve().parent, capture_output=True, text=True
        ).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--", "../gpcompose", ".")
    return commit + ("+changes" if changed else "")


def compile_and_run_seconds(function, *args, **kwargs):
    """(output, compile seconds, run seconds) of a compiled `function`: two calls on the same
    arguments, the first's time less the second's being the compilation."""
    import equinox as eqx

    compiled = eqx.filter_jit(function)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        output = jax.block_until_ready(compiled(*args, **kwargs))
        times.append(time.perf_counter() - start)
    return output, max(times[0] - times[1], 0.0), times[1]


def write_json(path, data, indent=1):
    """Write `data` as JSON to `path`, creating its folder."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as file:
        json.dump(data, file, indent=indent)


def agg_pyplot():
    """`matplotlib.pyplot` on the non-interactive Agg backend (the scripts only write PNGs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, path, dpi=120):
    """Lay out `figure`, write it to `path` and close it."""
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    import matplotlib.pyplot as plt

    plt.close(figure)
