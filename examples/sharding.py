"""Beyond one device: multi-seed SteinGP runs and minibatched natural-gradient SVI, sharded with `jax.sharding`.

Claim: gpcompose needs no distribution layer of its own. Its
algorithms are pure JAX functions, so XLA's SPMD partitioner spreads them over devices from
the placement of their inputs, and the sharded run gives the single-device result.

1. *Multi-seed runs.* A whole SteinGP run (`gpcompose.steingp.SteinGP`: SVGD over the
   hyperparameters of a GP regression, driven by `gpcompose.run`) is a function of a PRNG key;
   `jax.jit(jax.vmap(run_from_seed))` runs one per key. With the keys placed by
   `jax.device_put(keys, NamedSharding(Mesh(jax.devices(), ("seeds",)), PartitionSpec("seeds")))`
   the jitted call follows its input's sharding: each device runs its share of the seeds, and
   the results come back sharded the same way. Seeds never interact, so the partitioned
   program has no communication and each seed's numbers are those of the one-device run.
2. *Data-parallel SVI.* `gpcompose.aaci.SVI` draws its minibatch B inside `step` from the
   step's key. With `batch_sharding=NamedSharding(mesh, PartitionSpec("data"))` the B rows
   are split over the devices: each computes its rows of K_BZ, the marginals of q(f), the
   local updates c² and ω̄, and its partial sums of η̂₁ = s Aᵀ(b − λμ₀) and
   η̂₂ = −½ I − ½ s Aᵀ diag(λ) A (Galy-Fajou, Wenzel & Opper 2020, Alg. 3 and App. A.4.4, as natural
   parameters with the N/|B| minibatch scaling of Hoffman et al. 2013); XLA adds
   the all-reduce of the sums, and the global update η ← (1 − ρ) η + ρ η̂ (and the optax
   step on the hyperparameters) is replicated. The same key draws the same minibatch, so the
   sharded run differs from the one-device run only in the order of the sums.

On a laptop `jax.devices()` holds one CPU device and both parts run unsharded. To see four
devices on one CPU, set XLA's flag before JAX starts:

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python examples/sharding.py

(`tests/test_sharding.py` does this in a subprocess and checks the equalities.)

Prints the largest difference between the sharded and the one-device results and writes
`examples/sharding.png`: each seed's SteinGP predictive mean coloured by the device that ran
it, and the SVI ELBO trace and class probability of both runs.
"""

import pathlib
import time

import jax

jax.config.update("jax_enable_x64", True)  # an application choice; gpcompose never sets it

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import gpcompose  # noqa: E402
from gpcompose import aaci, kernels, likelihoods, steingp  # noqa: E402

GRID = jnp.linspace(-3.0, 3.0, 200)[:, None]


def settings(smoke: bool) -> dict:
    """Problem sizes: the full example, or a smoke run of a few seconds."""
    if smoke:
        return dict(
            num_seeds=8,
            num_regression=12,
            num_particles=4,
            stein_steps=20,
            num_classification=64,
            batch_size=16,
            num_inducing=5,
            svi_steps=5,
        )
    return dict(
        num_seeds=16,
        num_regression=20,
        num_particles=8,
        stein_steps=100,
        num_classification=4000,
        batch_size=128,
        num_inducing=15,
        svi_steps=400,
    )


def seed_sharding(devices) -> NamedSharding:
    """The seeds' axis split over `devices`: device d holds seeds d·S/n, …, (d + 1)·S/n − 1."""
    return NamedSharding(Mesh(devices, ("seeds",)), PartitionSpec("seeds"))


def data_mesh(devices) -> Mesh:
    """A one-axis mesh named "data" over `devices`."""
    return Mesh(devices, ("data",))


def regression_latent(x):
    return jnp.sin(2.0 * x) + 0.2 * x


def classification_latent(x):
    return 3.0 * jnp.sin(1.5 * x)


def regression_data(key, num_points):
    input_key, noise_key = jax.random.split(key)
    X = jax.random.uniform(input_key, (num_points, 1), minval=-3.0, maxval=3.0)
    return X, regression_latent(X[:, 0]) + 0.2 * jax.random.normal(noise_key, (num_points,))


def classification_data(key, num_points):
    """Labels y ∈ {−1, 1} with P(y = 1 | x) = σ(f(x)), the logistic likelihood's model."""
    input_key, label_key = jax.random.split(key)
    X = jax.random.uniform(input_key, (num_points, 1), minval=-3.0, maxval=3.0)
    positive = jax.random.bernoulli(label_key, jax.nn.sigmoid(classification_latent(X[:, 0])))
    return X, jnp.where(positive, 1.0, -1.0)


