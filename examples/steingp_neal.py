"""Stein variational GP on Neal's regression with outliers: a bimodal hyperparameter posterior.

SteinGP (Pinder, Nemeth & Leslie) moves J particles over the GP hyperparameters (lengthscale ℓ,
signal variance α², noise variance σ²) by SVGD and predicts with the equally weighted mixture of
the particles' GP posteriors (model (a), conjugate). On Neal's problem the hyperparameter
posterior has two modes — a short lengthscale that chases the outliers and a long one that
treats them as noise — and the particles cover both. Data (Neal 1997, as in SteinGP §5.2):

    y = 0.3 + 0.4 x + 0.5 sin(2.7 x) + 1.1/(1 + x²) + ε,   x ~ N(0, 1),
    ε ~ N(0, 0.1²), or N(0, 1) with probability 0.05 (outliers),

200 points, the first 100 to train and the last 100 to test (0.4 x is Neal's original; the
SteinGP paper prints 0.3 x). Whether the ℓ-posterior is bimodal depends on where the outliers
fall: Neal's own draw is, but most draws give one mode near ℓ ≈ 0.9, so the example uses a
fixed draw with two modes, generated here. Ground truth: the
noise-free function at the test inputs for the RMSE, and the exact posterior marginal of ℓ by a
dense grid over the three hyperparameters for the histogram.

Run with `python examples/steingp_neal.py`. Writes `examples/steingp_neal.png` (data and the
mixture predictive mean ± 2 sd; histogram of the particles' lengthscales).
"""

import functools
import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import gp, means, steingp  # noqa: E402
from gpcompose.kernels import SquaredExponential  # noqa: E402
from gpcompose.likelihoods import Gaussian  # noqa: E402

NAME = "steingp_neal"
NUM_TRAIN = NUM_TEST = 100
OUTLIER_PROBABILITY = 0.05
DATA_SEED = 7  # the first data seed in 0–15 whose exact lengthscale posterior is bimodal (module docstring)
SHORT_MODE_BELOW = 0.4  # ℓ between the two modes of this draw (≈ 0.2 and ≈ 0.9), where the exact density is ≈ 0
# (full size, smoke size): particles J, SVGD steps (Adam, learning rate 0.05), grid sizes of the exact
# ℓ-marginal (log ℓ ∈ [log 0.1, log 3], log α², log σ²)
SIZES = {False: (20, 250, (50, 16, 12)), True: (4, 50, (20, 6, 5))}


def latent(x):
    """Neal's noise-free regression function."""
    return 0.3 + 0.4 * x + 0.5 * jnp.sin(2.7 * x) + 1.1 / (1.0 + x**2)


def make_data(key):
    """200 draws of (x, y) from Neal's model, split into the first 100 (train) and the last 100 (test)."""
    input_key, outlier_key, noise_key = jax.random.split(key, 3)
    num_points = NUM_TRAIN + NUM_TEST
    x = jax.random.normal(input_key, (num_points,))
    noise_sd = jnp.where(jax.random.uniform(outlier_key, (num_points,)) < OUTLIER_PROBABILITY, 1.0, 0.1)
    y = latent(x) + noise_sd * jax.random.normal(noise_key, (num_points,))
    return x[:NUM_TRAIN, None], y[:NUM_TRAIN], x[NUM_TRAIN:, None], y[NUM_TRAIN:]


@functools.partial(jax.jit, static_argnames=("num_signal", "num_noise"))
def exact_lengthscale_marginal(X, y, log_lengthscales, num_signal, num_noise):
    """The exact posterior density of log10 ℓ on `log_lengthscales` (natural logs), by a dense grid.

    The posterior of θ = (ℓ, α², σ²) is p(θ | y) ∝ N(y; 0, K_θ + σ²I) Π p(θ_i), with SteinGP's
    Gamma(1, 2) priors (`steingp.with_default_priors`); in log coordinates it gains the Jacobian
    Π θ_i. The log density is summed over grids of log α² ∈ [log 0.05, log 30] and
    log σ² ∈ [log 0.005, log 0.5] by log-sum-exp and normalised over log10 ℓ by the trapezoid rule.
    """
    kernel, likelihood = steingp.with_default_priors((SquaredExponential(), Gaussian()))
    priors = (kernel.lengthscale.prior, kernel.variance.prior, likelihood.variance.prior)
    grid = jnp.stack(
        jnp.meshgrid(
            log_lengthscales,
            jnp.linspace(jnp.log(0.05), jnp.log(30.0), num_signal),
            jnp.linspace(jnp.log(0.005), jnp.log(0.5), num_noise),
            indexing="ij",
        ),
        axis=-1,
    ).reshape(-1, 3)

    def log_posterior(log_theta):
        theta = jnp.exp(log_theta)
        posterior = gp.condition(
            SquaredExponential(lengthscale=theta[0], variance=theta[1]), means.Zero(), X, y, theta[2]
        )
        log_prior = sum(prior.log_prob(value) for prior, value in zip(priors, theta))
        return gp.log_marginal_likelihood(posterior) + log_prior + jnp.sum(log_theta)

    values = jax.lax.map(log_posterior, grid, batch_size=1024)
    log_marginal = jax.nn.logsumexp(values.reshape(log_lengthscales.shape[0], -1), axis=1)
    density = jnp.exp(log_marginal - jnp.max(log_marginal))
    return density / jnp.trapezoid(density, log_lengthscales / jnp.log(10.0))


