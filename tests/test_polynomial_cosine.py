import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose._polynomial_cosine import polynomial_cosine


@pytest.mark.parametrize("dtype, tolerance", [(jnp.float32, 5e-7), (jnp.float64, 2e-8)])
def test_polynomial_cosine_matches_the_cosine_and_its_derivative(dtype, tolerance):
    """Against numpy's float64 cosine at the same (rounded) arguments, over the phases that
    random features reach, the reduction's boundaries (odd multiples of π) included."""
    t = jax.random.uniform(jax.random.key(0), (200_000,), dtype, -1000.0, 1000.0)
    boundaries = jnp.asarray(np.pi * np.arange(-301, 302, 2), dtype)
    t = jnp.concatenate([t, boundaries, jnp.asarray([0.0, 0.5 * np.pi, -0.5 * np.pi], dtype)])
    exact = np.asarray(t, np.float64)
    values = polynomial_cosine(t)
    assert values.dtype == dtype
    np.testing.assert_allclose(np.asarray(values, np.float64), np.cos(exact), rtol=0, atol=tolerance)
    derivative = jax.vmap(jax.grad(polynomial_cosine))(t)
    np.testing.assert_allclose(np.asarray(derivative, np.float64), -np.sin(exact), rtol=0, atol=10 * tolerance)
