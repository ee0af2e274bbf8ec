"""Convergence speed of AACI SVI against black-box SVGP (AACI document §5.3, Fig. 3): test NLL and
test RMSE (regression) or error rate (classification) against training wall time.

Every method fits the same sparse GP: SE-ARD kernel (variance 1, every lengthscale initialised at
√(mean pairwise squared distance) of the training inputs, as in the document's code), zero mean,
M = `--num-inducing` (200) inducing inputs Z from k-means (k-means++ seeding and 20 Lloyd steps;
the helpers of `gpcompose.svbmc`), Z fixed, minibatches of `--batch-size` (100) indices drawn
independently and uniformly (with replacement, as GPJax's `fit` and `gpcompose.aaci.SVI`; the same
`jax.random.randint` sequence in every method), q over the whitened inducing
values v (u = L_K v), and Adam (`--learning-rate`, 0.01) on every trainable hyperparameter (kernel
variance and lengthscales, the likelihood's scale; Student-t ν = 3 is fixed) after each variational update:

1. **AACI SVI**: `gpcompose.aaci.SVI` (document Alg. 3): natural step η ← (1 − ρ_t) η + ρ_t η̂(ω̄)
   with ρ_t = (t + 100)^−0.51 (`decaying_step_size`), then Adam on the minibatch augmented ELBO.
2. **SVGP-Adam** (Hensman et al. 2015): q(v) = N(m, L Lᵀ), L lower triangular (its diagonal
   unconstrained, as GPflow's `q_sqrt`), m = 0 and L = I at the start, optimised jointly with the
   hyperparameters by one Adam on the minibatch standard ELBO
   (N/|B|) Σ_B E_q log p(y_i | f_i) − KL[q(v) ‖ N(0, I)], the expectations by 20-node Gauss–Hermite
   (`gpcompose.likelihoods`' default Gaussian rule; GPflow's default).
3. **SVGP-NatGrad** (Salimbeni et al. 2018): q(v) in natural parameters θ = (S⁻¹m, −½S⁻¹); a step
   θ ← θ + γ_t ∇_μ L where μ = (m, S + m mᵀ) are the expectation parameters (the natural gradient
   of L in θ is its ordinary gradient in μ; computed by `jax.grad` through S = μ₂ − μ₁μ₁ᵀ), same
   standard ELBO, then Adam on the hyperparameters. γ follows GPflow's schedule as the document's code
   used it: γ₀ = 1e-5, ×10^0.1 per step up to 0.1, and ×1e-3 (step rejected) when S⁻¹ stops being
   positive definite.
4. **GPJax SVGP-Adam** (`_gpjax_svgp.py`, Student-t problems only): GPJax's own
   `WhitenedVariationalGaussian` and `gpjax.objectives.elbo`, trained like 2. from the same start,
   Z and the same minibatches; read back into gpcompose's model for the test metrics.

Timing: each method's step is jitted once (compiled and warmed before timing), steps run in chunks
under one `lax.fori_loop`, the clock stops at `block_until_ready`, and the test metrics are computed
at the checkpoints outside the timed region (log-spaced plus evenly spaced step counts). Test NLL is
−mean log p(y* | data) (`gpcompose.aaci.log_predictive_density`: the likelihood's quadrature of
∫ p(y* | f) q(f*) df, class probabilities for the logistic), RMSE of the predictive mean in
standardised units, error rate of sign(E f*).

Speed-up against a baseline b: the time b takes to first reach its own final test NLL divided by the
time AACI SVI takes to first reach that NLL (at the checkpoints; "not reached" if never).

Problems: `casp` (uci/protein.csv, N = 45 730, D = 9, Student-t ν = 3, σ₀ = 1; inputs and outputs
standardised with training statistics) and `banana` (classification/banana_full.csv, N = 5300, D = 2,
logistic, labels {0, 1} → {−1, 1}), each split 90/10 at random (`--seed`); `casp_laplace` (b₀ = 1)
and `casp_matern32` (ρ₀ = 1) fit the same CASP split with the Laplace and Matérn-3/2 likelihoods
(their scales trained too; k-means seeded by the problem name's length, so their Z differ).
`--quick` uses 600 rows of each, M = 20 and 30 steps per method. The script sets
OPENBLAS_NUM_THREADS=1 unless it is set (see the comment at the imports).
"""

import argparse
import os
import platform
import sys
import time

