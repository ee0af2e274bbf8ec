"""SVBMC on the two-moons target: the evidence and posterior from a few MCMC evaluations.

Sparse Variational Bayesian Monte Carlo (Li, Clarté & Acerbi 2023) post-processes existing
evaluations of a log density — here every evaluation of 4 short slice-sampling chains on the
two-moons target (κ = 8, radial scale 0.1, the VSBQ variant) — into a sparse-GP surrogate and a
Gaussian-mixture posterior, spends a small active budget of new evaluations, and estimates
log Z by the ELBO. Ground truth: log Z by dense 2-D grid quadrature of the target (checked
against the closed form of `TwoMoons.log_normalizer`) and exact reference samples for MMTV.

The slice sampler, which records every evaluation it makes (step-outs and rejected proposals too), is
the one of the SVBMC benchmarks, `benchmarks/benchmark_problems` in the repository (not installed with
gpcompose), so the example runs from a checkout.

Run with `python examples/svbmc_two_moons.py`. Writes `examples/svbmc_two_moons.png`
(the SVBMC posterior's marginals and density against exact samples; the ELBO of every round).
"""

import pathlib
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import plot as plot_results  # noqa: E402
from gpcompose import svbmc  # noqa: E402
from gpcompose.problems import TwoMoons  # noqa: E402
from gpcompose.problems.metrics import delta_lml, mmtv  # noqa: E402

BENCHMARKS_DIR = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
if str(BENCHMARKS_DIR) not in sys.path:  # the benchmarks' slice sampler (module docstring)
    sys.path.append(str(BENCHMARKS_DIR))
from benchmark_problems import slice_sampling_evaluations  # noqa: E402

NAME = "svbmc_two_moons"
NUM_CHAINS = 4
BOX_HALF_WIDTH = 2.0  # the target is below e^{-70} of its maximum outside [-2, 2]² (ring radius 0.71, sd 0.1)
# (full size, smoke size): slice-sampling evaluations per chain, new evaluations
SIZES = {False: (100, 10), True: (40, 2)}
LEARNERS = {
    False: svbmc.SVBMC(
        batch_size=5,
        max_components=8,
        subset_size=150,
        min_inducing=80,
        max_inducing=150,
        exact_fit_steps=100,
        sparse_fit_steps=30,
        buildup_steps=100,
        round_steps=50,
        num_candidates=64,
        search_steps=15,
    ),
    True: svbmc.SVBMC(
        batch_size=2,
        max_components=2,
        subset_size=60,
        min_inducing=20,
        max_inducing=40,
        exact_fit_steps=20,
        sparse_fit_steps=5,
        buildup_steps=20,
        round_steps=10,
        num_candidates=16,
        search_steps=3,
        final_entropy_samples=4096,
    ),
}


def grid_log_normalizer(target, num_points_per_axis):
    """log Z ≈ log Σ_ij p(x_ij) h² on a uniform midpoint grid of [−2, 2]² with spacing h."""
    spacing = 2 * BOX_HALF_WIDTH / num_points_per_axis
    axis = jnp.linspace(-BOX_HALF_WIDTH + spacing / 2, BOX_HALF_WIDTH - spacing / 2, num_points_per_axis)
    points = jnp.stack(jnp.meshgrid(axis, axis), axis=-1).reshape(-1, 2)
    log_densities = jax.lax.map(target.log_density, points, batch_size=65536)
    return jax.nn.logsumexp(log_densities) + 2 * jnp.log(spacing)


def initial_evaluations(target, key, evaluations_per_chain):
    """Every evaluation of 4 slice-sampling chains (width 0.5) started at N(0, 0.5² I) draws."""
    start_key, chain_key = jax.random.split(key)
    starts = 0.5 * jax.random.normal(start_key, (NUM_CHAINS, 2))

    def chain(start, key):
        points, values, _ = slice_sampling_evaluations(target.log_density, key, start, evaluations_per_chain, 0.5)
        return points, values

    points, values = jax.vmap(chain)(starts, jax.random.split(chain_key, NUM_CHAINS))
    return np.asarray(points.reshape(-1, 2)), np.asarray(values.reshape(-1))


def plot(path, samples, reference, updates, log_normalizer):
    """The posterior's corner plot against exact samples (`gpcompose.plot.corner`) beside the
    ELBO of every round (`gpcompose.plot.elbo_trace`)."""
    figure = plt.figure(figsize=(11, 4.8), layout="constrained")
    left, right = figure.subfigures(1, 2, width_ratios=[1.1, 1])
    plot_results.corner(samples, reference_samples=reference, labels=["x₁", "x₂"], fig=left)
    left.suptitle("SVBMC posterior; exact samples in black")
    plot_results.elbo_trace(updates, log_normalizer=log_normalizer, ax=right.subplots())
    right.suptitle("ELBO per round; grid log Z dashed")
    figure.savefig(path, dpi=110)
    plt.close(figure)


def run(key, *, out_dir: pathlib.Path, smoke: bool = False) -> dict:
    """SVBMC on two moons; writes `<out_dir>/svbmc_two_moons.png` and returns the summary row
    (ΔLML = |ELBO − log Z| against the grid-quadrature log Z, plus MMTV against exact samples)."""
    start = time.perf_counter()
    evaluations_per_chain, budget = SIZES[smoke]
    data_key, fit_key, sample_key, reference_key = jax.random.split(key, 4)
    target = TwoMoons(radial_scale=0.1, concentration=8.0)
    log_normalizer = float(grid_log_normalizer(target, 200 if smoke else 800))
    if abs(log_normalizer - target.log_normalizer) > 1e-6:
        raise RuntimeError(f"grid log Z {log_normalizer} disagrees with the closed form {target.log_normalizer}.")
    X, y = initial_evaluations(target, data_key, evaluations_per_chain)
    log_density = eqx.filter_jit(target.log_density)
    updates = []  # each round's SVBMCUpdateInfo (ELBO ± sd), for the plot

    def record_round(progress):
        if progress.tell_info.updated:
            updates.append(progress.tell_info.update)

    result = svbmc.fit(
        lambda x: float(log_density(x)),
        X,
        y,
        key=fit_key,
        budget=budget,
        learner=LEARNERS[smoke],
        callback=record_round,
    )
    num_samples = 2000 if smoke else 20_000
    samples = np.asarray(result.posterior.sample(sample_key, num_samples))
    error = float(delta_lml(result.elbo, log_normalizer))
    reference = np.asarray(target.reference_samples(reference_key, num_samples))
    marginal_total_variation = float(mmtv(samples, reference))
    path = pathlib.Path(out_dir) / f"{NAME}.png"
    plot(path, samples, reference, updates, log_normalizer)
    return {
        "method": "SVBMC",
        "problem": f"two moons (D=2), {X.shape[0]} evaluations from {NUM_CHAINS} slice chains + {budget} active",
        "metric": "ΔLML",
        "value": error,
        "reference": f"0 (grid log Z = {log_normalizer:.4f}); ELBO {float(result.elbo):.4f} ± "
        f"{float(result.elbo_sd):.4f}, MMTV {marginal_total_variation:.3f} vs exact samples",
        "seconds": time.perf_counter() - start,
        "png": str(path),
    }


def main():
    row = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(row)


if __name__ == "__main__":
    main()
