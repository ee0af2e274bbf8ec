"""Bad inputs across the public API (docs: DESIGN.md, "Errors").

Every case either raises an error of the expected type whose message names the offending
argument (the table `ERROR_CASES`), or, where the input is valid once promoted (integer data,
float32 data with float64 parameters), returns the right value (`VALUE_CASES`): none returns a
silently wrong value. Arrays are tiny and no case runs a fit or an active-learning loop, so the
file stays fast.
"""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gpcompose
from gpcompose import (
    aaci,
    bo,
    bvbmc,
    gp,
    kernels,
    likelihoods,
    means,
    mixtures,
    priors,
    quadrature,
    sparse,
    steingp,
    svbmc,
    svgd,
    transforms,
)
from gpcompose.parameters import Positive

KEY = jax.random.key(0)
X = jax.random.uniform(KEY, (8, 2), minval=-2.0, maxval=2.0)
Y = jnp.sin(X[:, 0]) + 0.1 * X[:, 1]
KERNEL = kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0)
MEAN = means.Zero()
POSTERIOR = gp.condition(KERNEL, MEAN, X, Y, 1e-2, capacity=9)
FULL_POSTERIOR = gp.condition(KERNEL, MEAN, X, Y, 1e-2)
MIXTURE = mixtures.GaussianMixture.from_moments(jnp.array([0.5, 0.5]), jnp.zeros((2, 2)), jnp.ones((2, 2)))

# Integer inputs and float targets (the probe of the reliability issue).
X_INT = jnp.array([[0, 1], [2, 3], [4, 5]])
Y_FLOAT = jnp.array([0.3, 1.7, 2.5])

# An initial design for the active learners: log N(0, I) at 12 points.
X0 = np.random.default_rng(0).normal(size=(12, 2)) * 2
Y0 = -0.5 * np.sum(X0**2, axis=1)

# A Bayesian optimisation with no evaluations yet, on the unit square.
NO_X, NO_Y = np.zeros((0, 2)), np.zeros(0)
BO_STATE = bo.BO().init(NO_X, NO_Y, np.zeros(2), np.ones(2), budget=3)
RANDOM_SEARCH = bo.BO(acquisition=bo.RandomSearch())
RANDOM_STATE = RANDOM_SEARCH.init(NO_X, NO_Y, np.zeros(2), np.ones(2), budget=3)

# Classification data.
X_CLASS = jnp.asarray(np.random.default_rng(1).normal(size=(20, 2)))
Y_CLASS = (X_CLASS[:, 0] > 0).astype(jnp.float64)


def log_density(x):
    return float(-0.5 * np.sum(np.asarray(x) ** 2))


def always_nan(x):
    return float("nan")


def standard_svgd():
    return svgd.SVGD(lambda x: -0.5 * jnp.sum(x**2))


def case(name, call, exception, match):
    return pytest.param(call, exception, match, id=name)