# Multithreaded OpenBLAS (behind numpy's and XLA's CPU LAPACK calls) spins on an oversubscribed
# machine: a 200 × 200 Cholesky took 220 ms at load 10 on 2 cores, 1.2 ms with one thread.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from _common import add_aaci_dirs, agg_pyplot, save_figure, strong_types, utc_timestamp, write_json  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose.aaci import SVI, AACIState, NaturalGaussian  # noqa: E402
from gpcompose.parameters import Fixed, log_prior, partition  # noqa: E402

METHODS = ("aaci_svi", "svgp_adam", "svgp_natgrad", "gpjax_svgp_adam")
LABELS = {
    "aaci_svi": "AACI SVI",
    "svgp_adam": "SVGP-Adam",
    "svgp_natgrad": "SVGP-NatGrad",
    "gpjax_svgp_adam": "GPJax SVGP-Adam",
}
BASELINES = ("svgp_adam", "svgp_natgrad", "gpjax_svgp_adam")
PROBLEMS = {
    "casp": ("uci/protein.csv", "student_t"),
    "banana": ("classification/banana_full.csv", "logistic"),
    "casp_laplace": ("uci/protein.csv", "laplace"),
    "casp_matern32": ("uci/protein.csv", "matern32"),
}
LIKELIHOODS = {
    "student_t": lambda: gpcompose.likelihoods.StudentT(Fixed(3.0), 1.0),
    "laplace": lambda: gpcompose.likelihoods.Laplace(1.0),
    "matern32": lambda: gpcompose.likelihoods.Matern32Likelihood(1.0),
    "logistic": gpcompose.likelihoods.Logistic,
    "gaussian": lambda: gpcompose.likelihoods.Gaussian(variance=1.0),  # steingp_large.py's SVGP baseline
}


def load(data_dir, problem, max_points, seed):
    """Random 90/10 split (seed) of the first-shuffled `max_points` rows; X standardised with the
    training statistics, y too for regression (labels stay {0, 1} for classification)."""
    path, likelihood_name = PROBLEMS[problem]
    data = np.loadtxt(os.path.join(data_dir, path), delimiter=",", skiprows=1, ndmin=2)
    order = np.random.default_rng(seed).permutation(data.shape[0])
    if max_points is not None:
        order = order[:max_points]
    split = int(0.9 * len(order))
    train, test = data[order[:split]], data[order[split:]]
    X_mean, X_std = train[:, :-1].mean(0), train[:, :-1].std(0)
    X_std = np.where(X_std > 0, X_std, 1.0)
    X, X_test = (train[:, :-1] - X_mean) / X_std, (test[:, :-1] - X_mean) / X_std
    y, y_test = train[:, -1], test[:, -1]
    if likelihood_name != "logistic":
        y_mean, y_std = y.mean(), y.std()
        y, y_test = (y - y_mean) / y_std, (y_test - y_mean) / y_std
    return tuple(jnp.asarray(array) for array in (X, y, X_test, y_test))


def kmeans(key, X, num_centers, num_iterations=20):
    """k-means++ seeding then Lloyd iterations on all rows of `X` (`gpcompose.sparse.kmeans`)."""
    return gpcompose.sparse.kmeans(key, X, num_centers, num_iterations=num_iterations)


def initial_model(X, likelihood_name, key):
    """(kernel, likelihood, mean) shared by every method."""
    subset = X[jax.random.choice(key, X.shape[0], (min(2000, X.shape[0]),), replace=False)]
    squared = jnp.sum((subset[:, None, :] - subset[None, :, :]) ** 2, axis=-1)
    lengthscale = jnp.sqrt(jnp.mean(squared)) * jnp.ones((X.shape[1],), X.dtype)
    kernel = gpcompose.kernels.SquaredExponential(lengthscale, 1.0)
    return kernel, LIKELIHOODS[likelihood_name](), gpcompose.means.Zero()


def minibatch(key, X, y, batch_size):
    batch = jax.random.randint(key, (batch_size,), 0, X.shape[0])  # the indices of `SVI.step`
    return X[batch], y[batch]


