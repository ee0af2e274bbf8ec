"""Issue 9, "Beyond one device": the sharded computations of examples/sharding.py on 4 forced host CPU
devices equal the same computations on one device.

XLA reads `--xla_force_host_platform_device_count` once, when JAX creates its CPU backend, and this
process's backend (1 device) already exists, so the checks run in a fresh Python process (`CHECKS`)
and fail it with the assertion's message.

Tolerances. Sharding changes no operation, only where it runs and the order of some sums:
- seeds: each device runs the same vmapped program on S/4 seeds instead of S; XLA may vectorise a
  batch of 2 differently from a batch of 8, so results can differ by rounding (measured ≤ 3e-15 after
  20 SVGD steps on values of order 1);
- SVI: the sums over the minibatch (η̂₁, η̂₂, the ELBO and its gradient) are added per device, then
  across devices, which changes their rounding by a few ulps of the terms (measured ≤ 1e-14 after 5
  steps).
`rtol=1e-10, atol=1e-12` leaves room for ~10⁴ ulps of growth, and is ten orders of magnitude below
the differences a wrong seed or minibatch makes; the negative controls assert the latter, so that a
comparison of arrays that are equal for a trivial reason cannot pass.
"""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

CHECKS = r"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

import gpcompose
from tests.examples_loader import load_example

example = load_example("sharding")  # turns on float64
jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")
TOLERANCE = dict(rtol=1e-10, atol=1e-12)


def assert_close(sharded, single):
    for a, b in zip(jax.tree.leaves(sharded), jax.tree.leaves(single), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), **TOLERANCE)


def largest_difference(first, second):
    return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in
               zip(jax.tree.leaves(first), jax.tree.leaves(second), strict=True))


devices = jax.devices()
assert len(devices) == 4, devices
one_device = devices[0]
sizes = example.settings(smoke=True)

# 1. A whole SteinGP run per seed, keys sharded over the 4 devices.
X, y = example.regression_data(jax.random.key(0), sizes["num_regression"])
multi_seed = example.multi_seed_run(
    example.steingp_algorithm(X, y), num_particles=sizes["num_particles"], num_steps=sizes["stein_steps"]
)
keys = jax.random.split(jax.random.key(1), sizes["num_seeds"])
seed_sharding = example.seed_sharding(devices)
sharded_keys = jax.device_put(keys, seed_sharding)
assert len(sharded_keys.addressable_shards) == 4
sharded = multi_seed(sharded_keys)
single = multi_seed(jax.device_put(keys, one_device))
seeds_per_device = sizes["num_seeds"] // 4
for leaf in jax.tree.leaves(sharded):
    assert leaf.sharding.is_equivalent_to(seed_sharding, leaf.ndim), leaf.sharding
    assert len(leaf.devices()) == 4
    assert {shard.data.shape[0] for shard in leaf.addressable_shards} == {seeds_per_device}
for leaf in jax.tree.leaves(single):
    assert leaf.devices() == {one_device}, leaf.devices()
assert_close(sharded, single)
other_seeds = multi_seed(jax.device_put(keys[np.roll(np.arange(len(keys)), 1)], one_device))
assert largest_difference(sharded, other_seeds) > 1e-3

# 2. Minibatched natural-gradient SVI, the minibatch rows split over the 4 devices.
X, y = example.classification_data(jax.random.key(2), sizes["num_classification"])
Z = jnp.linspace(-3.0, 3.0, sizes["num_inducing"])[:, None]
mesh = example.data_mesh(devices)
sharded_svi = example.svi_algorithm(sizes["batch_size"], NamedSharding(mesh, PartitionSpec("data")))
replicated_data = jax.device_put((X, y), NamedSharding(mesh, PartitionSpec()))
key = jax.random.key(3)
arguments = (sharded_svi, sharded_svi.init(Z), key, sizes["svi_steps"], *replicated_data)
compiled = gpcompose.run.lower(*arguments).compile()
# The data and the state are replicated, so XLA all-reduces (M, M) partial sums (η̂₂ = −½ I − ½ s Aᵀ diag(λ) A
# and its like) only if it split the minibatch rows. (eqx.error_if's finite checks add all-reduces of
# the data either way.)
num_inducing = sizes["num_inducing"]
sums = [line for line in compiled.compiled.as_text().splitlines()
        if "all-reduce(" in line and f"f64[{num_inducing},{num_inducing}]" in line.split("all-reduce(")[0]]
assert sums, "the sharded SVI program does not all-reduce (M, M) sums: the minibatch was not split"
sharded_state, sharded_infos = compiled(*arguments)
for leaf in jax.tree.leaves((sharded_state.variational, sharded_infos.elbo)):
    assert leaf.sharding.is_fully_replicated and len(leaf.devices()) == 4, leaf.sharding
single_state, single_infos = example.run_svi(
    example.svi_algorithm(sizes["batch_size"], None), Z, key, *jax.device_put((X, y), one_device), sizes["svi_steps"]
)
assert single_state.variational.linear.devices() == {one_device}
assert_close(
    (sharded_state.variational, sharded_state.kernel, sharded_infos.elbo),
    (single_state.variational, single_state.kernel, single_infos.elbo),
)
other_state, _ = compiled(sharded_svi, sharded_svi.init(Z), jax.random.key(4), sizes["svi_steps"], *replicated_data)
assert largest_difference(sharded_state.variational, other_state.variational) > 1e-3

# 3. The example's own run at its smoke size on the 4 devices: both parts, the per-seed predictive
# means (vmapped over the sharded seeds) and the plot coloured by device.
import pathlib, tempfile
with tempfile.TemporaryDirectory() as directory:
    row = example.run(jax.random.key(5), out_dir=pathlib.Path(directory), smoke=True)
    assert row["num_devices"] == 4 and pathlib.Path(row["png"]).is_file(), row
assert row["value"] < 1e-10, row
assert all(np.isfinite(row["seed_predictive_rmse"])) and np.isfinite(row["svi_probability_error"]), row
print("sharded runs equal one-device runs")
"""


def test_sharded_runs_on_four_host_devices_equal_one_device_runs():
    environment = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        # conftest.py's compile-time flags plus four host devices
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4",
    }
    completed = subprocess.run(
        [sys.executable, "-W", "error", "-c", CHECKS],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr[-5000:]
    assert "sharded runs equal one-device runs" in completed.stdout
