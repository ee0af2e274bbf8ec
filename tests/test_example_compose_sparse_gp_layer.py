"""examples/compose_sparse_gp_layer.py (issue 9, example 2): a sparse GP layer on an MLP feature
map inside an Equinox model, trained end to end with optax. Gradients of the loss reach the MLP
and gpcompose's kernel, noise and inducing-input leaves, equal finite differences, and Adam
steps decrease the loss."""

import equinox as eqx
import jax
import numpy as np
from jax.flatten_util import ravel_pytree

from .examples_loader import load_example

example = load_example("compose_sparse_gp_layer")


def test_gradients_flow_through_the_sparse_posterior_into_every_leaf():
    X, y, _ = example.make_data(jax.random.key(0), 40)
    model = example.deep_model(jax.random.key(1), 6)
    gradient = eqx.filter_grad(example.loss)(model, X, y)
    groups = {
        "feature map": gradient.feature_map,
        "kernel lengthscale": gradient.kernel.lengthscale.unconstrained,
        "kernel variance": gradient.kernel.variance.unconstrained,
        "inducing inputs": gradient.inducing_inputs,
        "noise": gradient.noise.unconstrained,
    }
    for name, group in groups.items():
        leaves = jax.tree.leaves(group)
        assert leaves, name
        for leaf in leaves:
            assert np.all(np.isfinite(leaf)), name
            assert np.any(leaf != 0), f"{name}: a zero gradient leaf of shape {leaf.shape}"

    # Directional derivative along a random direction of all trainable leaves against a central
    # difference (step 1e-5: truncation error O(h²) ≈ 1e-10, rounding ≈ 1e-16/h ≈ 1e-11, relative
    # to a derivative of order 1).
    params, static = eqx.partition(model, eqx.is_inexact_array)
    flat, unravel = ravel_pytree(params)
    direction = jax.random.normal(jax.random.key(2), flat.shape)

    def loss_along(step):
        return example.loss(eqx.combine(unravel(flat + step * direction), static), X, y)

    step = 1e-5
    finite_difference = (loss_along(step) - loss_along(-step)) / (2 * step)
    np.testing.assert_allclose(ravel_pytree(gradient)[0] @ direction, finite_difference, rtol=1e-6)


def test_adam_steps_decrease_the_loss_of_both_models(tmp_path):
    outcome = example.run(jax.random.key(3), out_dir=tmp_path, smoke=True)
    assert (tmp_path / "compose_sparse_gp_layer.png").is_file()
    for name, losses in outcome["losses"].items():
        assert np.all(np.isfinite(losses)), name
        assert losses[-1] < losses[0], f"{name}: {losses}"
        trained = outcome["models"][name]
        assert float(example.loss(trained, outcome["X"], outcome["y"])) < losses[0], name
        assert np.isfinite(outcome["rmse"][name]), name
