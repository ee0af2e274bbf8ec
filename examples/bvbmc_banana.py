"""BVBMC on a 2-D banana: a Gaussian-mixture posterior and a log-evidence estimate from a
few dozen evaluations of an unnormalised log density, checked against dense grid quadrature.

The target is the banana (twisted Gaussian) density
    log g(x) = −x₁²/(2a²) − (x₂ − b(x₁² − a²))²/(2s²),
i.e. x₁ ~ N(0, a²) and x₂ | x₁ ~ N(b(x₁² − a²), s²), up to the normaliser Z = 2π a s.
Its ground truth (log Z, mean, covariance) comes from a midpoint sum on a dense grid in the
example; the closed forms Z = 2π a s, mean 0, covariance diag(a², s² + 2b²a⁴) check that grid.
BVBMC (`gpcompose.bvbmc.fit`, Naiff 2019) starts from a uniform design on a box around the
banana and spends a small budget of new evaluations. Metrics: gsKL between the moment-matched
Gaussians of the mixture and of the target (`gpcompose.problems.metrics.gskl`), and
|ELBO − log Z|.

Run with `python examples/bvbmc_banana.py` (writes `examples/bvbmc_banana.png`: the mixture's
marginals and density against exact samples of the banana, and its ELBO after each evaluation).
"""

import math
import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import boosting, bvbmc, kernels  # noqa: E402
from gpcompose import plot as plot_results  # noqa: E402
from gpcompose.problems.metrics import gskl  # noqa: E402

MARGINAL_SD = 1.0  # a
CURVATURE = 0.5  # b
CONDITIONAL_SD = 0.5  # s
DESIGN_LOWER = np.array([-3.5, -2.0])  # box of the initial design (and of BVBMC's acquisitions)
DESIGN_UPPER = np.array([3.5, 6.0])
GRID_LOWER = (-7.0, -5.0)  # |x₁| ≤ 7a holds all but 3e-12 of the mass
GRID_UPPER = (7.0, 30.0)
GRID_SPACING = 0.02


def log_density(x):
    """log g(x) = −x₁²/(2a²) − (x₂ − b(x₁² − a²))²/(2s²), for points of shape (..., 2)."""
    first, second = x[..., 0], x[..., 1]
    bend = CURVATURE * (first**2 - MARGINAL_SD**2)
    return -0.5 * (first / MARGINAL_SD) ** 2 - 0.5 * ((second - bend) / CONDITIONAL_SD) ** 2


def closed_form():
    """log Z = log(2π a s); mean (0, 0); covariance diag(a², s² + 2b²a⁴) (Var x₁² = 2a⁴)."""
    variance_second = CONDITIONAL_SD**2 + 2.0 * CURVATURE**2 * MARGINAL_SD**4
    return (
        math.log(2.0 * math.pi * MARGINAL_SD * CONDITIONAL_SD),
        np.zeros(2),
        np.diag([MARGINAL_SD**2, variance_second]),
    )


def grid_reference():
    """log Z, mean and covariance of g by a midpoint sum on the grid `GRID_*` (NumPy, float64)."""
    first = np.arange(GRID_LOWER[0] + GRID_SPACING / 2, GRID_UPPER[0], GRID_SPACING)
    second = np.arange(GRID_LOWER[1] + GRID_SPACING / 2, GRID_UPPER[1], GRID_SPACING)
    points = np.stack(np.meshgrid(first, second, indexing="ij"), axis=-1)
    log_values = np.asarray(log_density(points))
    peak = log_values.max()
    weights = np.exp(log_values - peak)
    total = weights.sum()
    log_normalizer = peak + math.log(total * GRID_SPACING**2)
    probabilities = (weights / total)[..., None]
    mean = np.sum(probabilities * points, axis=(0, 1))
    centred = points - mean
    covariance = np.einsum("ijk,ijl->kl", probabilities * centred, centred)
    return log_normalizer, mean, covariance


def settings(smoke):
    """(number of initial points, budget of new evaluations, the `bvbmc.BVBMC` learner): 10D
    initial points and 40 evaluations, boosting steps with fewer Adam steps and samples than the
    thesis's code (300/500), a joint update every 10 steps and at most 10 components; the smoke
    size is the smallest that runs every stage (ML-II, q₀, acquisition, f-step, w-step).

    An SE kernel and one acquisition (PROP) instead of the defaults (product Matérn-5/2, PROP and
    MMLT alternated) make the run cheaper, mostly in compilation."""
    common = dict(
        acquisitions=(bvbmc.Prospective(),),
        kernel=kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0),
    )
    if smoke:
        algorithm = boosting.Boosting(
            relbo_steps=10, relbo_samples=16, weight_samples=16, joint_update_every=10, joint_steps=10,
            joint_samples_per_component=16,
        )  # fmt: skip
        learner = bvbmc.BVBMC(
            max_components=4, fit_steps=30, initial_joint_steps=20, num_candidates=8, search_steps=3,
            final_entropy_samples=1024, boosting=algorithm, **common,
        )  # fmt: skip
        return 12, 3, learner
    algorithm = boosting.Boosting(
        relbo_steps=200, relbo_samples=200, weight_samples=200, joint_update_every=10, joint_steps=200,
        joint_samples_per_component=100,
    )  # fmt: skip
    return 20, 40, bvbmc.BVBMC(max_components=10, boosting=algorithm, **common)


