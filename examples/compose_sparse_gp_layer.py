"""A sparse GP as a layer of an Equinox model, trained end to end with optax.

Claim: gpcompose's sparse posterior is an ordinary
differentiable JAX function, so it can sit on top of a learned feature map inside an
`eqx.Module` and be trained with `optax` like any other layer; gradients of the collapsed
Titsias ELBO (`sparse.condition` → `sparse.elbo`) reach the MLP's weights, the inducing
inputs and the kernel and noise hyperparameters (`tests/test_example_compose_sparse_gp_layer.py`
checks that they are finite, non-zero and equal to finite differences, and that Adam steps
decrease the loss).

Model ("deep kernel learning" with SGPR): features h = g_θ(x) from a small MLP `eqx.nn.MLP`
(5 → 1), and y | h ~ SGPR with an SE kernel on h, M inducing inputs Z in feature space and a
Gaussian noise variance. The loss is −ELBO/N,

    ELBO = log N(y; 0, Q + σ²I) − ½ Tr(K − Q)/σ²,   Q = K_hZ K_ZZ⁻¹ K_Zh   (Titsias 2009),

and Adam updates θ, Z, the kernel's lengthscale and variance and σ² together (the positive
ones through their unconstrained `Positive` coordinates). Data: x ~ N(0, I₅) and
y = sin(2t) + 0.5 t + ε with t = wᵀx a fixed unit direction, so a GP on the raw 5-D inputs
sees a function of all five coordinates while the right feature is one-dimensional. The same
model with the identity feature map (`eqx.nn.Identity`, an ARD kernel on x) is the baseline.

Run with `python examples/compose_sparse_gp_layer.py`. Prints the test RMSE of both models
and writes `examples/compose_sparse_gp_layer.png` (loss curves, the learned feature against t,
and the predictions against t).
"""

import pathlib

import equinox as eqx
import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import optax  # noqa: E402
from jaxtyping import Array, Float, PRNGKeyArray  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import kernels, means, sparse  # noqa: E402
from gpcompose.parameters import Positive  # noqa: E402

INPUT_DIMENSION = 5
NOISE_SD = 0.1


def latent(projection):
    return jnp.sin(2.0 * projection) + 0.5 * projection


def make_data(key, num_points):
    """(X, y, t): x ~ N(0, I₅), t = wᵀx along a fixed unit direction w, y = latent(t) + 0.1 ε."""
    direction = jnp.arange(1.0, INPUT_DIMENSION + 1.0)
    direction = direction / jnp.linalg.norm(direction)
    input_key, noise_key = jax.random.split(key)
    X = jax.random.normal(input_key, (num_points, INPUT_DIMENSION))
    projection = X @ direction
    return X, latent(projection) + NOISE_SD * jax.random.normal(noise_key, (num_points,)), projection


class SparseGPModel(eqx.Module):
    """y | x ~ SGPR on the features g(x): `feature_map` (any Equinox module mapping one input to a
    feature vector), SE `kernel` on the features, `inducing_inputs` Z in feature space, `noise`
    variance. Every inexact array leaf is trained."""

    feature_map: eqx.Module
    kernel: kernels.SquaredExponential
    inducing_inputs: Float[Array, "M F"]
    noise: Positive

    def posterior(self, X: Float[Array, "N D"], y: Float[Array, " N"]) -> sparse.SparsePosterior:
        features = jax.vmap(self.feature_map)(X)
        return sparse.condition(self.kernel, means.Zero(), features, y, self.noise, self.inducing_inputs)

    def predict(self, X, y, X_new) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Latent predictive mean and variance at `X_new` given the training data (X, y)."""
        return sparse.predict(self.posterior(X, y), jax.vmap(self.feature_map)(X_new))


def deep_model(key: PRNGKeyArray, num_inducing: int) -> SparseGPModel:
    """An MLP feature map 5 → 1 (two hidden layers of 32 tanh units) under the SGPR layer, with Z
    spread over the range of the initial features."""
    feature_map = eqx.nn.MLP(INPUT_DIMENSION, 1, width_size=32, depth=2, activation=jnp.tanh, key=key)
    return SparseGPModel(
        feature_map,
        kernels.SquaredExponential(lengthscale=jnp.ones(1), variance=1.0),
        jnp.linspace(-1.0, 1.0, num_inducing)[:, None],
        Positive(0.1),
    )


def baseline_model(key: PRNGKeyArray, num_inducing: int) -> SparseGPModel:
    """The identity feature map: an ARD SE kernel on the raw inputs, Z drawn like the inputs."""
    return SparseGPModel(
        eqx.nn.Identity(),
        kernels.SquaredExponential(lengthscale=jnp.ones(INPUT_DIMENSION), variance=1.0),
        jax.random.normal(key, (num_inducing, INPUT_DIMENSION)),
        Positive(0.1),
    )


def loss(model: SparseGPModel, X, y) -> Float[Array, ""]:
    """−ELBO/N of the sparse GP on the model's features."""
    return -sparse.elbo(model.posterior(X, y)) / y.shape[0]