def whitened_marginals(model, Z, X, mean, covariance_factor):
    """q(f_i) moments with v ~ N(m, L Lᵀ) the whitened inducing values (u = μ₀(Z) + chol(K_ZZ) v):
    μ₀(x_i) + A_i m and k_ii − ‖A_i‖² + ‖A_i L‖², A = K_XZ chol(K_ZZ)⁻ᵀ (Titsias 2009; Hensman et al. 2015)."""
    kernel, _, prior_mean = model
    gram = kernel.gram(Z)
    jitter = 1e-10 * jnp.mean(jnp.diagonal(gram))  # gpcompose's first jitter for float64
    lower = jnp.linalg.cholesky(gram + jitter * jnp.eye(Z.shape[0], dtype=gram.dtype))
    projection = jax.scipy.linalg.solve_triangular(lower, kernel.cross(Z, X), lower=True).T
    residual_variance = jnp.maximum(kernel.diagonal(X) - jnp.sum(projection**2, axis=1), 0.0)
    f_mean = prior_mean(X) + projection @ mean
    f_variance = residual_variance + jnp.sum((projection @ covariance_factor) ** 2, axis=1)
    return f_mean, f_variance


def standard_elbo(model, Z, X, y, scale, mean, covariance_factor):
    """(N/|B|) Σ_B E_q log p(y_i | f_i) − KL[N(m, L Lᵀ) ‖ N(0, I)], E_q by the likelihood's
    `expected_log_prob` (Gauss–Hermite); KL = ½ (‖L‖²_F + mᵀm − M − 2 Σ log |L_jj|)."""
    likelihood = model[1]
    f_mean, f_variance = whitened_marginals(model, Z, X, mean, covariance_factor)
    expected = likelihood.expected_log_prob(y, f_mean, f_variance)
    diagonal = jnp.diagonal(covariance_factor)
    kl = 0.5 * (
        jnp.sum(covariance_factor**2) + jnp.sum(mean**2) - mean.shape[0] - 2 * jnp.sum(jnp.log(jnp.abs(diagonal)))
    )
    return scale * jnp.sum(expected) - kl


def natural_from_moments(mean, factor):
    """N(m, L Lᵀ) in natural parameters (S⁻¹m, −½S⁻¹), for the test metrics of the SVGP baselines."""
    precision = jnp.linalg.inv(factor @ factor.T)
    return NaturalGaussian(precision @ mean, -0.5 * precision)


class SVGPState(eqx.Module):
    """Variational parameters (method-specific pair), trainable hyperparameters, Adam state,
    the NatGrad step size γ and the step count."""

    variational: tuple
    trainable: eqx.Module
    optimizer_state: optax.OptState
    gamma: jax.Array
    num_steps: jax.Array


def svgp_adam(model, Z, X, y, batch_size, learning_rate):
    """(init, step, to_natural) of SVGP trained by one Adam on (m, L, hyperparameters)."""
    trainable, rest = partition(model)
    optimizer = optax.adam(learning_rate)
    scale = X.shape[0] / batch_size
    size = Z.shape[0]

    def init():
        variational = (jnp.zeros((size,), Z.dtype), jnp.eye(size, dtype=Z.dtype))
        optimizer_state = optimizer.init((variational, strong_types(trainable)))
        state = SVGPState(variational, trainable, optimizer_state, jnp.zeros((), Z.dtype), jnp.zeros((), jnp.int32))
        return strong_types(state)

    def step(state, key, X, y):
        X_batch, y_batch = minibatch(key, X, y, batch_size)

        def loss(parameters):
            (mean, factor), trainable = parameters
            current = eqx.combine(trainable, rest)
            elbo = standard_elbo(current, Z, X_batch, y_batch, scale, mean, jnp.tril(factor))
            return -(elbo + log_prior(current))

        parameters = (state.variational, state.trainable)
        gradient = jax.grad(loss)(parameters)
        with jax.numpy_dtype_promotion("standard"):
            updates, optimizer_state = optimizer.update(gradient, state.optimizer_state, parameters)
            variational, trainable = optax.apply_updates(parameters, updates)
        return SVGPState(variational, trainable, optimizer_state, state.gamma, state.num_steps + 1)

    def to_natural(state):
        mean, factor = state.variational
        return natural_from_moments(mean, jnp.tril(factor)), eqx.combine(state.trainable, rest)

    return init, step, to_natural


