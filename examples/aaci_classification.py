"""AACI on 2-D binary classification: CAVI's class probabilities against an exact Gibbs sampler.

Augmented conjugate inference (Galy-Fajou, Wenzel & Opper 2020) writes the logistic likelihood as
a scale mixture of Gaussians with a Pólya-Gamma-type auxiliary variable ω; given ω the model is
conjugate, so coordinate-ascent VI (CAVI: closed-form updates of q(f) and q(ω)) converges in a few
steps, and the Gibbs sampler of the same augmented model (f | ω, then ω | f) samples the exact
posterior. Data: 2-D inputs, uniform on [−3, 3]², labels y ~ Bernoulli(σ(f_true(x))) from a known
latent function with a curved decision boundary. The GP (squared-exponential kernel with fixed
hyperparameters) is the same in both methods, so the Gibbs run is the ground truth for CAVI's
predictive class probabilities P(y* = 1 | data) = E[σ(f*)].

Run with `python examples/aaci_classification.py`. Writes `examples/aaci_classification.png`
(data, CAVI's probability contours and decision boundary, and its difference to Gibbs).
"""

import functools
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

import gpcompose  # noqa: E402
from gpcompose import aaci, gp, means  # noqa: E402
from gpcompose.kernels import SquaredExponential  # noqa: E402
from gpcompose.likelihoods import Logistic  # noqa: E402

NAME = "aaci_classification"
HALF_WIDTH = 3.0
KERNEL = SquaredExponential(lengthscale=1.2, variance=4.0)
CAVI_STEPS = 30
# (full size, smoke size): training points, Gibbs chains, sweeps per chain (first tenth discarded), grid points per axis
SIZES = {False: (100, 4, 1500, 30), True: (30, 2, 500, 10)}
NUM_TEST = 1000
# Every 5th Gibbs draw is kept (successive draws are strongly correlated, and conditioning each draw
# on the grid is the run's largest cost); kept draws are conditioned in batches of 200 (memory).
THINNING = 5
CONDITIONING_BATCH = 200


def latent(x):
    """f_true(x) = 3 (sin(1.5 x₁) − x₂/2), a wavy decision boundary x₂ = 2 sin(1.5 x₁)."""
    return 3.0 * (jnp.sin(1.5 * x[..., 0]) - 0.5 * x[..., 1])


def make_data(key, num_points):
    """Inputs uniform on [−3, 3]², labels in {0, 1} with P(y = 1 | x) = σ(f_true(x))."""
    input_key, label_key = jax.random.split(key)
    X = jax.random.uniform(input_key, (num_points, 2), minval=-HALF_WIDTH, maxval=HALF_WIDTH)
    y = jax.random.bernoulli(label_key, jax.nn.sigmoid(latent(X))).astype(X.dtype)
    return X, y