def plot(path, X, y, X_test, y_test, result, lengthscales, log10_grid, exact_marginal):
    grid = jnp.linspace(-3.0, 3.0, 300)
    mean, variance = result.predict(grid[:, None])
    band = 2.0 * jnp.sqrt(variance)
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    axes[0].plot(X[:, 0], y, "k.", markersize=4, label="train")
    axes[0].plot(X_test[:, 0], y_test, ".", color="C3", markersize=4, label="test")
    axes[0].plot(grid, latent(grid), "k--", linewidth=1, label="noise-free f")
    axes[0].plot(grid, mean, color="C0", label="mixture mean")
    axes[0].fill_between(grid, mean - band, mean + band, color="C0", alpha=0.2, label="±2 sd (y)")
    axes[0].set_ylim(-2.0, 4.0)
    axes[0].set_xlabel("x")
    axes[0].legend(loc="upper left", fontsize=8)
    axes[0].set_title(f"SteinGP predictive, J = {lengthscales.shape[0]} particles")
    axes[1].hist(np.log10(lengthscales), bins=20, range=(-1.0, 0.5), density=True, color="C0", label="particles")
    axes[1].plot(log10_grid, exact_marginal, "k", label="exact posterior (grid)")
    axes[1].set_xlabel("log10 lengthscale ℓ")
    axes[1].set_ylabel("density")
    axes[1].legend(fontsize=8)
    axes[1].set_title("particles' lengthscales")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def run(key, *, out_dir: pathlib.Path, smoke: bool = False) -> dict:
    """SteinGP on Neal's data; writes `<out_dir>/steingp_neal.png` and returns the summary row
    (test RMSE of the mixture mean against the noise-free function); `key` drives SteinGP (the
    data are the fixed draw `DATA_SEED`)."""
    start = time.perf_counter()
    num_particles, num_steps, (num_lengthscales, num_signal, num_noise) = SIZES[smoke]
    X, y, X_test, y_test = make_data(jax.random.key(DATA_SEED))
    result = steingp.fit(
        X,
        y,
        key=key,
        kernel=SquaredExponential(),
        likelihood=Gaussian(),
        num_particles=num_particles,
        num_steps=num_steps,
    )
    mean, _ = result.predict(X_test)
    rmse = float(jnp.sqrt(jnp.mean((mean - latent(X_test[:, 0])) ** 2)))
    log_density = float(jnp.sum(result.log_predictive_density(X_test, y_test)))
    kernel, _ = result.components
    lengthscales = np.asarray(kernel.lengthscale.value)
    log_lengthscales = jnp.linspace(jnp.log(0.1), jnp.log(3.0), num_lengthscales)
    exact_marginal = exact_lengthscale_marginal(X, y, log_lengthscales, num_signal, num_noise)
    log10_grid = log_lengthscales / jnp.log(10.0)
    short = log10_grid < jnp.log10(SHORT_MODE_BELOW)
    exact_short_mass = jnp.trapezoid(jnp.where(short, exact_marginal, 0.0), log10_grid)
    num_short = int(np.sum(lengthscales < SHORT_MODE_BELOW))
    path = pathlib.Path(out_dir) / f"{NAME}.png"
    plot(path, X, y, X_test, y_test, result, lengthscales, log10_grid, exact_marginal)
    return {
        "method": "SteinGP",
        "problem": f"Neal's regression with outliers (D=1, N={NUM_TRAIN}), J={num_particles}, {num_steps} SVGD steps",
        "metric": "test RMSE",
        "value": rmse,
        "reference": f"noise-free f at {NUM_TEST} test inputs (noise sd 0.1); "
        f"summed test log predictive density {log_density:.1f}; particles with ℓ < {SHORT_MODE_BELOW}: "
        f"{num_short}/{num_particles} (exact posterior mass {float(exact_short_mass):.2f})",
        "seconds": time.perf_counter() - start,
        "png": str(path),
    }


def main():
    row = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(row)


if __name__ == "__main__":
    main()