def svgp_natgrad(model, Z, X, y, batch_size, learning_rate, gamma_start=1e-5, gamma_max=0.1):
    """(init, step, to_natural) of SVGP with natural-gradient steps on q(v) and Adam on the hyperparameters."""
    trainable, rest = partition(model)
    optimizer = optax.adam(learning_rate)
    scale = X.shape[0] / batch_size
    size = Z.shape[0]
    eye = jnp.eye(size, dtype=Z.dtype)

    def moments(natural):
        linear, quadratic = natural
        precision_factor = jnp.linalg.cholesky(-2 * quadratic)
        inverse_factor = jax.scipy.linalg.solve_triangular(precision_factor, eye, lower=True)
        covariance = inverse_factor.T @ inverse_factor
        return covariance @ linear, covariance, jnp.all(jnp.isfinite(precision_factor))

    def init():
        natural = (jnp.zeros((size,), Z.dtype), -0.5 * eye)
        state = SVGPState(
            natural,
            trainable,
            optimizer.init(strong_types(trainable)),
            jnp.asarray(gamma_start, Z.dtype),
            jnp.zeros((), jnp.int32),
        )
        return strong_types(state)

    def step(state, key, X, y):
        X_batch, y_batch = minibatch(key, X, y, batch_size)
        current = eqx.combine(state.trainable, rest)
        mean, covariance, _ = moments(state.variational)

        def elbo_of_expectation(first, second):
            covariance = second - jnp.outer(first, first)
            factor = jnp.linalg.cholesky(0.5 * (covariance + covariance.T))
            return standard_elbo(current, Z, X_batch, y_batch, scale, first, factor)

        first, second = jax.grad(elbo_of_expectation, argnums=(0, 1))(mean, covariance + jnp.outer(mean, mean))
        second = 0.5 * (second + second.T)
        linear, quadratic = state.variational
        proposal = (linear + state.gamma * first, quadratic + state.gamma * second)
        new_mean, new_covariance, valid = moments(proposal)
        valid = valid & jnp.all(jnp.isfinite(new_mean))
        natural = jax.tree.map(lambda new, old: jnp.where(valid, new, old), proposal, state.variational)
        gamma = jnp.where(valid, jnp.minimum(state.gamma * 10**0.1, gamma_max), state.gamma * 1e-3)
        new_mean, new_covariance, _ = moments(natural)
        factor = jnp.linalg.cholesky(new_covariance)

        def loss(trainable):
            model = eqx.combine(trainable, rest)
            return -(standard_elbo(model, Z, X_batch, y_batch, scale, new_mean, factor) + log_prior(model))

        gradient = jax.grad(loss)(state.trainable)
        with jax.numpy_dtype_promotion("standard"):
            updates, optimizer_state = optimizer.update(gradient, state.optimizer_state, state.trainable)
            trainable_new = optax.apply_updates(state.trainable, updates)
        return SVGPState(natural, trainable_new, optimizer_state, gamma, state.num_steps + 1)

    def to_natural(state):
        return NaturalGaussian(*state.variational), eqx.combine(state.trainable, rest)

    return init, step, to_natural


def aaci_svi(model, Z, X, y, batch_size, learning_rate):
    """(init, step, to_natural) of `gpcompose.aaci.SVI`."""
    kernel, likelihood, mean = model
    algorithm = SVI(kernel, likelihood, mean, optax.adam(learning_rate), batch_size)

    def step(state, key, X, y):
        return algorithm.step(state, key, X, y)[0]

    def to_natural(state):
        return state.variational, (state.kernel, state.likelihood, state.mean)

    return lambda: algorithm.init(Z), step, to_natural


def gpjax_svgp_adam(model, Z, X, y, batch_size, learning_rate):
    """(init, step, to_natural) of GPJax's SVGP with Adam (`_gpjax_svgp.py`; imported here so that the
    other methods run without GPJax)."""
    from _gpjax_svgp import gpjax_svgp_adam as build

    return build(model, Z, X, y, batch_size, learning_rate, minibatch, natural_from_moments)


BUILDERS = {
    "aaci_svi": aaci_svi,
    "svgp_adam": svgp_adam,
    "svgp_natgrad": svgp_natgrad,
    "gpjax_svgp_adam": gpjax_svgp_adam,
}


@eqx.filter_jit
def test_metrics(natural, model, Z, X_test, y_test):
    """(test NLL, RMSE or error rate) of q(v) under `model`, through `gpcompose.aaci`'s predictions."""
    kernel, likelihood, mean = model
    state = AACIState(natural, kernel, likelihood, mean, Z, None, jnp.zeros((), jnp.int32))
    nll = -jnp.mean(gpcompose.aaci.log_predictive_density(state, X_test, y_test))
    f_mean, _ = gpcompose.aaci.predict(state, X_test)
    if isinstance(likelihood, gpcompose.likelihoods.Logistic):
        metric = jnp.mean((f_mean > 0) != (y_test > 0.5))
    else:
        metric = jnp.sqrt(jnp.mean((f_mean - y_test) ** 2))
    return nll, metric


