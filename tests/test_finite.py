import jax.numpy as jnp
import numpy as np
import optax

from gpcompose._finite import all_finite, finite_optimiser_step, zero_non_finite


def test_all_finite_looks_at_every_float_leaf_and_ignores_integer_and_static_leaves():
    tree = {"a": jnp.ones(3), "b": (jnp.zeros((2, 2)), jnp.arange(3)), "name": "label"}
    assert bool(all_finite(tree))
    assert not bool(all_finite({**tree, "b": (jnp.array([[0.0, jnp.nan], [1.0, 2.0]]), jnp.arange(3))}))
    assert not bool(all_finite({**tree, "a": jnp.array([1.0, -jnp.inf, 0.0])}))
    assert bool(all_finite({"count": jnp.arange(2), "name": "label"}))


def test_zero_non_finite_sets_nan_and_infinite_entries_to_zero_and_keeps_the_rest():
    gradient = {"mean": jnp.array([1.0, jnp.nan, -2.0]), "log_scale": jnp.array(jnp.inf)}
    cleaned = zero_non_finite(gradient)
    np.testing.assert_array_equal(cleaned["mean"], [1.0, 0.0, -2.0])
    assert float(cleaned["log_scale"]) == 0.0


def test_finite_optimiser_step_keeps_a_coordinate_with_a_nan_gradient_and_steps_the_others_as_optax_does():
    optimiser = optax.sgd(0.5)
    parameters = jnp.array([1.0, 2.0, 3.0])
    state = optimiser.init(parameters)
    stepped, _ = finite_optimiser_step(optimiser, jnp.array([1.0, jnp.nan, -2.0]), state, parameters)
    np.testing.assert_allclose(stepped, [0.5, 2.0, 4.0])
