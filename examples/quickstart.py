"""Quickstart: exact and sparse GP regression on a 1-D toy, hyperparameters by ML-II.

Run with `python examples/quickstart.py`. Prints both fits and writes `examples/quickstart.png`.
"""

import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import gp, kernels, means, priors, sparse  # noqa: E402
from gpcompose.parameters import Positive  # noqa: E402


def latent(x):
    return jnp.sin(3.0 * x) + 0.3 * x


def make_data(key, num_points=300):
    input_key, noise_key = jax.random.split(key)
    X = jnp.sort(jax.random.uniform(input_key, (num_points, 1), minval=-3.0, maxval=3.0), axis=0)
    y = latent(X[:, 0]) + 0.2 * jax.random.normal(noise_key, (num_points,))
    return X, y


def exact_objective(params, data):
    X, y = data
    posterior = gp.condition(params["kernel"], params["mean"], X, y, params["noise"])
    return gp.log_marginal_likelihood(posterior)


def sparse_objective(params, data):
    X, y, Z = data
    posterior = sparse.condition(params["kernel"], params["mean"], X, y, params["noise"], Z)
    return sparse.elbo(posterior)


def run(key, *, out_dir, smoke=False):
    """Fits both models to 300 points (60 with `smoke`), prints a table and writes
    `<out_dir>/quickstart.png`. **Returns:** {"exact": RMSE, "sparse": RMSE} of the posterior
    means against the latent function on [−3, 3]."""
    X, y = make_data(key, 60 if smoke else 300)
    Z = jnp.linspace(-3.0, 3.0, 15)[:, None]
    initial = {
        "kernel": kernels.Matern52(lengthscale=Positive(1.0, prior=priors.Gamma(2.0, 1.0)), variance=1.0),
        "mean": means.Constant(0.0),
        "noise": Positive(0.5),
    }

    start = time.perf_counter()
    exact_fit = gpcompose.maximize(exact_objective, initial, (X, y))
    exact_seconds = time.perf_counter() - start
    start = time.perf_counter()
    sparse_fit = gpcompose.maximize(sparse_objective, initial, (X, y, Z))
    sparse_seconds = time.perf_counter() - start

    exact = gp.condition(exact_fit.params["kernel"], exact_fit.params["mean"], X, y, exact_fit.params["noise"])
    approximate = sparse.condition(
        sparse_fit.params["kernel"], sparse_fit.params["mean"], X, y, sparse_fit.params["noise"], Z
    )
    grid = jnp.linspace(-3.5, 3.5, 400)[:, None]

    print("objective = log marginal likelihood (exact) or ELBO (sparse) + log prior; RMSE on [-3, 3]")
    print(
        f"{'model':<8} {'objective':>12} {'lengthscale':>12} {'variance':>9} {'noise sd':>9} {'RMSE':>7} {'fit (s)':>8}"
    )
    panels = []
    errors = {}
    for name, fit, seconds, posterior, predict in (
        ("exact", exact_fit, exact_seconds, exact, gp.predict),
        ("sparse", sparse_fit, sparse_seconds, approximate, sparse.predict),
    ):
        mean, variance = predict(posterior, grid)
        inside = jnp.abs(grid[:, 0]) <= 3.0
        squared_errors = jnp.where(inside, (mean - latent(grid[:, 0])) ** 2, 0.0)
        rmse = jnp.sqrt(jnp.sum(squared_errors) / jnp.sum(inside, dtype=mean.dtype))
        kernel = fit.params["kernel"]
        print(
            f"{name:<8} {float(fit.value):>12.3f} {float(kernel.lengthscale.value):>12.3f} "
            f"{float(kernel.variance.value):>9.3f} {float(jnp.sqrt(fit.params['noise'].value)):>9.3f} "
            f"{float(rmse):>7.4f} {seconds:>8.2f}"
        )
        panels.append((name, mean, variance))
        errors[name] = float(rmse)

    figure, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for axis, (name, mean, variance) in zip(axes, panels):
        band = 2.0 * jnp.sqrt(variance)
        axis.plot(X[:, 0], y, ".", color="0.7", markersize=3, label="data")
        axis.plot(grid[:, 0], latent(grid[:, 0]), "k--", linewidth=1, label="latent f")
        axis.plot(grid[:, 0], mean, color="C0", label="posterior mean")
        axis.fill_between(grid[:, 0], mean - band, mean + band, color="C0", alpha=0.25, label="±2 sd (latent)")
        if name == "sparse":
            axis.plot(Z[:, 0], jnp.full(Z.shape[0], -2.4), "^", color="C3", label="inducing inputs")
        axis.set_title(f"{name} GP (N = {X.shape[0]})")
        axis.set_xlabel("x")
    axes[0].legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    output = pathlib.Path(out_dir) / "quickstart.png"
    figure.savefig(output, dpi=120)
    plt.close(figure)
    print(f"wrote {output}")
    return errors


def main():
    run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)


if __name__ == "__main__":
    main()