def checkpoints(num_steps, num_log=30, num_linear=40):
    log_spaced = np.unique(np.round(np.geomspace(1, num_steps, num_log)).astype(int))
    linear = np.round(np.linspace(0, num_steps, num_linear + 1)).astype(int)[1:]
    return [int(value) for value in np.unique(np.concatenate([log_spaced, linear]))]


def run_method(name, model, Z, X, y, X_test, y_test, args, num_steps, key):
    init, step, to_natural = BUILDERS[name](model, Z, X, y, args.batch_size, args.learning_rate)

    @eqx.filter_jit
    def advance(state, start, count, X, y):
        # the data are arguments, not constants folded into the compiled program
        def body(index, state):
            return step(state, jax.random.fold_in(key, start + index), X, y)

        return jax.lax.fori_loop(0, count, body, state)

    state = init()
    compile_start = time.perf_counter()
    jax.block_until_ready(advance(state, jnp.asarray(0), jnp.asarray(1), X, y))  # compile and warm, result dropped
    compile_seconds = time.perf_counter() - compile_start

    def evaluate(state):
        natural, current = to_natural(state)
        nll, metric = test_metrics(natural, current, Z, X_test, y_test)
        return float(nll), float(metric)

    nll, metric = evaluate(state)
    curve = [{"step": 0, "seconds": 0.0, "nll": nll, "metric": metric}]
    elapsed, done = 0.0, 0
    for target in checkpoints(num_steps):
        start = time.perf_counter()
        state = advance(state, jnp.asarray(done), jnp.asarray(target - done), X, y)
        jax.block_until_ready(state)
        elapsed += time.perf_counter() - start
        done = target
        nll, metric = evaluate(state)
        curve.append({"step": done, "seconds": elapsed, "nll": nll, "metric": metric})
    _, current = to_natural(state)
    hyperparameters = {
        "lengthscale": np.asarray(current[0].lengthscale.value).tolist(),
        "variance": float(current[0].variance.value),
    }
    if hasattr(current[1], "scale"):
        hyperparameters["likelihood_scale"] = float(current[1].scale.value)
    return {
        "num_steps": num_steps,
        "compile_seconds": compile_seconds,
        "train_seconds": elapsed,
        "seconds_per_step": elapsed / num_steps,
        "curve": curve,
        "final_nll": curve[-1]["nll"],
        "final_metric": curve[-1]["metric"],
        "hyperparameters": hyperparameters,
    }


def time_to_reach(curve, target):
    """Training seconds at the first checkpoint with test NLL ≤ target, or None."""
    for point in curve:
        if point["nll"] <= target:
            return point["seconds"]
    return None


def speed_ups(methods):
    """For each baseline b: t_b(NLL_b final) / t_AACI(NLL_b final), and every method's time to NLL_b."""
    summary = {}
    for baseline in BASELINES:
        if baseline not in methods or "aaci_svi" not in methods:
            continue
        target = methods[baseline]["final_nll"]
        times = {name: time_to_reach(result["curve"], target) for name, result in methods.items()}
        ratio = None
        if times["aaci_svi"] is not None and times["aaci_svi"] > 0:
            ratio = times[baseline] / times["aaci_svi"]
        summary[baseline] = {"target_nll": target, "time_to_target": times, "speed_up": ratio}
    return summary


def plot(results, path):
    """Test NLL and RMSE / error rate against training wall time, one column per problem (document Fig. 3)."""
    plt = agg_pyplot()
    problems = list(results["problems"])
    figure, axes = plt.subplots(2, len(problems), figsize=(6 * len(problems), 7), squeeze=False)
    for column, problem in enumerate(problems):
        entry = results["problems"][problem]
        for name, result in entry["methods"].items():
            curve = [point for point in result["curve"] if point["seconds"] > 0]
            seconds = [point["seconds"] for point in curve]
            axes[0, column].plot(seconds, [point["nll"] for point in curve], label=LABELS[name])
            axes[1, column].plot(seconds, [point["metric"] for point in curve], label=LABELS[name])
        if "svgp_adam" in entry["speed_up"]:
            axes[0, column].axhline(entry["speed_up"]["svgp_adam"]["target_nll"], color="grey", ls=":", lw=1)
        axes[0, column].set_title(f"{problem} ({entry['likelihood']}, N = {entry['num_train']})")
        axes[1, column].set_xlabel("training wall time [s]")
        for axis in axes[:, column]:
            axis.set_xscale("log")
            axis.legend()
        axes[1, column].set_ylabel("test error rate" if entry["likelihood"] == "logistic" else "test RMSE (std. units)")
        axes[0, column].set_ylabel("test NLL")
    save_figure(figure, path)