@eqx.filter_jit
def train_step(model, optimizer_state, X, y, optimizer):
    """One optax step on every inexact array leaf of `model`. **Returns:** (model, state, loss)."""
    value, gradient = eqx.filter_value_and_grad(loss)(model, X, y)
    with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 step counts and floats
        updates, optimizer_state = optimizer.update(gradient, optimizer_state, eqx.filter(model, eqx.is_inexact_array))
    return eqx.apply_updates(model, updates), optimizer_state, value


def train(model, X, y, num_steps, learning_rate=1e-2):
    """`num_steps` Adam steps. **Returns:** (trained model, loss before each step)."""
    optimizer = optax.adam(learning_rate)
    optimizer_state = optimizer.init(eqx.filter(model, eqx.is_inexact_array))
    losses = []
    for _ in range(num_steps):
        model, optimizer_state, value = train_step(model, optimizer_state, X, y, optimizer)
        losses.append(float(value))
    return model, jnp.asarray(losses)


def run(key, *, out_dir, smoke=False):
    """Train the deep and the baseline model; writes `compose_sparse_gp_layer.png` in `out_dir`.

    **Returns:** dict with the trained `deep` and `baseline` models, their `losses`, test `rmse`
    (of the latent mean against latent(t)) and the data.
    """
    num_train, num_test, num_inducing, num_steps = (40, 40, 6, 5) if smoke else (300, 500, 16, 400)
    train_key, test_key, deep_key, baseline_key = jax.random.split(key, 4)
    X, y, t = make_data(train_key, num_train)
    X_test, _, t_test = make_data(test_key, num_test)
    outcome = {"X": X, "y": y, "t": t, "X_test": X_test, "t_test": t_test, "losses": {}, "rmse": {}, "models": {}}
    for name, model in (
        ("deep", deep_model(deep_key, num_inducing)),
        ("baseline", baseline_model(baseline_key, num_inducing)),
    ):
        model, losses = train(model, X, y, num_steps)
        mean, _ = model.predict(X, y, X_test)
        outcome["models"][name] = model
        outcome["losses"][name] = losses
        outcome["rmse"][name] = jnp.sqrt(jnp.mean((mean - latent(t_test)) ** 2))
    plot(outcome, pathlib.Path(out_dir) / "compose_sparse_gp_layer.png")
    return outcome


def plot(outcome, path):
    deep = outcome["models"]["deep"]
    figure, (loss_axis, feature_axis, fit_axis) = plt.subplots(1, 3, figsize=(14, 3.8))
    for name, losses in outcome["losses"].items():
        loss_axis.plot(losses, label=f"{name} (test RMSE {float(outcome['rmse'][name]):.3f})")
    loss_axis.set_xlabel("Adam step")
    loss_axis.set_ylabel("−ELBO / N")
    loss_axis.legend(fontsize=8)
    features = jax.vmap(deep.feature_map)(outcome["X"])[:, 0]
    feature_axis.plot(outcome["t"], features, ".", markersize=3)
    feature_axis.plot(
        jnp.zeros_like(deep.inducing_inputs[:, 0]) + jnp.min(outcome["t"]),
        deep.inducing_inputs[:, 0],
        ">",
        color="C3",
        label="inducing inputs Z",
    )
    feature_axis.set_xlabel("t = wᵀx (true projection)")
    feature_axis.set_ylabel("learned feature g(x)")
    feature_axis.legend(fontsize=8)
    order = jnp.argsort(outcome["t_test"])
    t_test = outcome["t_test"][order]
    fit_axis.plot(outcome["t"], outcome["y"], ".", color="0.7", markersize=3, label="training data")
    fit_axis.plot(t_test, latent(t_test), "k--", linewidth=1, label="latent f(t)")
    for name, model in outcome["models"].items():
        mean, _ = model.predict(outcome["X"], outcome["y"], outcome["X_test"][order])
        fit_axis.plot(t_test, mean, ".", markersize=3, label=f"{name}: test mean")
    fit_axis.set_xlabel("t = wᵀx")
    fit_axis.legend(fontsize=8)
    figure.suptitle("SGPR on a learned feature map (MLP 5 → 1), trained end to end with optax")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main():
    outcome = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(f"{'model':<9} {'final −ELBO/N':>14} {'test RMSE':>10}")
    for name in ("deep", "baseline"):
        print(f"{name:<9} {float(outcome['losses'][name][-1]):>14.4f} {float(outcome['rmse'][name]):>10.4f}")
    print(f"noise sd {NOISE_SD}; wrote {pathlib.Path(__file__).with_suffix('.png')}")


if __name__ == "__main__":
    main()
