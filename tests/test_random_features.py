"""Tests of `gpcompose.kernels.random_features`: the feature Gram φ(X)φ(X)ᵀ converges
to the kernel Gram at the Monte-Carlo rate 1/√F for every kernel with a spectral
density, kernels without one are rejected, and `active_dims` is respected."""

import contextlib

import equinox as eqx
import jax
import jax.numpy as jnp
import jaxtyping
import numpy as np
import pytest

from gpcompose.kernels import (
    Constant,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    Polynomial,
    ProductMatern,
    RandomFourierFeatures,
    RationalQuadratic,
    SquaredExponential,
    White,
    random_features,
)

NUM_FEATURES = (250, 1000, 4000, 16000)
NUM_KEYS = 16
VARIANCE = 1.7
LENGTHSCALE = np.array([0.8, 1.5])
X = np.random.default_rng(0).normal(size=(10, 2))


def _spectral_kernels():
    ls = jnp.asarray(LENGTHSCALE)
    return {
        "squared_exponential": SquaredExponential(lengthscale=ls, variance=VARIANCE),
        "matern12": Matern12(lengthscale=ls, variance=VARIANCE),
        "matern32": Matern32(lengthscale=ls, variance=VARIANCE),
        "matern52": Matern52(lengthscale=ls, variance=VARIANCE),
        # One smoothness suffices for the product structure: the Student-t sampler
        # is shared with the isotropic Matérns above (each kernel costs ~2 s of XLA
        # compilation for `jax.random.gamma`).
        "product_matern12": ProductMatern(0.5, lengthscale=ls, variance=VARIANCE),
    }


@contextlib.contextmanager
def _without_runtime_typechecks():
    jaxtyping.config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping.config.update("jaxtyping_disable", False)


@eqx.filter_jit
def _feature_gram_errors(kernels, keys):
    """Max-abs error of φ(X)φ(X)ᵀ against the kernel Gram, per kernel, key and F.

    One draw of max(F) features per key; the first F of them are F independent features
    of the same distribution, mapped by the library's `RandomFourierFeatures` with its
    own normalisation √(2σ²/F). (One draw per key keeps this to one compilation.)
    """
    inputs = jnp.asarray(X)
    errors = {}
    for name, kernel in kernels.items():
        gram = kernel.gram(inputs)

        def errors_for_key(key, kernel=kernel, gram=gram):
            features = random_features(kernel, key, NUM_FEATURES[-1], inputs.shape[1])
            result = []
            for num_features in NUM_FEATURES:
                subset = RandomFourierFeatures(
                    features.frequencies[:num_features],
                    features.phases[:num_features],
                    features.variance,
                    features.active_dims,
                )
                phi = subset(inputs)
                result.append(jnp.max(jnp.abs(phi @ phi.T - gram)))
            return jnp.stack(result)

        errors[name] = jax.vmap(errors_for_key)(keys)
    return errors


@pytest.fixture(scope="module")
def feature_gram_errors():
    keys = jax.random.split(jax.random.key(314), NUM_KEYS)
    return {name: np.asarray(e) for name, e in _feature_gram_errors(_spectral_kernels(), keys).items()}


@pytest.mark.parametrize("name", list(_spectral_kernels()))
def test_feature_gram_converges_at_monte_carlo_rate(name, feature_gram_errors):
    errors = feature_gram_errors[name]
    assert errors.shape == (NUM_KEYS, len(NUM_FEATURES))
    assert np.all(np.isfinite(errors))
    mean_error = errors.mean(axis=0)
    slope = np.polyfit(np.log(NUM_FEATURES), np.log(mean_error), 1)[0]
    assert -0.65 <= slope <= -0.35, (slope, mean_error)
    assert np.all(np.diff(mean_error) < 0), mean_error
    # Each entry has standard deviation ≤ √1.5 σ²/√F; the max over the 55 distinct
    # entries stays below 4σ²/√F.
    assert mean_error[-1] < 4 * VARIANCE / np.sqrt(NUM_FEATURES[-1]), mean_error