def steingp_algorithm(X, y) -> steingp.SteinGP:
    """SteinGP on the conjugate model of (X, y): an SE kernel and Gaussian noise with SteinGP's default priors."""
    return steingp.SteinGP(
        steingp.make_model(X, y, kernel=kernels.SquaredExponential(), likelihood=likelihoods.Gaussian())
    )


def multi_seed_run(algorithm: steingp.SteinGP, *, num_particles: int, num_steps: int):
    """The jitted function keys `(S,)` → the final particles and the KSD² trace of a whole
    SteinGP run from each key (its own initial particles and SVGD keys), stacked along S.
    It runs where the keys are: keys sharded over devices give a run sharded the same way."""

    def run_from_seed(key):
        initial_key, run_key = jax.random.split(key)
        state, info = gpcompose.run(algorithm, algorithm.init(num_particles, key=initial_key), run_key, num_steps)
        return state.particles, info.squared_kernel_stein_discrepancy

    return jax.jit(jax.vmap(run_from_seed))


@eqx.filter_jit
def predictive_means(algorithm: steingp.SteinGP, particles) -> jax.Array:
    """Each seed's particle-mixture predictive mean on `GRID` (computed where its particles are)."""

    def predictive_mean(seed_particles):
        return steingp.SteinGPResult(algorithm.model, seed_particles, None).predict(GRID)[0]

    return jax.vmap(predictive_mean)(particles)


def svi_algorithm(batch_size: int, batch_sharding: NamedSharding | None) -> aaci.SVI:
    """Natural-gradient SVI with a logistic likelihood and Adam on the kernel hyperparameters;
    with `batch_sharding` the minibatch rows are split over its mesh."""
    return aaci.SVI(
        kernels.SquaredExponential(lengthscale=1.0, variance=1.0),
        likelihoods.Logistic(),
        optimizer=optax.adam(0.01),
        batch_size=batch_size,
        batch_sharding=batch_sharding,
    )


def run_svi(svi: aaci.SVI, inducing_inputs, key, X, y, num_steps: int):
    """`num_steps` SVI steps from q(u) = p(u) by `gpcompose.run`, on the devices of X and y."""
    return gpcompose.run(svi, svi.init(inducing_inputs), key, num_steps, X, y)


def largest_difference(first, second) -> float:
    """max |a − b| over the array leaves of two pytrees of the same structure."""
    differences = jax.tree.map(lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b)))), first, second)
    return max(jax.tree.leaves(differences))


def timed(function, *args):
    start = time.perf_counter()
    output = jax.block_until_ready(function(*args))
    return output, time.perf_counter() - start


def run(key, *, out_dir: pathlib.Path, smoke: bool = False) -> dict:
    """Both parts on all devices and on the first device alone; writes `<out_dir>/sharding.png`
    and returns the differences and wall times (compilation included)."""
    sizes = settings(smoke)
    devices = jax.devices()
    one_device = devices[0]
    regression_key, classification_key, seeds_key, svi_key = jax.random.split(key, 4)

    X, y = regression_data(regression_key, sizes["num_regression"])
    algorithm = steingp_algorithm(X, y)
    multi_seed = multi_seed_run(algorithm, num_particles=sizes["num_particles"], num_steps=sizes["stein_steps"])
    keys = jax.random.split(seeds_key, sizes["num_seeds"])
    sharded_seeds, sharded_seconds = timed(multi_seed, jax.device_put(keys, seed_sharding(devices)))
    single_seeds, single_seconds = timed(multi_seed, jax.device_put(keys, one_device))

    X_class, y_class = classification_data(classification_key, sizes["num_classification"])
    Z = jnp.linspace(-3.0, 3.0, sizes["num_inducing"])[:, None]
    mesh = data_mesh(devices)
    replicated = NamedSharding(mesh, PartitionSpec())
    sharded_svi = svi_algorithm(sizes["batch_size"], NamedSharding(mesh, PartitionSpec("data")))
    single_svi = svi_algorithm(sizes["batch_size"], None)
    (sharded_state, sharded_infos), sharded_svi_seconds = timed(
        run_svi, sharded_svi, Z, svi_key, *jax.device_put((X_class, y_class), replicated), sizes["svi_steps"]
    )
    (single_state, single_infos), single_svi_seconds = timed(
        run_svi, single_svi, Z, svi_key, *jax.device_put((X_class, y_class), one_device), sizes["svi_steps"]
    )

    seed_difference = largest_difference(sharded_seeds, single_seeds)
    svi_difference = largest_difference(
        (sharded_state.variational, sharded_infos.elbo), (single_state.variational, single_infos.elbo)
    )
    means = predictive_means(algorithm, sharded_seeds[0])
    seed_rmse = np.sqrt(np.mean((np.asarray(means) - np.asarray(regression_latent(GRID[:, 0]))) ** 2, 1))
    probability = aaci.class_probability(sharded_state, GRID)
    probability_error = float(jnp.max(jnp.abs(probability - jax.nn.sigmoid(classification_latent(GRID[:, 0])))))

    png = pathlib.Path(out_dir) / "sharding.png"
    plot(means, sharded_infos, single_infos, probability, aaci.class_probability(single_state, GRID), png)
    return {
        "method": "sharding",
        "problem": f"{sizes['num_seeds']} SteinGP seeds and SVI with minibatch {sizes['batch_size']} "
        f"on {len(devices)} device(s)",
        "metric": "max |sharded − one device|",
        "value": max(seed_difference, svi_difference),
        "num_devices": len(devices),
        "seed_difference": seed_difference,
        "svi_difference": svi_difference,
        "seed_predictive_rmse": seed_rmse.tolist(),
        "svi_probability_error": probability_error,
        "seconds": sharded_seconds + sharded_svi_seconds,
        "seeds_seconds": {"sharded": sharded_seconds, "one_device": single_seconds},
        "svi_seconds": {"sharded": sharded_svi_seconds, "one_device": single_svi_seconds},
        "png": str(png),
    }


