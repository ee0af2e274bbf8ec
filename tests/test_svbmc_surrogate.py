"""The SVBMC surrogate's subset MAP: restarts from scaled lengthscales, best fit kept."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import svbmc
from gpcompose.parameters import log_prior, partition
from gpcompose.svbmc._surrogate import _exact_objective, fit_exact, initial_surrogate, with_lengthscale_scaled


def make_data(num_points=60):
    """A log density with a bump beside the quadratic, so the kernel has work to do."""
    X = jax.random.uniform(jax.random.key(0), (num_points, 2), minval=-3.0, maxval=3.0)
    y = -0.5 * jnp.sum(X**2, axis=1) + 1.5 * jnp.exp(-2.0 * jnp.sum((X - 0.7) ** 2, axis=1))
    return X, y, jnp.full((num_points,), 1e-3), jnp.ones((num_points,), bool)


def objective(surrogate, data):
    return float(_exact_objective(surrogate, data) + log_prior(surrogate))


def test_lengthscale_scaling_keeps_everything_else():
    start = initial_surrogate(jnp.zeros(2), jnp.full(2, 6.0), jnp.asarray(0.0), jnp.asarray(2.0), jnp.asarray(20.0))
    scaled = with_lengthscale_scaled(start, 0.25)
    np.testing.assert_allclose(scaled.kernel.lengthscale.value, 0.25 * start.kernel.lengthscale.value, rtol=1e-12)
    for name in ("variance",):
        np.testing.assert_array_equal(getattr(scaled.kernel, name).value, getattr(start.kernel, name).value)
    for new, old in zip(jax.tree_util.tree_leaves(scaled.mean), jax.tree_util.tree_leaves(start.mean)):
        np.testing.assert_array_equal(new, old)


def test_coordinate_scales_are_the_hyperprior_widths_in_the_trainable_layout():
    start = initial_surrogate(
        jnp.zeros(3), jnp.asarray([6.0, 2.0, 1.0]), jnp.asarray(0.0), jnp.asarray(2.0), jnp.asarray(30.0)
    )
    scales = start.coordinate_scales()
    trainable, _ = partition(start)
    assert jax.tree.structure(scales) == jax.tree.structure(trainable)
    for scale, leaf in zip(jax.tree.leaves(scales), jax.tree.leaves(trainable)):
        assert scale.shape == leaf.shape and scale.dtype == leaf.dtype
    np.testing.assert_allclose(scales.kernel.lengthscale.unconstrained, 0.5 * math.log(1e3))
    np.testing.assert_allclose(scales.kernel.variance.unconstrained, 2 * math.log(10))
    np.testing.assert_allclose(scales.mean.maximum.unconstrained, 2.0 * 2.0 + 1.0)
    np.testing.assert_allclose(scales.mean.location.unconstrained, [6.0, 2.0, 1.0])
    np.testing.assert_allclose(scales.mean.scale.unconstrained, math.log(10))


def test_restarts_keep_the_best_single_start_fit():
    """fit_exact over factors (4, 1, ¼) equals the single-start fit with the highest MAP
    objective, and that objective is at least each single start's."""
    data = make_data()
    # a start far too smooth, so the starts end at different points
    start = initial_surrogate(jnp.zeros(2), jnp.full(2, 6.0), jnp.asarray(0.0), jnp.asarray(2.0), jnp.asarray(20.0))
    factors = (4.0, 1.0, 0.25)
    fit = eqx.filter_jit(fit_exact)
    singles = [fit(start, *data, max_steps=100, lengthscale_factors=(factor,)) for factor in factors]
    values = [objective(single, data) for single in singles]
    assert all(math.isfinite(value) for value in values)
    combined = fit(start, *data, max_steps=100, lengthscale_factors=factors)
    best = int(np.argmax(values))
    assert objective(combined, data) >= max(values) - 1e-6 * abs(max(values))
    for new, old in zip(jax.tree_util.tree_leaves(combined), jax.tree_util.tree_leaves(singles[best])):
        np.testing.assert_allclose(new, old, rtol=1e-6, atol=1e-9)


def test_restart_factors_are_validated():
    with pytest.raises(ValueError, match="`exact_fit_lengthscale_factors`"):
        svbmc.SVBMC(exact_fit_lengthscale_factors=())
    with pytest.raises(ValueError, match="`exact_fit_lengthscale_factors`"):
        svbmc.SVBMC(exact_fit_lengthscale_factors=(1.0, -0.5))


def test_quadratic_scale_cap_is_validated():
    with pytest.raises(ValueError, match="`quadratic_scale_cap`"):
        svbmc.SVBMC(quadratic_scale_cap=0.0)


@pytest.mark.parametrize("cap", [1.0, 1e6])
def test_the_quadratic_mean_scale_stays_below_its_cap(cap):
    """On data that do not depend on x₂ the subset MAP flattens the quadratic along x₂
    (ω₂ runs off with no cap); the `Interval` parameter keeps ω_d < cap·width_d."""
    X = jax.random.uniform(jax.random.key(1), (80, 2), minval=-3.0, maxval=3.0)
    y = -0.5 * X[:, 0] ** 2
    data = (X, y, jnp.full((80,), 1e-3), jnp.ones((80,), bool))
    width = jnp.asarray([6.0, 6.0])
    start = initial_surrogate(jnp.zeros(2), width, jnp.asarray(0.0), jnp.asarray(2.0), jnp.asarray(20.0), cap)
    fit = fit_exact(start, *data, max_steps=200, lengthscale_factors=(1.0,))
    scale = np.asarray(fit.mean.scale.value)
    assert math.isfinite(objective(fit, data))
    if cap == 1.0:
        assert np.all(scale < cap * np.asarray(width))
        assert scale[1] > 0.5 * width[1]  # pressed against the cap: the data want a flat x₂
    else:
        assert scale[1] > 2.0 * width[1]  # without a binding cap ω₂ runs past the width (27.8 measured)


def test_whitening_passes_are_validated():
    with pytest.raises(ValueError, match="`whitening_passes`"):
        svbmc.SVBMC(whitening_passes=0)