def format_seconds(value):
    return "not reached" if value is None else f"{value:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_aaci_dirs(parser)
    parser.add_argument("--problems", default="casp,banana")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--max-points", type=int, default=None, help="use this many (shuffled) rows of each data set")
    parser.add_argument("--num-inducing", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--steps-aaci", type=int, default=2000)
    parser.add_argument("--steps-adam", type=int, default=6000)
    parser.add_argument("--steps-natgrad", type=int, default=2000)
    parser.add_argument("--steps-gpjax", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-name", default="aaci_convergence")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.max_points, args.num_inducing = 600, 20
        args.steps_aaci = args.steps_adam = args.steps_natgrad = args.steps_gpjax = 30
    steps = {
        "aaci_svi": args.steps_aaci,
        "svgp_adam": args.steps_adam,
        "svgp_natgrad": args.steps_natgrad,
        "gpjax_svgp_adam": args.steps_gpjax,
    }
    results = {
        "args": vars(args),
        "command": " ".join(["python"] + sys.argv),
        "date": utc_timestamp("seconds"),
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": os.cpu_count()},
        "jax": jax.__version__,
        "load_before": os.getloadavg(),
        "problems": {},
    }
    start = time.perf_counter()
    key = jax.random.key(args.seed)
    for problem in args.problems.split(","):
        X, y, X_test, y_test = load(args.data_dir, problem, args.max_points, args.seed)
        model_key, kmeans_key, run_key = jax.random.split(jax.random.fold_in(key, len(problem)), 3)
        model = initial_model(X, PROBLEMS[problem][1], model_key)
        y = model[1].targets(y)  # {0, 1} → {−1, 1} for the logistic; unchanged otherwise
        kmeans_start = time.perf_counter()
        Z = jax.block_until_ready(kmeans(kmeans_key, X, args.num_inducing))
        entry = {
            "likelihood": PROBLEMS[problem][1],
            "num_train": int(X.shape[0]),
            "num_test": int(X_test.shape[0]),
            "dimension": int(X.shape[1]),
            "kmeans_seconds": time.perf_counter() - kmeans_start,
            "load_before": os.getloadavg(),
            "methods": {},
        }
        for name in args.methods.split(","):
            if name == "gpjax_svgp_adam" and entry["likelihood"] != "student_t":
                print(f"{problem}: no GPJax baseline (GPJax has no {entry['likelihood']} likelihood)", flush=True)
                continue
            entry["methods"][name] = run_method(
                name, model, Z, X, y, X_test, y_test, args, steps[name], jax.random.fold_in(run_key, 0)
            )
            result = entry["methods"][name]
            print(
                f"{problem} {name}: {result['num_steps']} steps in {result['train_seconds']:.1f} s "
                f"(compile {result['compile_seconds']:.1f} s), NLL {result['final_nll']:.4f}, "
                f"metric {result['final_metric']:.4f}",
                flush=True,
            )
        entry["speed_up"] = speed_ups(entry["methods"])
        entry["load_after"] = os.getloadavg()
        results["problems"][problem] = entry
    results["wall_seconds"] = time.perf_counter() - start
    results["load_after"] = os.getloadavg()
    json_path = os.path.join(args.output_dir, f"{args.output_name}.json")
    write_json(json_path, results)
    plot(results, json_path.replace(".json", ".png"))
    print("| problem | method | steps | s/step | final test NLL | final RMSE / error | time to Adam's final NLL [s] |")
    print("|---|---|---|---|---|---|---|")
    for problem, entry in results["problems"].items():
        adam = entry["speed_up"].get("svgp_adam", {"time_to_target": {}})
        for name, result in entry["methods"].items():
            print(
                f"| {problem} | {LABELS[name]} | {result['num_steps']} | {result['seconds_per_step'] * 1e3:.2f} ms | "
                f"{result['final_nll']:.4f} | {result['final_metric']:.4f} | "
                f"{format_seconds(adam['time_to_target'].get(name))} |"
            )
        for baseline, summary in entry["speed_up"].items():
            ratio = summary["speed_up"]
            print(
                f"{problem}: speed-up of AACI SVI against {LABELS[baseline]} at NLL {summary['target_nll']:.4f}: "
                + ("AACI never reaches it" if ratio is None else f"{ratio:.2f}×")
            )
    print(f"load average before {results['load_before']}, after {results['load_after']}")


if __name__ == "__main__":
    main()