@functools.partial(jax.jit, static_argnames=("num_chains", "num_sweeps"))
def gibbs_class_probability(X, y, X_new, key, num_chains, num_sweeps):
    """P(y* = 1 | data) at `X_new` from `num_chains` Gibbs chains of the augmented model (the first
    tenth of each chain discarded, then every `THINNING`-th draw kept), Rao–Blackwellised: each
    draw f of the latent values at X gives f* | f ~ N(K*ₓK⁻¹f, k** − K*ₓK⁻¹Kₓ*) and contributes
    E[σ(f*)] by the likelihood's quadrature.
    Returns the per-chain averages, shape (num_chains, Q). One compiled program, so that a
    second run on new data of the same size compiles nothing."""
    likelihood = Logistic()
    sampler = aaci.Gibbs(KERNEL, likelihood)
    ones = likelihood.targets(jnp.ones((X_new.shape[0],), X_new.dtype))

    def chain(chain_key):
        init_key, run_key = jax.random.split(chain_key)
        _, infos = gpcompose.run(sampler, sampler.init(X, key=init_key), run_key, num_sweeps, y)
        return infos.latent[num_sweeps // 10 :: THINNING]

    def probability(draw):
        # noise-free conditioning of the GP on the draw (a 1e-10 nugget for the factorisation)
        mean, variance = gp.predict(gp.condition(KERNEL, means.Zero(), X, draw, 1e-10), X_new)
        return jnp.exp(likelihood.log_predictive_density(ones, mean, variance))

    def chain_average(chain_draws):
        return jnp.mean(jax.lax.map(probability, chain_draws, batch_size=CONDITIONING_BATCH), axis=0)

    draws = jax.vmap(chain)(jax.random.split(key, num_chains))
    return jax.lax.map(chain_average, draws)


def plot(path, X, y, axis_values, probability, difference):
    X, y = np.asarray(X), np.asarray(y)  # masked in NumPy: JAX would compile each count of points
    shape = (axis_values.shape[0], axis_values.shape[0])
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    filled = axes[0].contourf(axis_values, axis_values, probability.reshape(shape), levels=11, cmap="RdBu_r")
    axes[0].contour(axis_values, axis_values, probability.reshape(shape), levels=[0.5], colors="k")
    boundary = 2.0 * jnp.sin(1.5 * axis_values)
    axes[0].plot(axis_values, boundary, "w--", linewidth=1.2, label="true boundary f_true = 0")
    for label, colour in ((0.0, "C0"), (1.0, "C3")):
        chosen = y == label
        axes[0].plot(X[chosen, 0], X[chosen, 1], "o", color=colour, markeredgecolor="k", markersize=4)
    axes[0].set_ylim(-HALF_WIDTH, HALF_WIDTH)
    axes[0].legend(loc="lower left", fontsize=8)
    axes[0].set_title("CAVI: P(y = 1 | data), boundary 0.5 (black)")
    figure.colorbar(filled, ax=axes[0])
    limit = float(jnp.max(jnp.abs(difference)))
    image = axes[1].contourf(
        axis_values, axis_values, difference.reshape(shape), levels=11, cmap="PuOr", vmin=-limit, vmax=limit
    )
    axes[1].set_title("CAVI − Gibbs (exact posterior)")
    figure.colorbar(image, ax=axes[1])
    for axis in axes:
        axis.set_aspect("equal")
        axis.set_xlabel("x₁")
    axes[0].set_ylabel("x₂")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def run(key, *, out_dir: pathlib.Path, smoke: bool = False) -> dict:
    """CAVI with the logistic likelihood; writes `<out_dir>/aaci_classification.png` and returns
    the summary row (mean |P_CAVI(y* = 1) − P_Gibbs(y* = 1)| over a grid of test inputs)."""
    start = time.perf_counter()
    num_points, num_chains, num_sweeps, grid_size = SIZES[smoke]
    data_key, test_key, fit_key, gibbs_key = jax.random.split(key, 4)
    X, y = make_data(data_key, num_points)
    X_test, y_test = make_data(test_key, NUM_TEST)
    result = aaci.fit(X, y, key=fit_key, likelihood=Logistic(), kernel=KERNEL, num_steps=CAVI_STEPS)
    axis_values = jnp.linspace(-HALF_WIDTH, HALF_WIDTH, grid_size)
    grid = jnp.stack(jnp.meshgrid(axis_values, axis_values), axis=-1).reshape(-1, 2)
    probability = result.class_probability(grid)
    chain_probabilities = gibbs_class_probability(X, y, grid, gibbs_key, num_chains, num_sweeps)
    difference = probability - jnp.mean(chain_probabilities, axis=0)
    monte_carlo_error = jnp.std(chain_probabilities, axis=0, ddof=1) / math.sqrt(num_chains)
    accuracy = jnp.mean((result.class_probability(X_test) > 0.5) == (y_test == 1.0))
    bayes_accuracy = jnp.mean((latent(X_test) > 0.0) == (y_test == 1.0))
    path = pathlib.Path(out_dir) / f"{NAME}.png"
    plot(path, X, y, axis_values, probability, difference)
    return {
        "method": "AACI (CAVI)",
        "problem": f"logistic GP classification (D=2, N={num_points}), {CAVI_STEPS} CAVI steps",
        "metric": "mean |ΔP(y=1)|",
        "value": float(jnp.mean(jnp.abs(difference))),
        "reference": f"0 vs Gibbs ({num_chains}×{num_sweeps} sweeps, MC sd {float(jnp.mean(monte_carlo_error)):.4f}) "
        f"on a {grid_size}² grid; test accuracy {float(accuracy):.3f} (Bayes {float(bayes_accuracy):.3f})",
        "seconds": time.perf_counter() - start,
        "png": str(path),
    }


def main():
    row = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(row)


if __name__ == "__main__":
    main()