def test_convergence_test_tells_product_from_isotropic_matern(feature_gram_errors):
    # The product and isotropic Matérn-1/2 Grams differ by far more than the error at
    # F = 16000, so the convergence test above distinguishes their spectral densities.
    scaled = np.abs(X[:, None, :] - X[None, :, :]) / LENGTHSCALE
    product = VARIANCE * np.exp(-np.sum(scaled, axis=-1))
    isotropic = VARIANCE * np.exp(-np.sqrt(np.sum(scaled**2, axis=-1)))
    difference = np.max(np.abs(product - isotropic))
    for name in ("product_matern12", "matern12"):
        assert feature_gram_errors[name][:, -1].mean() < difference / 4, (difference, name)


@pytest.mark.parametrize(
    "kernel",
    [
        RationalQuadratic(),
        Periodic(),
        Linear(),
        Polynomial(2),
        White(),
        Constant(),
        SquaredExponential() + Matern12(),
        SquaredExponential() * Matern32(),
        2.0 * SquaredExponential(),
    ],
    ids=["rq", "periodic", "linear", "polynomial", "white", "constant", "sum", "product", "scaled"],
)
def test_kernel_without_spectral_density_raises(kernel):
    with pytest.raises(ValueError, match=rf"`kernel` \({type(kernel).__name__}\) has no spectral density"):
        random_features(kernel, jax.random.key(0), 10, 2)


@eqx.filter_jit
def _features_and_gram(kernel, key, inputs, num_features, dimension):
    features = random_features(kernel, key, num_features, dimension)
    return features, features(inputs), kernel.gram(inputs)


def test_features_respect_active_dims():
    key = jax.random.key(7)
    inputs = np.random.default_rng(1).normal(size=(6, 3))
    restricted = SquaredExponential(lengthscale=jnp.asarray(LENGTHSCALE), variance=VARIANCE, active_dims=(0, 2))
    full = SquaredExponential(lengthscale=jnp.asarray(LENGTHSCALE), variance=VARIANCE)
    features, phi, gram = _features_and_gram(restricted, key, jnp.asarray(inputs), 4000, 3)
    assert features.frequencies.shape == (4000, 2)
    assert features.active_dims == (0, 2)
    assert phi.shape == (6, 4000)
    # The same draw on the sliced inputs.
    _, sliced, sliced_gram = _features_and_gram(full, key, jnp.asarray(inputs[:, [0, 2]]), 4000, 2)
    np.testing.assert_allclose(phi, sliced, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(gram, sliced_gram, rtol=1e-15)
    # The inactive column has no effect.
    moved = inputs.copy()
    moved[:, 1] += 5.0
    np.testing.assert_allclose(
        _features_and_gram(restricted, key, jnp.asarray(moved), 4000, 3)[1], phi, rtol=1e-13, atol=1e-14
    )
    # ... and the features approximate the kernel of the active columns.
    np.testing.assert_allclose(phi @ phi.T, gram, rtol=0, atol=4 * VARIANCE / np.sqrt(4000))


def test_feature_map_checks_its_input():
    features = random_features(SquaredExponential(), jax.random.key(0), 8, 2)
    with _without_runtime_typechecks(), pytest.raises(ValueError, match=r"`X`.*\(4,\)"):
        features(jnp.ones(4))


def test_float32_smoke():
    kernel = SquaredExponential(lengthscale=jnp.asarray(LENGTHSCALE, dtype=jnp.float32), variance=jnp.float32(VARIANCE))
    inputs = jnp.asarray(X, dtype=jnp.float32)
    features, phi, gram = _features_and_gram(kernel, jax.random.key(9), inputs, 4000, 2)
    assert features.frequencies.dtype == jnp.float32 and features.phases.dtype == jnp.float32
    assert phi.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(phi)))
    np.testing.assert_allclose(phi @ phi.T, gram, rtol=0, atol=4 * VARIANCE / np.sqrt(4000))
