"""A NumPyro model through gpcompose: BVBMC on its unconstrained log density, checked against
NUTS and a dense grid, with the posterior samples exported to ArviZ.

The model is eight schools (Rubin 1981; Gelman et al., BDA3 §5.5) with the school effects
θ_j ~ N(μ, τ²) integrated out, so that y_j ~ N(μ, τ² + σ_j²), with μ ~ N(0, 5²) and
τ ~ HalfCauchy(5). `gpcompose.contrib.numpyro.NumPyroLogDensity` turns it into a log density on
θ = (μ, log τ) ∈ R² that includes the log-Jacobian of τ = exp(θ₂) (NumPyro's −potential energy).

- BVBMC (`gpcompose.bvbmc.fit`) starts from a uniform design on the θ box of the ranges
  `DESIGN_RANGES` of μ and τ (mapped to θ by `to_unconstrained`; BVBMC searches inside the box
  of its design, so the box must hold the posterior: prior draws of τ ~ HalfCauchy(5) rarely fall
  below 0.5 and would leave the posterior's long tail towards τ → 0 out) and spends a small
  budget of new evaluations; its mixture's draws go back to (μ, τ) with `to_constrained`.
- NUTS (`numpyro.infer.MCMC`, two vectorised chains) runs on the same model.
- Ground truth: the posterior on a dense θ grid (log Z, moments), possible in D = 2.

Metrics: gsKL between the moment-matched Gaussians of each method and of the grid on θ
(`gpcompose.problems.metrics.gskl`), MMTV between BVBMC and NUTS draws on θ, posterior
mean and sd of μ and τ, and |ELBO − log Z|. With ArviZ installed the draws of both methods are
summarised by `arviz.summary` (through `gpcompose.contrib.arviz.to_inference_data`).

The issue's suggestions, the Lotka–Volterra and timing models, are too slow here: one gradient
of our timing likelihood takes ~50 ms, so a NUTS run alone would take minutes.

Run with `python examples/numpyro_bridge.py`. Writes `examples/numpyro_bridge.png`.
"""

import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import boosting, bvbmc, kernels  # noqa: E402
from gpcompose.contrib.numpyro import NumPyroLogDensity  # noqa: E402
from gpcompose.problems.metrics import gskl, mmtv  # noqa: E402

NAME = "numpyro_bridge"
NUM_CHAINS = 2  # NUTS chains (vectorised); the BVBMC draws are split the same way for ArviZ
# Estimated coaching effects and their standard errors (BDA3 Table 5.2).
EFFECTS = jnp.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
STANDARD_ERRORS = jnp.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
# The design box, in the model's own (constrained) terms.
DESIGN_RANGES = {"mu": (-10.0, 20.0), "tau": (np.exp(-6.0), np.exp(4.0))}
# θ grid: μ ± 8 posterior sds; log τ from −14 (the density falls like τ as τ → 0) to 9 (like τ^{-8}).
GRID_LOWER = (-25.0, -14.0)
GRID_UPPER = (35.0, 9.0)
GRID_POINTS = 500


def eight_schools(effects, standard_errors):
    """y_j ~ N(μ, τ² + σ_j²), μ ~ N(0, 5²), τ ~ HalfCauchy(5)."""
    mean = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    scale = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("school", effects.shape[0]):
        numpyro.sample("y", dist.Normal(mean, jnp.sqrt(scale**2 + standard_errors**2)), obs=effects)


def grid_reference(log_density):
    """log Z, mean, covariance and the (μ, log τ) grid with its log densities, by a midpoint sum."""
    axes = [
        np.linspace(lower, upper, GRID_POINTS, endpoint=False) + (upper - lower) / (2 * GRID_POINTS)
        for lower, upper in zip(GRID_LOWER, GRID_UPPER)
    ]
    cell = np.prod([(upper - lower) / GRID_POINTS for lower, upper in zip(GRID_LOWER, GRID_UPPER)])
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    log_values = np.asarray(jax.jit(jax.vmap(log_density))(jnp.asarray(points.reshape(-1, 2)))).reshape(
        points.shape[:2]
    )
    peak = log_values.max()
    weights = np.exp(log_values - peak)
    log_normalizer = peak + np.log(weights.sum() * cell)
    probabilities = (weights / weights.sum())[..., None]
    mean = np.sum(probabilities * points, axis=(0, 1))
    centred = points - mean
    covariance = np.einsum("ijk,ijl->kl", probabilities * centred, centred)
    return {"log_normaliser": float(log_normalizer), "mean": mean, "covariance": covariance}, axes, log_values