def plot(means, sharded_infos, single_infos, sharded_probability, single_probability, path):
    """Left: each seed's predictive mean, coloured by the device that holds it; middle and right:
    the SVI runs on all devices and on one."""
    figure, axes = plt.subplots(1, 3, figsize=(15, 4))
    for position, shard in enumerate(sorted(means.addressable_shards, key=lambda shard: shard.device.id)):
        for index, mean in enumerate(np.asarray(shard.data)):
            label = f"device {shard.device.id}" if index == 0 else None
            axes[0].plot(GRID[:, 0], mean, color=f"C{position}", linewidth=1, label=label)
    axes[0].plot(GRID[:, 0], regression_latent(GRID[:, 0]), "k--", linewidth=1, label="latent f")
    axes[0].set_title(f"SteinGP predictive mean, {means.shape[0]} seeds")
    axes[0].legend(fontsize=8)
    axes[1].plot(np.asarray(single_infos.elbo), color="C0", linewidth=3, alpha=0.4, label="one device")
    axes[1].plot(np.asarray(sharded_infos.elbo), color="C3", linewidth=1, label=f"{len(jax.devices())} devices")
    axes[1].set_title("SVI minibatch augmented ELBO")
    axes[1].set_xlabel("step")
    axes[1].legend(fontsize=8)
    axes[2].plot(GRID[:, 0], jax.nn.sigmoid(classification_latent(GRID[:, 0])), "k--", linewidth=1, label="σ(f)")
    axes[2].plot(GRID[:, 0], single_probability, color="C0", linewidth=3, alpha=0.4, label="one device")
    axes[2].plot(GRID[:, 0], sharded_probability, color="C3", linewidth=1, label=f"{len(jax.devices())} devices")
    axes[2].set_title("SVI P(y = 1 | x)")
    axes[2].legend(fontsize=8)
    for axis in (axes[0], axes[2]):
        axis.set_xlabel("x")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main():
    row = run(jax.random.key(0), out_dir=pathlib.Path(__file__).parent)
    print(f"{row['num_devices']} device(s): {row['problem']}")
    print(
        f"multi-seed SteinGP: max |sharded − one device| = {row['seed_difference']:.3g}; "
        f"wall time (compile + run) {row['seeds_seconds']['sharded']:.1f} s sharded, "
        f"{row['seeds_seconds']['one_device']:.1f} s on one device; "
        f"predictive-mean RMSE per seed {min(row['seed_predictive_rmse']):.3f}–{max(row['seed_predictive_rmse']):.3f}"
    )
    print(
        f"data-parallel SVI: max |sharded − one device| = {row['svi_difference']:.3g}; "
        f"wall time {row['svi_seconds']['sharded']:.1f} s sharded, {row['svi_seconds']['one_device']:.1f} s on one "
        f"device; max |P(y = 1 | x) − σ(f(x))| = {row['svi_probability_error']:.3f}"
    )
    print(f"wrote {row['png']}")


if __name__ == "__main__":
    main()