def run(key, *, out_dir: pathlib.Path, smoke: bool = False) -> dict:
    """BVBMC on the banana; writes `<out_dir>/bvbmc_banana.png` and returns the summary row."""
    design_key, run_key = jax.random.split(key)
    num_initial, budget, learner = settings(smoke)
    jitted = jax.jit(log_density)
    start = time.perf_counter()
    X0 = jax.random.uniform(design_key, (num_initial, 2), minval=DESIGN_LOWER, maxval=DESIGN_UPPER)
    target = lambda x: float(jitted(jnp.asarray(x)))  # noqa: E731
    per_round = []  # the result after each evaluation: BVBMC keeps no per-round ELBO
    result = bvbmc.fit(
        target, np.asarray(X0), key=run_key, budget=budget, learner=learner,
        callback=lambda progress: per_round.append(learner.result(progress.state)),
    )  # fmt: skip
    seconds = time.perf_counter() - start

    log_normalizer, mean, covariance = grid_reference()
    divergence = float(gskl(result.posterior.mean(), result.posterior.covariance(), mean, covariance))
    evidence_error = abs(float(result.elbo) - log_normalizer)
    png = pathlib.Path(out_dir) / "bvbmc_banana.png"
    plot(result, per_round, log_normalizer, jax.random.fold_in(key, 1), png)
    return {
        "method": "BVBMC",
        "problem": f"banana (D=2), {num_initial} uniform initial + {budget} BVBMC evaluations",
        "metric": "gsKL",
        "value": divergence,
        "reference": f"0 (moments of a {GRID_SPACING}-spaced grid); |ELBO − log Z| = {evidence_error:.3g}, "
        f"log Z = {log_normalizer:.4f}",
        "seconds": seconds,
        "png": str(png),
        "elbo": float(result.elbo),
        "elbo_sd": float(result.elbo_sd),
        "log_normaliser": log_normalizer,
        "evidence_error": evidence_error,
        "num_components": int(jnp.sum(result.posterior.mask)),
    }


def exact_samples(key, num_samples):
    """Draws of the banana: x₁ = a z₁, x₂ = b(x₁² − a²) + s z₂ with z ~ N(0, I)."""
    z = np.asarray(jax.random.normal(key, (num_samples, 2)))
    first = MARGINAL_SD * z[:, 0]
    return np.stack([first, CURVATURE * (first**2 - MARGINAL_SD**2) + CONDITIONAL_SD * z[:, 1]], axis=1)


def plot(result, per_round, log_normalizer, key, path):
    """The mixture's corner plot against exact samples of the banana (`gpcompose.plot.corner`)
    beside its ELBO after every evaluation (`gpcompose.plot.elbo_trace`)."""
    sample_key, reference_key = jax.random.split(key)
    figure = plt.figure(figsize=(11, 4.8), layout="constrained")
    left, right = figure.subfigures(1, 2, width_ratios=[1.1, 1])
    plot_results.corner(
        result.posterior, key=sample_key, reference_samples=exact_samples(reference_key, 20_000), labels=["x₁", "x₂"],
        fig=left,
    )  # fmt: skip
    components = int(jnp.sum(result.posterior.mask))
    left.suptitle(f"BVBMC mixture, {components} components; exact samples in black")
    plot_results.elbo_trace(per_round, log_normalizer=log_normalizer, ax=right.subplots())
    right.suptitle("ELBO after each evaluation; grid log Z dashed")
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main():
    reference = grid_reference()
    exact = closed_form()
    print(f"log Z: grid {reference[0]:.10f}, closed form {exact[0]:.10f}")
    row = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(
        f"{row['method']} on {row['problem']}: gsKL {row['value']:.4g}, ELBO {row['elbo']:.4f} ± {row['elbo_sd']:.4f} "
        f"(log Z {row['log_normaliser']:.4f}, error {row['evidence_error']:.4f}), {row['num_components']} components, "
        f"{row['seconds']:.1f} s"
    )
    print(f"wrote {row['png']}")


if __name__ == "__main__":
    main()