def settings(smoke):
    """(initial design points, BVBMC budget, NUTS warmup and samples, the `BVBMC` learner).

    The smoke size spends no new evaluation: it runs the bridge through `bvbmc.fit`'s initial
    fit, NUTS, ArviZ and the plot; compiling BVBMC's ask/tell steps would double its time, and
    they are tested in `tests/test_bvbmc.py`."""
    kernel = kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0)
    if smoke:
        algorithm = boosting.Boosting(
            relbo_steps=10, relbo_samples=16, weight_samples=16, joint_update_every=10, joint_steps=10,
            joint_samples_per_component=16,
        )  # fmt: skip
        learner = bvbmc.BVBMC(
            max_components=4, fit_steps=30, initial_joint_steps=20, num_candidates=8, search_steps=3,
            final_entropy_samples=1024, acquisitions=(bvbmc.Prospective(),), boosting=algorithm, kernel=kernel,
        )  # fmt: skip
        return 12, 0, (200, 400), learner
    algorithm = boosting.Boosting(
        relbo_steps=50, relbo_samples=64, weight_samples=64, joint_update_every=10, joint_steps=50,
        joint_samples_per_component=32,
    )  # fmt: skip
    learner = bvbmc.BVBMC(max_components=6, acquisitions=(bvbmc.Prospective(),), boosting=algorithm, kernel=kernel)
    return 16, 20, (500, 2000), learner


def moments(draws):
    return np.mean(draws, axis=0), np.cov(draws, rowvar=False)


def run(key, *, out_dir: pathlib.Path, smoke: bool = False) -> dict:
    """BVBMC through the NumPyro bridge beside NUTS; writes `<out_dir>/numpyro_bridge.png` and
    returns the summary row (with ArviZ summaries of both posteriors when ArviZ is installed)."""
    bridge_key, design_key, run_key, nuts_key, draw_key = jax.random.split(key, 5)
    num_initial, budget, (num_warmup, num_samples), learner = settings(smoke)
    data = (EFFECTS, STANDARD_ERRORS)
    log_density = NumPyroLogDensity(eight_schools, key=bridge_key, model_args=data)

    start = time.perf_counter()
    corners = log_density.to_unconstrained({name: jnp.array(bounds) for name, bounds in DESIGN_RANGES.items()})
    X0 = jax.random.uniform(design_key, (num_initial, 2), minval=corners[0], maxval=corners[1])
    result = bvbmc.fit(
        log_density,
        np.asarray(X0),
        key=run_key,
        budget=budget,
        learner=learner,
    )
    bvbmc_draws = result.posterior.sample(draw_key, num_samples)
    bvbmc_sites = log_density.to_constrained(bvbmc_draws)  # = log_density.sample_constrained(result.posterior, ...)
    bvbmc_seconds = time.perf_counter() - start

    start = time.perf_counter()
    mcmc = MCMC(
        NUTS(eight_schools),
        num_warmup=num_warmup,
        num_samples=num_samples // NUM_CHAINS,
        num_chains=NUM_CHAINS,
        chain_method="vectorized",
        progress_bar=False,
    )
    with jax.numpy_dtype_promotion("standard"):  # NumPyro's NUTS mixes int and float arrays
        mcmc.run(nuts_key, *data)
    nuts_sites = mcmc.get_samples()
    nuts_draws = log_density.to_unconstrained(nuts_sites)
    nuts_seconds = time.perf_counter() - start

    reference, axes, log_values = grid_reference(log_density)
    row = {
        "method": "BVBMC through gpcompose.contrib.numpyro",
        "problem": f"eight schools (D=2), {num_initial} uniform initial + {budget} BVBMC evaluations",
        "metric": "gsKL",
        "value": float(gskl(*moments(np.asarray(bvbmc_draws)), reference["mean"], reference["covariance"])),
        "reference": f"0 (grid); NUTS ({num_samples} draws) "
        f"{float(gskl(*moments(np.asarray(nuts_draws)), reference['mean'], reference['covariance'])):.3g}",
        "seconds": bvbmc_seconds,
        "nuts_seconds": nuts_seconds,
        "mmtv_bvbmc_nuts": float(mmtv(bvbmc_draws, nuts_draws)),
        "elbo": float(result.elbo),
        "elbo_sd": float(result.elbo_sd),
        "log_normaliser": reference["log_normaliser"],
        "evidence_error": abs(float(result.elbo) - reference["log_normaliser"]),
        "posterior": {
            name: {
                method: (float(np.mean(sites[name])), float(np.std(sites[name])))
                for method, sites in (("bvbmc", bvbmc_sites), ("nuts", nuts_sites))
            }
            for name in ("mu", "tau")
        },
    }
    try:
        import arviz

        from gpcompose.contrib.arviz import to_inference_data

        row["arviz_summary"] = {
            "bvbmc": arviz.summary(to_inference_data(bvbmc_sites, site_names=["mu", "tau"], num_chains=NUM_CHAINS)),
            "nuts": arviz.summary(arviz.from_numpyro(mcmc)),
        }
    except ImportError:
        row["arviz_summary"] = None
    png = pathlib.Path(out_dir) / f"{NAME}.png"
    plot(result, num_initial, axes, log_values, reference, bvbmc_draws, nuts_draws, png)
    row["png"] = str(png)
    return row