ERROR_CASES = [
    # ---- gp.condition / gp.predict / gp.update ----
    case(
        "gp.condition-y-shorter-than-X",
        lambda: gp.condition(KERNEL, MEAN, X, Y[:7], 1e-2),
        ValueError,
        r"`y` must have shape \(8,\) to match the inputs, got shape \(7,\)",
    ),
    case(
        "gp.condition-y-column-vector",
        lambda: gp.condition(KERNEL, MEAN, X, Y[:, None], 1e-2),
        ValueError,
        r"`y` must have shape \(8,\).*got shape \(8, 1\)",
    ),
    case(
        "gp.condition-lengthscale-3-on-2-columns",
        lambda: gp.condition(kernels.SquaredExponential(lengthscale=jnp.ones(3)), MEAN, X, Y, 1e-2),
        ValueError,
        r"`lengthscale` of SquaredExponential has shape \(3,\), but the kernel acts on 2 input columns",
    ),
    case(
        "gp.condition-matern52-lengthscale-3-on-2-columns",
        lambda: gp.condition(kernels.Matern52(lengthscale=jnp.ones(3)), MEAN, X, Y, 1e-2),
        ValueError,
        r"`lengthscale` of Matern52 has shape \(3,\)",
    ),
    case(
        "gp.condition-lengthscale-2x2",
        lambda: gp.condition(kernels.SquaredExponential(lengthscale=jnp.ones((2, 2))), MEAN, X, Y, 1e-2),
        ValueError,
        r"`lengthscale` of SquaredExponential has shape \(2, 2\).*shape \(2,\)",
    ),
    case(
        "gp.condition-product-matern-lengthscale-3",
        lambda: gp.condition(kernels.ProductMatern(2.5, lengthscale=jnp.ones(3)), MEAN, X, Y, 1e-2),
        ValueError,
        r"`lengthscale` of ProductMatern has shape \(3,\)",
    ),
    case(
        "gp.condition-periodic-period-3",
        lambda: gp.condition(kernels.Periodic(period=jnp.ones(3)), MEAN, X, Y, 1e-2),
        ValueError,
        r"`period` of Periodic has shape \(3,\)",
    ),
    case(
        "gp.condition-linear-variance-3",
        lambda: gp.condition(kernels.Linear(variance=jnp.ones(3)), MEAN, X, Y, 1e-2),
        ValueError,
        r"`variance` of Linear has shape \(3,\)",
    ),
    case(
        "gp.condition-nan-in-X",
        lambda: gp.condition(KERNEL, MEAN, X.at[0, 0].set(jnp.nan), Y, 1e-2),
        eqx.EquinoxRuntimeError,
        r"gp.condition: `X` contains NaN or infinite values",
    ),
    case(
        "gp.condition-inf-in-y",
        lambda: gp.condition(KERNEL, MEAN, X, Y.at[1].set(jnp.inf), 1e-2),
        eqx.EquinoxRuntimeError,
        r"gp.condition: `y` contains NaN or infinite values",
    ),
    case(
        "gp.condition-negative-noise",
        lambda: gp.condition(KERNEL, MEAN, X, Y, -1.0),
        eqx.EquinoxRuntimeError,
        r"gp.condition: `noise_variance` must be finite and ≥ 0",
    ),
    case(
        "gp.condition-nan-noise",
        lambda: gp.condition(KERNEL, MEAN, X, Y, jnp.nan),
        eqx.EquinoxRuntimeError,
        r"`noise_variance` must be finite and ≥ 0",
    ),
    case(
        "gp.condition-noise-positive-parameter-below-zero",
        lambda: gp.condition(KERNEL, MEAN, X, Y, Positive(-0.1)),
        ValueError,
        r"`value` must be > 0.0 for a Positive parameter",
    ),
    case(
        "gp.condition-per-row-noise-5-for-8-rows",
        lambda: gp.condition(KERNEL, MEAN, X, Y, jnp.full(5, 1e-2)),
        ValueError,
        r"`noise_variance` must be a scalar or have shape \(8,\), got shape \(5,\)",
    ),
    case(
        "gp.condition-complex-noise",
        lambda: gp.condition(KERNEL, MEAN, X, Y, jnp.asarray(1e-2 + 1e-3j)),
        ValueError,
        r"`noise_variance` must be real, got complex dtype",
    ),
    case(
        "gp.condition-empty-X",
        lambda: gp.condition(KERNEL, MEAN, jnp.zeros((0, 2)), jnp.zeros((0,)), 1e-2),
        ValueError,
        r"`X` has no rows \(shape \(0, 2\)\).*`capacity`",
    ),
    case(
        "gp.condition-mask-7-for-8-rows",
        lambda: gp.condition(KERNEL, MEAN, X, Y, 1e-2, mask=jnp.ones(7, bool)),
        ValueError,
        r"`mask` must have shape \(8,\), got shape \(7,\)",
    ),
    case(
        "gp.condition-capacity-below-N",
        lambda: gp.condition(KERNEL, MEAN, X, Y, 1e-2, capacity=4),
        ValueError,
        r"`capacity` \(4\) is smaller than the number of rows of X \(8\)",
    ),
    case(
        "gp.condition-kernel-a-string",
        lambda: gp.condition("rbf", MEAN, X, Y, 1e-2),
        ValueError,
        r"`kernel` must be an AbstractKernel, got str",
    ),
    case(
        "gp.condition-complex-y",
        lambda: gp.condition(KERNEL, MEAN, X, Y.astype(jnp.complex128), 1e-2),
        ValueError,
        r"`y` must be real, got complex dtype complex128",
    ),
    case(
        "gp.condition-complex-X",
        lambda: gp.condition(KERNEL, MEAN, X.astype(jnp.complex128), Y, 1e-2),
        ValueError,
        r"`X` must be real, got complex dtype complex128",
    ),
    case(
        "gp.predict-X_new-3-columns",
        lambda: gp.predict(POSTERIOR, jnp.zeros((4, 3))),
        ValueError,
        r"`X_new` has 3 columns \(shape \(4, 3\)\) but 2 were expected",
    ),
    case(
        "gp.predict-X_new-1d",
        lambda: gp.predict(POSTERIOR, jnp.zeros(2)),
        ValueError,
        r"`X_new` must have shape \(num_points, dimension\), got shape \(2,\)",
    ),
    case(
        "gp.update-x-3-coordinates",
        lambda: gp.update(POSTERIOR, jnp.zeros(3), 0.0, 1e-2),
        ValueError,
        r"`x` must have shape \(2,\), got shape \(3,\)",
    ),
    case(
        "gp.update-complex-y",
        lambda: gp.update(POSTERIOR, jnp.zeros(2), jnp.asarray(1.0 + 2.0j), 1e-2),
        ValueError,
        r"`y` must be real, got complex dtype",
    ),
    case(
        "gp.update-negative-noise",
        lambda: gp.update(POSTERIOR, jnp.zeros(2), 0.0, -1e-2),
        eqx.EquinoxRuntimeError,
        r"gp.update: `noise_variance` must be finite and ≥ 0",
    ),
    case(
        "gp.update-buffer-full",
        lambda: gp.update(FULL_POSTERIOR, jnp.zeros(2), 0.0, 1e-2),
        eqx.EquinoxRuntimeError,
        r"gp.update: The observation buffer is full: pass a larger `capacity`",
    ),
    # ---- kernels ----
    case(
        "kernels.SquaredExponential-negative-lengthscale",
        lambda: kernels.SquaredExponential(lengthscale=-1.0),
        ValueError,
        r"`lengthscale` must be > 0 \(a Positive parameter\), got -1.0",
    ),
    case(
        "kernels.Matern52-zero-lengthscale",
        lambda: kernels.Matern52(lengthscale=0.0),
        ValueError,
        r"`lengthscale` must be > 0",
    ),
    case(
        "kernels.SquaredExponential-nan-variance",
        lambda: kernels.SquaredExponential(variance=jnp.nan),
        ValueError,
        r"`variance` must be > 0 \(a Positive parameter\), got nan",
    ),
    case(
        "kernels.Periodic-zero-period",
        lambda: kernels.Periodic(period=0.0),
        ValueError,
        r"`period` must be > 0",
    ),
    case(
        "kernels.Matern32.gram-X-1d",
        lambda: kernels.Matern32().gram(X[:, 0]),
        ValueError,
        r"`X` must have shape \(num_points, dimension\), got shape \(8,\)",
    ),
    case(
        "kernels.SquaredExponential-active_dims-5-on-2-columns",
        lambda: gp.condition(kernels.SquaredExponential(active_dims=(5,)), MEAN, X, Y, 1e-2),
        ValueError,
        r"`active_dims` \(5,\) refers to column 5, but the inputs have 2 columns.*indices 0 to 1",
    ),
    case(
        "kernels.SquaredExponential-active_dims-7-on-2-columns",
        lambda: gp.condition(kernels.SquaredExponential(active_dims=(7,)), MEAN, X, Y, 0.1),
        ValueError,
        r"`active_dims` \(7,\) refers to column 7",
    ),
    case(
        "kernels.ProductMatern-active_dims-2-on-2-columns",
        lambda: gp.condition(kernels.ProductMatern(2.5, active_dims=(2,)), MEAN, X, Y, 0.1),
        ValueError,
        r"`active_dims` \(2,\) refers to column 2",
    ),
    case(
        "sparse.condition-Matern32-active_dims-9",
        lambda: sparse.condition(kernels.Matern32(active_dims=(9,)), MEAN, X, Y, 0.1, X[:5]),
        ValueError,
        r"`active_dims` \(9,\) refers to column 9",
    ),
    case(
        "kernels.Matern32.gram-active_dims-3-on-2-columns",
        lambda: kernels.Matern32(active_dims=(3,)).gram(X),
        ValueError,
        r"`active_dims` \(3,\) refers to column 3",
    ),
    case(
        "kernels.Matern12-active_dims-negative",
        lambda: kernels.Matern12(active_dims=(-1,)),
        ValueError,
        r"`active_dims` must be None \(all columns\) or distinct column indices ≥ 0, got \(-1,\)",
    ),
    case(
        "kernels.SquaredExponential-active_dims-repeated",
        lambda: kernels.SquaredExponential(lengthscale=jnp.ones(2), active_dims=(0, 0, 1)),
        ValueError,
        r"`active_dims` must be .*distinct column indices",
    ),
    case(
        "kernels.White-active_dims-not-integers",
        lambda: kernels.White(active_dims=(0.5,)),
        ValueError,
        r"`active_dims` must be .*, got \(0.5,\)",
    ),
    case(
        "kernels.Periodic-active_dims-empty",
        lambda: kernels.Periodic(active_dims=()),
        ValueError,
        r"`active_dims` must be .*, got \(\)",
    ),
    # ---- sparse ----
    case(
        "sparse.condition-zero-noise",  # D⁻¹ enters the SGPR posterior: 0 is not representable
        lambda: sparse.condition(KERNEL, MEAN, X, Y, 0.0, X[:3]),
        eqx.EquinoxRuntimeError,
        r"sparse.condition: `noise_variance` must be finite and strictly positive",
    ),
    case(
        "sparse.condition-Z-3-columns",
        lambda: sparse.condition(KERNEL, MEAN, X, Y, 1e-2, jnp.zeros((4, 3))),
        ValueError,
        r"`Z` has 3 columns \(shape \(4, 3\)\) but 2 were expected",
    ),
    case(
        "sparse.condition-Z-empty",
        lambda: sparse.condition(KERNEL, MEAN, X, Y, 1e-2, jnp.zeros((0, 2))),
        ValueError,
        r"`Z` has no rows",
    ),
    case(
        "sparse.condition-complex-y",
        lambda: sparse.condition(KERNEL, MEAN, X, Y.astype(jnp.complex128), 1e-2, X[:4]),
        ValueError,
        r"`y` must be real",
    ),
    # ---- mixtures ----
    case(
        "mixtures.GaussianMixture.from_moments-negative-weight",
        lambda: mixtures.GaussianMixture.from_moments(jnp.array([1.5, -0.5]), jnp.zeros((2, 2)), jnp.ones((2, 2))),
        eqx.EquinoxRuntimeError,
        r"`weights` must be finite and strictly positive",
    ),
    case(
        "mixtures.GaussianMixture.from_moments-zero-weights",
        lambda: mixtures.GaussianMixture.from_moments(jnp.zeros(2), jnp.zeros((2, 2)), jnp.ones((2, 2))),
        eqx.EquinoxRuntimeError,
        r"`weights` must be finite and strictly positive",
    ),
    case(
        "mixtures.GaussianMixture.from_moments-negative-variance",
        lambda: mixtures.GaussianMixture.from_moments(
            jnp.array([0.5, 0.5]), jnp.zeros((2, 2)), jnp.array([[1.0, -1.0], [1.0, 1.0]])
        ),
        eqx.EquinoxRuntimeError,
        r"`variances` must be finite and strictly positive",
    ),
    case(
        "mixtures.GaussianMixture.from_moments-mask-all-false",
        lambda: mixtures.GaussianMixture.from_moments(
            jnp.ones(2), jnp.zeros((2, 2)), jnp.ones((2, 2)), mask=jnp.zeros(2, bool)
        ),
        ValueError,
        r"`mask` must mark at least one component as active",
    ),
    case(
        "mixtures.GaussianMixture.from_moments-mask-all-false-under-jit",
        lambda: eqx.filter_jit(
            lambda mask: mixtures.GaussianMixture.from_moments(jnp.ones(2), jnp.zeros((2, 2)), jnp.ones((2, 2)), mask)
        )(jnp.zeros(2, bool)),
        eqx.EquinoxRuntimeError,
        r"`mask` must mark at least one component as active",
    ),
    case(
        "mixtures.GaussianMixture.from_moments-mask-3-for-2",
        lambda: mixtures.GaussianMixture.from_moments(
            jnp.ones(2), jnp.zeros((2, 2)), jnp.ones((2, 2)), mask=jnp.ones(3, bool)
        ),
        ValueError,
        r"`mask` must have shape \(2,\), got shape \(3,\)",
    ),
    case(
        "mixtures.GaussianMixture.from_moments-complex-means",
        lambda: mixtures.GaussianMixture.from_moments(jnp.ones(2), jnp.zeros((2, 2), jnp.complex128), jnp.ones((2, 2))),
        ValueError,
        r"`means` must be real",
    ),
    case(
        "mixtures.GaussianMixture.sample-int-key",
        lambda: MIXTURE.sample(0, 5),
        TypeError,
        r"`key` must be a JAX PRNG key, e.g. `jax.random.key\(0\)`.*got int 0",
    ),
    case(
        "mixtures.GaussianMixture.stratified_sample-int-key",
        lambda: MIXTURE.stratified_sample(3, 5),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    case(
        "mixtures.GaussianMixture.log_prob-x-3-coordinates",
        lambda: MIXTURE.log_prob(jnp.zeros(3)),
        ValueError,
        r"`x` must have a last axis of size 2, got shape \(3,\)",
    ),
    case(
        "mixtures.MultivariateNormal.log_prob-x-3-coordinates",
        lambda: mixtures.MultivariateNormal(jnp.zeros(2), jnp.eye(2)).log_prob(jnp.zeros(3)),
        ValueError,
        r"`x` must have a last axis of size 2",
    ),
    case(
        "mixtures.MultivariateNormal.sample-int-key",
        lambda: mixtures.MultivariateNormal(jnp.zeros(2), jnp.eye(2)).sample(1, 4),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    # ---- likelihoods, priors, transforms ----
    case(
        "likelihoods.Bernoulli.log_prob-labels-minus-one-one",
        lambda: likelihoods.Bernoulli().log_prob(jnp.array([1.0, -1.0, 1.0, -1.0]), jnp.array([2.0, -2.0, 1.0, -1.0])),
        ValueError,
        r"`y` must hold Bernoulli labels in \{0, 1\} \(for labels in \{-1, 1\} pass \(y \+ 1\) / 2\), "
        r"got the values \[-1.0, 1.0\]",
    ),
    case(
        "likelihoods.Bernoulli.log_prob-labels-zero-two",
        lambda: likelihoods.Bernoulli().log_prob(jnp.array([0.0, 2.0]), jnp.zeros(2)),
        ValueError,
        r"`y` must hold Bernoulli labels in \{0, 1\}.*got the values \[0.0, 2.0\]",
    ),
    case(
        "likelihoods.Bernoulli.log_prob-labels-zero-two-under-jit",
        lambda: eqx.filter_jit(likelihoods.Bernoulli().log_prob)(jnp.array([0.0, 2.0]), jnp.zeros(2)),
        eqx.EquinoxRuntimeError,
        r"`y` must hold Bernoulli labels in \{0, 1\}",
    ),
    case(
        "likelihoods.Bernoulli.log_predictive_density-labels-minus-one-one",
        lambda: likelihoods.Bernoulli().log_predictive_density(jnp.array([-1.0, 1.0]), jnp.zeros(2), jnp.ones(2)),
        ValueError,
        r"`y` must hold Bernoulli labels in \{0, 1\}",
    ),
    case(
        "likelihoods.Bernoulli.expected_log_prob-labels-zero-two",
        lambda: likelihoods.Bernoulli(link="logit").expected_log_prob(jnp.array([0.0, 2.0]), jnp.zeros(2), jnp.ones(2)),
        ValueError,
        r"`y` must hold Bernoulli labels in \{0, 1\}",
    ),
    case(
        "likelihoods.Logistic.log_prob-labels-zero-two",
        lambda: likelihoods.Logistic().log_prob(jnp.array([0.0, 2.0]), jnp.zeros(2)),
        ValueError,
        r"`y` must hold class labels in \{-1, 1\} or in \{0, 1\}",
    ),
    case(
        "likelihoods.Gaussian.log_prob-complex-y",
        lambda: likelihoods.Gaussian().log_prob(jnp.array([1.0 + 1j]), jnp.zeros(1)),
        ValueError,
        r"`y` must be real",
    ),
    case(
        "likelihoods.StudentT-negative-degrees_of_freedom",
        lambda: likelihoods.StudentT(degrees_of_freedom=-3.0),
        ValueError,
        r"`degrees_of_freedom` must be > 0 \(a Positive parameter\), got -3.0",
    ),
    case(
        "priors.Gamma-negative-shape",
        lambda: priors.Gamma(-1.0, 2.0),
        ValueError,
        r"Gamma `shape` must be > 0, got -1.0",
    ),
    case(
        "transforms.BoundedTransform-lower-above-upper",
        lambda: transforms.BoundedTransform(jnp.array([0.0, 5.0]), jnp.array([1.0, 1.0])),
        ValueError,
        r"`lower_bounds` must be strictly smaller than `upper_bounds`.*coordinates \[1\]",
    ),
    # ---- quadrature ----
    case(
        "quadrature.integrate-measure-3d-posterior-2d",
        lambda: quadrature.integrate(
            POSTERIOR, mixtures.GaussianMixture.from_moments(jnp.ones(1), jnp.zeros((1, 3)), jnp.ones((1, 3)))
        ),
        ValueError,
        r"`measure` has dimension 3 but the posterior's inputs have 2",
    ),
    case(
        "gpcompose.elbo-int-key",
        lambda: gpcompose.elbo(POSTERIOR, MIXTURE, 0, 10),
        TypeError,
        r"`key` must be a JAX PRNG key.*got int 0",
    ),
    case(
        "gpcompose.elbo-float-array-key",
        lambda: gpcompose.elbo(POSTERIOR, MIXTURE, jnp.zeros(2), 10),
        TypeError,
        r"`key` must be a JAX PRNG key.*dtype float64",
    ),
    # ---- drivers ----
    case(
        "gpcompose.run-negative-num_steps",
        lambda: gpcompose.run(standard_svgd(), standard_svgd().init(jnp.ones((4, 2))), KEY, -1),
        ValueError,
        r"`num_steps` must be a non-negative int, got -1",
    ),
    case(
        "gpcompose.run-int-key",
        lambda: gpcompose.run(standard_svgd(), standard_svgd().init(jnp.ones((4, 2))), 0, 2),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    case(
        "svgd.SVGD.init-nan-particle",
        lambda: standard_svgd().init(jnp.ones((4, 2)).at[0, 0].set(jnp.nan)),
        ValueError,
        r"`particles` contains NaN or infinite values",
    ),
    case(
        "gpcompose.run_black_box-int-key",
        lambda: gpcompose.run_black_box(
            bo.BO(), log_density, bo.BO().init(np.zeros((0, 2)), np.zeros(0), [-1.0, -1.0], [1.0, 1.0], budget=4), 0
        ),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    # ---- bvbmc ----
    case(
        "bvbmc.fit-X-1d",
        lambda: bvbmc.fit(log_density, X0[:, 0], key=KEY, budget=3),
        ValueError,
        r"`X` must have shape \(num_points, dimension\), got shape \(12,\)",
    ),
    case(
        "bvbmc.fit-int-key",
        lambda: bvbmc.fit(log_density, X0, key=0, budget=3),
        TypeError,
        r"`key` must be a JAX PRNG key.*got int 0",
    ),
    case(
        "bvbmc.fit-negative-budget",
        lambda: bvbmc.fit(log_density, X0, key=KEY, budget=-1),
        ValueError,
        r"`budget` must be a non-negative int, got -1",
    ),
    case(
        "bvbmc.fit-target-always-nan",
        lambda: bvbmc.fit(always_nan, X0, key=KEY, budget=3),
        ValueError,
        r"at least 2 finite initial evaluations \(rows of `X` and `y` without NaN or ±inf\), got 0",
    ),
    case(
        "bvbmc.BVBMC-acquisitions-strings",
        lambda: bvbmc.BVBMC(acquisitions=("foo",)),
        ValueError,
        r"`acquisitions` must hold BVBMC acquisitions",
    ),
    case(
        "bvbmc.BVBMC-kernel-a-string",
        lambda: bvbmc.BVBMC(kernel="rbf"),
        ValueError,
        r"`kernel` must be an AbstractKernel or None, got str",
    ),
    case(
        "bvbmc.BVBMC.init-y-shorter-than-X",
        lambda: bvbmc.BVBMC().init(X0, Y0[:11], budget=3, key=KEY),
        ValueError,
        r"`y` must have shape \(12,\) to match X \(12, 2\), got shape \(11,\)",
    ),
    case(
        "bvbmc.BVBMC.init-float-budget",
        lambda: bvbmc.BVBMC().init(X0, Y0, budget=2.5, key=KEY),
        ValueError,
        r"`budget` must be a non-negative int, got 2.5",
    ),
    case(
        "bvbmc.BVBMC.init-int-key",
        lambda: bvbmc.BVBMC().init(X0, Y0, budget=3, key=7),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    case(
        "bvbmc.BVBMC.init-complex-y",
        lambda: bvbmc.BVBMC().init(X0, Y0 + 1j, budget=3, key=KEY),
        ValueError,
        r"`y` must be real",
    ),
    # ---- svbmc ----
    case(
        "svbmc.fit-lower-above-upper",
        lambda: svbmc.fit(log_density, X0, Y0, key=KEY, budget=4, lower_bounds=[0.0, 5.0], upper_bounds=[1.0, 1.0]),
        ValueError,
        r"`lower_bounds` must be strictly smaller than `upper_bounds` in every coordinate; violated at \[1\]",
    ),
    case(
        "svbmc.fit-negative-budget",
        lambda: svbmc.fit(log_density, X0, Y0, key=KEY, budget=-1),
        ValueError,
        r"`budget` must be a non-negative int, got -1",
    ),
    case(
        "svbmc.fit-y-shorter-than-X",
        lambda: svbmc.fit(log_density, X0, Y0[:11], key=KEY, budget=4),
        ValueError,
        r"`y` must have shape \(12,\) to match X \(12, 2\), got shape \(11,\)",
    ),
    case(
        "svbmc.fit-lower_bounds-3-for-2",
        lambda: svbmc.fit(log_density, X0, Y0, key=KEY, budget=4, lower_bounds=[-9.0, -9.0, -9.0]),
        ValueError,
        r"`lower_bounds` must have shape \(2,\) to match X, got shape \(3,\)",
    ),
    case(
        "svbmc.fit-int-key",
        lambda: svbmc.fit(log_density, X0, Y0, key=0, budget=4),
        TypeError,
        r"`key` must be a JAX PRNG key.*got int 0",
    ),
    case(
        "svbmc.SVBMC-zero-batch_size",
        lambda: svbmc.SVBMC(batch_size=0),
        ValueError,
        r"`batch_size` must be positive, got 0",
    ),
    case(
        "svbmc.SVBMC-acquisition-a-string",
        lambda: svbmc.SVBMC(acquisition="foo"),
        ValueError,
        r"`acquisition` must be None or an SVBMC acquisition module",
    ),
    case(
        "svbmc.SVBMC.init-all-X-outside-bounds",
        lambda: svbmc.SVBMC().init(X0, Y0, budget=4, key=KEY, lower_bounds=[10.0, 10.0], upper_bounds=[20.0, 20.0]),
        ValueError,
        r"at least 2 usable initial evaluations \(rows of `X` and `y` that are finite and strictly inside "
        r"`lower_bounds`, `upper_bounds`\), got 0",
    ),
    case(
        "svbmc.SVBMC.init-noise_sd-5-for-12",
        lambda: svbmc.SVBMC().init(X0, Y0, budget=4, key=KEY, noise_sd=np.ones(5)),
        ValueError,
        r"`noise_sd` must be a scalar or have shape \(12,\), got shape \(5,\)",
    ),
    case(
        "svbmc.SVBMC.init-y-all-nan",
        lambda: svbmc.SVBMC().init(X0, np.full(12, np.nan), budget=4, key=KEY),
        ValueError,
        r"at least 2 usable initial evaluations \(rows of `X` and `y`",
    ),
    case(
        "svbmc.SVBMC.init-complex-X",
        lambda: svbmc.SVBMC().init(X0 + 1j, Y0, budget=4, key=KEY),
        ValueError,
        r"`X` must be real",
    ),
    case(
        "svbmc.SVBMC.init-complex-lower_bounds",
        lambda: svbmc.SVBMC().init(X0, Y0, budget=4, key=KEY, lower_bounds=np.full(2, -10.0) + 1j),
        ValueError,
        r"`lower_bounds` must be real",
    ),
    # ---- bo ----
    case(
        "bo.BO.init-complex-f_plus",
        lambda: bo.BO().init(NO_X, NO_Y, np.zeros(2), np.ones(2), budget=3, f_plus=1.0 + 1j),
        ValueError,
        r"`f_plus` must be real",
    ),
    case(
        "bo.BO.tell-complex-y",
        lambda: bo.BO().tell(BO_STATE, jnp.array([0.5, 0.5]), 1.0 + 2j),
        ValueError,
        r"`y` must be real",
    ),
    case(
        "bo.BO.tell-complex-x",
        lambda: bo.BO().tell(BO_STATE, jnp.array([0.5 + 1j, 0.5]), 1.0),
        ValueError,
        r"`x` must be real",
    ),
    case(
        "run_traceable-complex-target",
        lambda: gpcompose.run_traceable(RANDOM_SEARCH, lambda x: jnp.sum(x).astype(jnp.complex128), RANDOM_STATE, KEY),
        ValueError,
        r"`target\(x\)` must be real",
    ),
    case(
        "bo.BO-acquisition-a-string",
        lambda: bo.BO(acquisition="foo"),
        ValueError,
        r"`acquisition` must be an acquisition module such as `bo.ExpectedImprovement\(\)`",
    ),
    case(
        "bo.BO-zero-initial_design_size",
        lambda: bo.BO(initial_design_size=0),
        ValueError,
        r"`initial_design_size` must be None or a positive int, got 0",
    ),
    case(
        "bo.maximize-lower-above-upper",
        lambda: bo.maximize(log_density, [0.0, 5.0], [1.0, 1.0], key=KEY, budget=5),
        ValueError,
        r"`lower` must be < `upper` in every coordinate, got lower=\[0.0, 5.0\], upper=\[1.0, 1.0\]",
    ),
    case(
        "bo.maximize-zero-budget",
        lambda: bo.maximize(log_density, [-1.0, -1.0], [1.0, 1.0], key=KEY, budget=0),
        ValueError,
        r"`budget` \(0\) plus the 0 given evaluations must exceed the initial design size \(2\)",
    ),
    case(
        "bo.maximize-negative-budget",
        lambda: bo.maximize(log_density, [-1.0, -1.0], [1.0, 1.0], key=KEY, budget=-3),
        ValueError,
        r"`budget` \(-3\)",
    ),
    case(
        "bo.maximize-lower-2-upper-3",
        lambda: bo.maximize(log_density, [-1.0, -1.0], [1.0, 1.0, 1.0], key=KEY, budget=5),
        ValueError,
        r"`upper` must have shape \(2,\), got shape \(3,\)",
    ),
    case(
        "bo.maximize-infinite-lower",
        lambda: bo.maximize(log_density, [-np.inf, -1.0], [1.0, 1.0], key=KEY, budget=5),
        ValueError,
        r"`lower` and `upper` must be finite \(a box sampled uniformly\), got lower=\[-inf, -1.0\]",
    ),
    case(
        "bo.maximize-infinite-upper",
        lambda: bo.maximize(log_density, [-1.0, -1.0], [1.0, np.inf], key=KEY, budget=5),
        ValueError,
        r"`lower` and `upper` must be finite",
    ),
    case(
        "bo.maximize-f_minus-above-f_plus",
        lambda: bo.maximize(log_density, [-1.0, -1.0], [1.0, 1.0], key=KEY, budget=5, f_plus=0.0, f_minus=1.0),
        ValueError,
        r"`f_minus` \(1.0\) must be smaller than `f_plus` \(0.0\)",
    ),
    case(
        "bo.maximize-negative-eta_plus",
        lambda: bo.maximize(log_density, [-1.0, -1.0], [1.0, 1.0], key=KEY, budget=5, f_plus=0.0, eta_plus=-1.0),
        ValueError,
        r"`eta_plus` must be strictly positive, got -1.0",
    ),
    case(
        "bo.maximize-int-key",
        lambda: bo.maximize(log_density, [-1.0, -1.0], [1.0, 1.0], key=0, budget=5),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    case(
        "bo.BO.init-bounded-entropy-search-without-bounds",
        lambda: bo.BO(acquisition=bo.BoundedEntropySearch()).init(
            np.zeros((0, 2)), np.zeros(0), [-1.0, -1.0], [1.0, 1.0], budget=5
        ),
        ValueError,
        r"BoundedEntropySearch needs `f_plus`, `f_minus` or both",
    ),
    case(
        "bo.BO.init-expected-regret-minimization-without-f_plus",
        lambda: bo.BO(acquisition=bo.ExpectedRegretMinimization()).init(
            np.zeros((0, 2)), np.zeros(0), [-1.0, -1.0], [1.0, 1.0], budget=5
        ),
        ValueError,
        r"ExpectedRegretMinimization needs `f_plus`",
    ),
    case(
        "bo.BO.init-complex-y",
        lambda: bo.BO().init(X0, Y0 + 1j, [-9.0, -9.0], [9.0, 9.0], budget=5),
        ValueError,
        r"`y` must be real",
    ),
    # ---- aaci / steingp ----
    case(
        "aaci.fit-logistic-labels-zero-two",
        lambda: aaci.fit(
            X_CLASS, 2 * Y_CLASS, key=KEY, likelihood=likelihoods.Logistic(), kernel=kernels.SquaredExponential()
        ),
        ValueError,
        r"`y` must hold class labels in \{-1, 1\} or in \{0, 1\}",
    ),
    case(
        "aaci.fit-y-shorter-than-X",
        lambda: aaci.fit(
            X_CLASS, Y_CLASS[:19], key=KEY, likelihood=likelihoods.Logistic(), kernel=kernels.SquaredExponential()
        ),
        ValueError,
        r"`y` must have shape \(20,\) to match the inputs, got shape \(19,\)",
    ),
    case(
        "aaci.fit-int-key",
        lambda: aaci.fit(
            X_CLASS, Y_CLASS, key=0, likelihood=likelihoods.Logistic(), kernel=kernels.SquaredExponential()
        ),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    case(
        "steingp.fit-bernoulli-labels-minus-one-one",
        lambda: steingp.fit(
            X_CLASS,
            2 * Y_CLASS - 1,
            key=KEY,
            kernel=kernels.SquaredExponential(),
            likelihood=likelihoods.Bernoulli(),
            num_particles=2,
            num_steps=2,
        ),
        ValueError,
        r"`y` must hold Bernoulli labels in \{0, 1\}",
    ),
    case(
        "steingp.fit-int-key",
        lambda: steingp.fit(
            X_CLASS, Y_CLASS, key=0, kernel=kernels.SquaredExponential(), likelihood=likelihoods.Bernoulli()
        ),
        TypeError,
        r"`key` must be a JAX PRNG key",
    ),
    case(
        "steingp.fit-complex-y",
        lambda: steingp.fit(
            X_CLASS,
            Y_CLASS.astype(jnp.complex128),
            key=KEY,
            kernel=kernels.SquaredExponential(),
            likelihood=likelihoods.Gaussian(),
        ),
        ValueError,
        r"`y` must be real",
    ),
]


@pytest.mark.parametrize("call, exception, match", ERROR_CASES)
def test_bad_input_raises_naming_the_argument(call, exception, match):
    with warnings.catch_warnings():
        # BVBMC and SVBMC warn about each failed evaluation and dropped row before they raise.
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(exception, match=match):
            call()


def _lml(posterior):
    return float(gp.log_marginal_likelihood(posterior))


def integer_inputs_and_targets():
    posterior = gp.condition(KERNEL, MEAN, X_INT, jnp.array([1, 2, 3]), 1e-2)
    reference = gp.condition(KERNEL, MEAN, X_INT.astype(jnp.float64), jnp.array([1.0, 2.0, 3.0]), 1e-2)
    assert posterior.observations.inputs.dtype == jnp.float64
    np.testing.assert_allclose(_lml(posterior), _lml(reference), rtol=1e-12)


def integer_inputs_keep_float_targets_and_noise():
    observations = gp.condition(KERNEL, MEAN, X_INT, Y_FLOAT, 1.5).observations
    np.testing.assert_array_equal(observations.targets, [0.3, 1.7, 2.5])
    np.testing.assert_array_equal(observations.noise_variance, [1.5, 1.5, 1.5])


def integer_inputs_keep_float_targets_and_noise_sparse():
    observations = sparse.condition(KERNEL, MEAN, X_INT, Y_FLOAT, 1.5, X_INT).observations
    np.testing.assert_array_equal(observations.targets, [0.3, 1.7, 2.5])
    np.testing.assert_array_equal(observations.noise_variance, [1.5, 1.5, 1.5])


def integer_inputs_small_noise():
    posterior = gp.condition(KERNEL, MEAN, X_INT, Y_FLOAT, 1e-2)
    np.testing.assert_array_equal(posterior.observations.noise_variance, [1e-2] * 3)
    assert np.isfinite(_lml(posterior))


def zero_noise_is_a_flagged_noise_free_posterior():
    """Noise variance 0 is a noise-free GP, not a bad value: it is conditioned (so that one
    such member of a `vmap`ped batch does not stop the others) and flagged by its own code."""
    posterior = gp.condition(KERNEL, MEAN, X, Y, 0.0)
    assert posterior.result == gpcompose.RESULTS.zero_noise_variance
    np.testing.assert_allclose(gp.predict(posterior, X)[0], Y, atol=1e-8)


def integer_query_points():
    posterior = gp.condition(KERNEL, MEAN, X_INT.astype(jnp.float64), Y_FLOAT, 0.1)
    mean, variance = gp.predict(posterior, jnp.array([[1, 2]]))
    expected_mean, expected_variance = gp.predict(posterior, jnp.array([[1.0, 2.0]]))
    np.testing.assert_array_equal(mean, expected_mean)
    np.testing.assert_array_equal(variance, expected_variance)


def float32_inputs_float64_targets_and_kernel():
    posterior = gp.condition(KERNEL, MEAN, X.astype(jnp.float32), Y, 1e-2)
    reference = gp.condition(KERNEL, MEAN, X.astype(jnp.float32).astype(jnp.float64), Y, 1e-2)
    assert posterior.observations.inputs.dtype == jnp.float64
    np.testing.assert_allclose(_lml(posterior), _lml(reference), rtol=1e-12)


def all_rows_masked_is_the_prior():
    posterior = gp.condition(KERNEL, MEAN, X, Y, 0.1, mask=jnp.zeros(8, bool))
    mean, variance = gp.predict(posterior, X[:2])
    assert _lml(posterior) == 0.0
    np.testing.assert_allclose(mean, 0.0, atol=1e-15)
    np.testing.assert_allclose(variance, 1.0, rtol=1e-12)


def nan_query_row_gives_nan_for_that_row_only():
    mean, variance = gp.predict(POSTERIOR, jnp.array([[0.0, jnp.nan], [0.0, 0.0]]))
    alone_mean, alone_variance = gp.predict(POSTERIOR, jnp.array([[0.0, 0.0]]))
    assert np.isnan(mean[0]) and np.isnan(variance[0])
    np.testing.assert_allclose([mean[1], variance[1]], [alone_mean[0], alone_variance[0]], rtol=1e-12)


def mixture_weights_are_renormalised():
    mixture = mixtures.GaussianMixture.from_moments(jnp.array([0.2, 0.2]), jnp.zeros((2, 2)), jnp.ones((2, 2)))
    np.testing.assert_allclose(mixture.weights, [0.5, 0.5], rtol=1e-12)


def mixture_with_integer_means_keeps_float_weights():
    mixture = mixtures.GaussianMixture.from_moments(jnp.array([0.25, 0.75]), jnp.zeros((2, 2), int), jnp.ones((2, 2)))
    np.testing.assert_allclose(mixture.weights, [0.25, 0.75], rtol=1e-12)


def mixture_accepts_raw_uint32_key():
    samples = MIXTURE.sample(jax.random.PRNGKey(0), 5)
    assert samples.shape == (5, 2) and np.all(np.isfinite(samples))


def logistic_converts_zero_one_labels():
    f = jnp.array([-2.0, 2.0])
    converted = likelihoods.Logistic().log_prob(jnp.array([0.0, 1.0]), f)
    np.testing.assert_allclose(converted, likelihoods.Logistic().log_prob(jnp.array([-1.0, 1.0]), f), rtol=1e-12)


def bernoulli_with_integer_labels():
    f = jnp.array([2.0, -2.0])
    np.testing.assert_allclose(
        likelihoods.Bernoulli().log_prob(jnp.array([1, 0]), f),
        likelihoods.Bernoulli().log_prob(jnp.array([1.0, 0.0]), f),
        rtol=1e-12,
    )


def maximize_of_an_always_nan_objective_says_so():
    found = gpcompose.maximize(lambda p, data: jnp.nan * jnp.sum(p["kernel"].lengthscale.value), {"kernel": KERNEL})
    assert found.result == gpcompose.RESULTS.nonfinite_objective
    assert "`objective`" in gpcompose.RESULTS[found.result]


def bo_ask_accepts_raw_uint32_key():
    learner = bo.BO(acquisition=bo.RandomSearch())
    state = learner.init(np.zeros((0, 2)), np.zeros(0), [-1.0, -1.0], [1.0, 1.0], budget=4)
    x, _ = learner.ask(state, jax.random.PRNGKey(0))
    assert x.shape == (2,) and np.all(np.abs(np.asarray(x)) <= 1.0)


def black_box_target_returning_complex_is_a_failed_evaluation():
    """The host driver records a complex, string or multi-valued output as a failed
    evaluation (with a warning), and goes on: no imaginary part is dropped silently."""
    for output in (1.0 + 2j, "abc", np.ones(3)):
        with pytest.warns(RuntimeWarning, match="not a real number; recorded as failed"):
            state = gpcompose.run_black_box(RANDOM_SEARCH, lambda x, output=output: output, RANDOM_STATE, KEY)
        assert int(state.evaluations.num_failed) == 3


VALUE_CASES = [
    pytest.param(check, id=check.__name__.replace("_", "-"))
    for check in [
        integer_inputs_and_targets,
        integer_inputs_keep_float_targets_and_noise,
        integer_inputs_keep_float_targets_and_noise_sparse,
        integer_inputs_small_noise,
        zero_noise_is_a_flagged_noise_free_posterior,
        integer_query_points,
        float32_inputs_float64_targets_and_kernel,
        all_rows_masked_is_the_prior,
        nan_query_row_gives_nan_for_that_row_only,
        mixture_weights_are_renormalised,
        mixture_with_integer_means_keeps_float_weights,
        mixture_accepts_raw_uint32_key,
        logistic_converts_zero_one_labels,
        bernoulli_with_integer_labels,
        maximize_of_an_always_nan_objective_says_so,
        bo_ask_accepts_raw_uint32_key,
        black_box_target_returning_complex_is_a_failed_evaluation,
    ]
]


@pytest.mark.parametrize("check", VALUE_CASES)
def test_formerly_silent_input_gives_the_right_value(check):
    check()


def test_every_argument_check_is_listed():
    assert len(ERROR_CASES) + len(VALUE_CASES) >= 95