def plot(result, num_initial, axes, log_values, reference, bvbmc_draws, nuts_draws, path):
    """Left: the posterior on θ = (μ, log τ) (grid contours), the evaluations and the mixture's
    contours. Right: the marginal of log τ from the grid, BVBMC and NUTS."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    target = log_values - reference["log_normaliser"]
    levels = target.max() + np.array([-6.0, -3.5, -1.5, -0.3])
    left.contour(axes[0], axes[1], target.T, levels=levels, colors="k", linewidths=1, linestyles="solid")
    mu, log_tau = np.meshgrid(axes[0], axes[1], indexing="ij")
    approximation = np.asarray(result.posterior.log_prob(jnp.asarray(np.stack([mu, log_tau], axis=-1))))
    left.contour(axes[0], axes[1], approximation.T, levels=levels, colors="C0", linewidths=1, linestyles="solid")
    X = np.asarray(result.X)
    left.plot(X[:num_initial, 0], X[:num_initial, 1], "s", color="0.5", markersize=4, label="initial design")
    left.plot(X[num_initial:, 0], X[num_initial:, 1], ".", color="C3", markersize=6, label="BVBMC evaluations")
    left.plot([], [], "k", label="posterior (grid)")
    left.plot([], [], "C0", label="BVBMC mixture")
    left.set_xlim(-15.0, 25.0)
    left.set_ylim(-8.0, 6.0)
    left.set_xlabel("μ")
    left.set_ylabel("log τ")
    left.legend(loc="lower left", fontsize=8)
    marginal = np.exp(target).sum(axis=0) * (axes[0][1] - axes[0][0])
    right.plot(axes[1], marginal, "k", label="grid")
    bins = np.linspace(-8.0, 6.0, 50)
    right.hist(np.asarray(bvbmc_draws[:, 1]), bins=bins, density=True, histtype="step", color="C0", label="BVBMC")
    right.hist(np.asarray(nuts_draws[:, 1]), bins=bins, density=True, histtype="step", color="C1", label="NUTS")
    right.set_xlim(-8.0, 6.0)
    right.set_xlabel("log τ")
    right.set_title("marginal of log τ")
    right.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main():
    row = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(f"{row['problem']}: BVBMC {row['seconds']:.1f} s, NUTS {row['nuts_seconds']:.1f} s")
    print(f"gsKL to the grid on (μ, log τ): BVBMC {row['value']:.4g}, NUTS {row['reference'].split()[-1]}")
    print(f"MMTV(BVBMC, NUTS) on (μ, log τ): {row['mmtv_bvbmc_nuts']:.3f}")
    print(
        f"ELBO {row['elbo']:.3f} ± {row['elbo_sd']:.3f}, grid log Z {row['log_normaliser']:.3f} "
        f"(error {row['evidence_error']:.3f})"
    )
    for name, methods in row["posterior"].items():
        print(f"{name}: " + ", ".join(f"{method} {mean:.2f} ± {sd:.2f}" for method, (mean, sd) in methods.items()))
    if row["arviz_summary"] is not None:
        for method, summary in row["arviz_summary"].items():
            print(f"ArviZ summary, {method}:\n{summary}")
    print(f"wrote {row['png']}")


if __name__ == "__main__":
    main()
