"""Tests of `gpcompose.kernels`: positive semi-definiteness, closed forms written
independently in numpy/scipy, kernel algebra, `active_dims`, argument checks and the
jit/vmap/grad transforms."""

import contextlib
import math

import equinox as eqx
import hypothesis
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import jaxtyping
import numpy as np
import pytest
import scipy.special

from gpcompose.kernels import (
    AbstractKernel,
    Constant,
    Linear,
    Matern12,
    Matern32,
    Matern52,
    Periodic,
    Polynomial,
    Product,
    ProductMatern,
    RationalQuadratic,
    SquaredExponential,
    Sum,
    White,
)

D = 3
LENGTHSCALE = np.array([0.7, 1.3, 2.0])
MATERNS = {0.5: Matern12, 1.5: Matern32, 2.5: Matern52}


def _kernels() -> dict[str, AbstractKernel]:
    """One instance of every kernel of the package (and of the algebra) on D = 3 inputs."""
    ls = jnp.asarray(LENGTHSCALE)
    return {
        "squared_exponential": SquaredExponential(lengthscale=ls, variance=1.5),
        "matern12": Matern12(lengthscale=ls, variance=0.8),
        "matern32": Matern32(lengthscale=ls, variance=1.1),
        "matern52": Matern52(lengthscale=ls, variance=2.3),
        "product_matern12": ProductMatern(0.5, lengthscale=ls, variance=0.9),
        "product_matern32": ProductMatern(1.5, lengthscale=ls, variance=1.2),
        "product_matern52": ProductMatern(2.5, lengthscale=ls, variance=1.7),
        "rational_quadratic": RationalQuadratic(lengthscale=0.9, variance=1.2, mixture=0.6),
        "periodic": Periodic(
            lengthscale=jnp.asarray([0.8, 1.5, 1.0]), period=jnp.asarray([1.3, 2.0, 0.7]), variance=1.4
        ),
        "linear": Linear(variance=jnp.asarray([0.5, 1.0, 2.0])),
        "polynomial": Polynomial(3, variance=0.4, offset=0.8),
        "white": White(variance=0.3),
        "constant": Constant(variance=2.0),
        "sum": SquaredExponential(lengthscale=0.8) + Periodic(period=1.7),
        "product": Matern32(lengthscale=1.4) * Linear(variance=0.6),
        "scaled": 2.5 * Matern52(lengthscale=ls),
        "active_dims": SquaredExponential(lengthscale=jnp.asarray([0.5, 1.5]), active_dims=(0, 2))
        * Matern12(lengthscale=0.9, active_dims=(1,)),
    }


KERNELS = _kernels()


@contextlib.contextmanager
def _without_runtime_typechecks():
    """Disable jaxtyping's runtime checks (if the import hook is on) so that the library's
    own argument checks run, as they do for a user without the hook."""
    jaxtyping.config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping.config.update("jaxtyping_disable", False)


@eqx.filter_jit
def _evaluations(kernel, X, X2):
    """gram, cross and diagonal in one compiled function (compiled once per kernel type
    and shape, shared by the tests below)."""
    return {"gram": kernel.gram(X), "cross": kernel.cross(X, X2), "diagonal": kernel.diagonal(X)}


def _cross(kernel, X1, X2):
    """`kernel.cross(X1, X2)` through the shared compiled function (X1 of 8 rows)."""
    return np.asarray(_evaluations(kernel, jnp.asarray(X1), jnp.asarray(X2))["cross"])


def _inputs(seed, n=8, d=D, scale=1.0):
    return np.random.default_rng(seed).normal(size=(n, d)) * scale


def _pairwise_scaled_distance(X1, X2, lengthscale):
    diff = (X1[:, None, :] - X2[None, :, :]) / lengthscale
    return np.sqrt(np.sum(diff**2, axis=-1))


def _matern_numpy(smoothness, r):
    """k(r) = 2^{1−ν}/Γ(ν) (√(2ν) r)^ν K_ν(√(2ν) r), with k(0) = 1 (general-ν formula)."""
    r = np.asarray(r, dtype=np.float64)
    z = np.sqrt(2 * smoothness) * np.where(r > 0, r, 1.0)
    value = 2 ** (1 - smoothness) / math.gamma(smoothness) * z**smoothness * scipy.special.kv(smoothness, z)
    return np.where(r > 0, value, 1.0)


# ----------------------------------------------------------------------- PSD


_X_STRATEGY = hnp.arrays(
    np.float64,
    (8, D),
    elements=st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False, width=64),
)


@pytest.mark.parametrize("name", list(KERNELS))
@hypothesis.settings(max_examples=25, deadline=None, database=None)
@hypothesis.given(X=_X_STRATEGY)
def test_gram_is_symmetric_positive_semidefinite(name, X):
    K = np.asarray(_evaluations(KERNELS[name], jnp.asarray(X), jnp.asarray(X[:5]))["gram"])
    assert K.shape == (8, 8)
    assert np.all(np.isfinite(K))
    # Symmetry up to rounding (dot-product kernels sum in a different order). Stationary kernels
    # form r² from differences, so near-coincident points (hypothesis likes ±1e-5) keep it too;
    # with r² from the expansion |a|² + |b|² − 2aᵀb this failed at 3.1e-13 (aabdb9c's note).
    np.testing.assert_allclose(K, K.T, rtol=1e-13, atol=1e-14 * np.max(np.abs(K)))
    trace = np.trace(K)
    assert trace >= 0
    assert np.linalg.eigvalsh(K).min() >= -1e-8 * trace


# ------------------------------------------------------------- closed forms


@pytest.mark.parametrize("smoothness", [0.5, 1.5, 2.5])
def test_matern_matches_bessel_closed_form(smoothness):
    X1, X2 = _inputs(0), _inputs(1, n=5)
    variance = 1.7
    kernel = MATERNS[smoothness](lengthscale=jnp.asarray(LENGTHSCALE), variance=variance)
    result = _evaluations(kernel, jnp.asarray(X1), jnp.asarray(X2))
    expected = variance * _matern_numpy(smoothness, _pairwise_scaled_distance(X1, X2, LENGTHSCALE))
    np.testing.assert_allclose(result["cross"], expected, rtol=1e-12, atol=0)
    expected_gram = variance * _matern_numpy(smoothness, _pairwise_scaled_distance(X1, X1, LENGTHSCALE))
    np.testing.assert_allclose(result["gram"], expected_gram, rtol=1e-12, atol=0)
    np.testing.assert_allclose(result["diagonal"], np.full(8, variance), rtol=1e-15)


@pytest.mark.parametrize("smoothness", [0.5, 1.5])
def test_matern_scalar_lengthscale_is_isotropic(smoothness):
    X1, X2 = _inputs(2), _inputs(3, n=5)
    kernel = MATERNS[smoothness](lengthscale=0.6)
    expected = _matern_numpy(smoothness, _pairwise_scaled_distance(X1, X2, 0.6))
    np.testing.assert_allclose(_evaluations(kernel, jnp.asarray(X1), jnp.asarray(X2))["cross"], expected, rtol=1e-12)


def test_squared_exponential_matches_numpy():
    X1, X2 = _inputs(4), _inputs(5, n=5)
    result = _evaluations(KERNELS["squared_exponential"], jnp.asarray(X1), jnp.asarray(X2))
    r = _pairwise_scaled_distance(X1, X2, LENGTHSCALE)
    np.testing.assert_allclose(result["cross"], 1.5 * np.exp(-0.5 * r**2), rtol=1e-13, atol=0)


@pytest.mark.parametrize("smoothness", [0.5, 1.5, 2.5])
def test_product_matern_is_a_product_of_one_dimensional_materns(smoothness):
    X1, X2 = _inputs(6), _inputs(7, n=5)
    variance = 1.3
    kernel = ProductMatern(smoothness, lengthscale=jnp.asarray(LENGTHSCALE), variance=variance)
    result = _cross(kernel, X1, X2)
    # Independent closed form: Π_d ρ_ν(|x_d − x′_d| / ℓ_d).
    expected = variance * np.prod(
        [_matern_numpy(smoothness, np.abs(X1[:, None, d] - X2[None, :, d]) / LENGTHSCALE[d]) for d in range(D)],
        axis=0,
    )
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=0)
    # ... and the same kernel built from the library's 1-D Matérns with `active_dims`.
    one_dimensional = [MATERNS[smoothness](lengthscale=float(LENGTHSCALE[d]), active_dims=(d,)) for d in range(D)]
    built = variance * (one_dimensional[0] * one_dimensional[1] * one_dimensional[2])
    np.testing.assert_allclose(result, _cross(built, X1, X2), rtol=1e-13)


def test_product_matern_rejects_other_smoothness():
    with pytest.raises(ValueError, match="smoothness"):
        ProductMatern(1.0)


def test_rational_quadratic_matches_numpy_and_tends_to_squared_exponential():
    X1, X2 = _inputs(8), _inputs(9, n=5)
    lengthscale, variance = 0.9, 1.2
    r2 = _pairwise_scaled_distance(X1, X2, lengthscale) ** 2
    rq = RationalQuadratic(lengthscale=lengthscale, variance=variance, mixture=0.6)
    np.testing.assert_allclose(
        _evaluations(rq, jnp.asarray(X1), jnp.asarray(X2))["cross"],
        variance * (1 + r2 / (2 * 0.6)) ** -0.6,
        rtol=1e-13,
    )
    se = variance * np.exp(-0.5 * r2)
    errors = []
    for mixture in (1e2, 1e4, 1e6):
        rq = RationalQuadratic(lengthscale=lengthscale, variance=variance, mixture=mixture)
        difference = np.asarray(_evaluations(rq, jnp.asarray(X1), jnp.asarray(X2))["cross"]) - se
        errors.append(np.max(np.abs(difference)))
        if mixture >= 1e4:
            # (1 + r²/2α)^{−α} = e^{−r²/2} (1 + r⁴/(8α) + O(r⁸/α²)); here r² ≤ 31.
            np.testing.assert_allclose(
                mixture * difference, se * r2**2 / 8, rtol=1e-2 if mixture == 1e4 else 1e-4, atol=1e-9
            )
    assert errors[-1] < 1e-6 * variance
    assert errors[0] / errors[1] > 50 and errors[1] / errors[2] > 50


def test_periodic_matches_numpy():
    X1, X2 = _inputs(10), _inputs(11, n=5)
    kernel = KERNELS["periodic"]
    lengthscale, period = np.array([0.8, 1.5, 1.0]), np.array([1.3, 2.0, 0.7])
    diff = X1[:, None, :] - X2[None, :, :]
    expected = 1.4 * np.exp(-2 * np.sum(np.sin(np.pi * diff / period) ** 2 / lengthscale**2, axis=-1))
    np.testing.assert_allclose(_cross(kernel, X1, X2), expected, rtol=1e-13)
    # Periodicity: shifting one input by a whole period along each axis changes nothing.
    shifted = X2 + period * np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(_cross(kernel, X1, shifted), expected, rtol=1e-10)


def test_dot_product_kernels_match_numpy():
    X1, X2 = _inputs(12), _inputs(13, n=5)
    variance = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(_cross(KERNELS["linear"], X1, X2), X1 @ np.diag(variance) @ X2.T, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(
        _cross(KERNELS["polynomial"], X1, X2), (0.4 * X1 @ X2.T + 0.8) ** 3, rtol=1e-12, atol=1e-13
    )


def test_polynomial_rejects_bad_degree():
    with pytest.raises(ValueError, match="degree"):
        Polynomial(0)


def test_white_and_constant():
    X1 = _inputs(14)
    X1[3] = X1[1]  # a duplicated input is the same point for White
    X2 = _inputs(15, n=5)
    white = _evaluations(KERNELS["white"], jnp.asarray(X1), jnp.asarray(X2))
    expected = 0.3 * np.all(X1[:, None, :] == X1[None, :, :], axis=-1)
    np.testing.assert_allclose(white["gram"], expected, rtol=1e-15, atol=0)
    assert white["gram"][1, 3] > 0 and white["gram"][1, 2] == 0.0
    np.testing.assert_array_equal(white["cross"], np.zeros((8, 5)))
    constant = _evaluations(KERNELS["constant"], jnp.asarray(X1), jnp.asarray(X2))
    np.testing.assert_allclose(constant["cross"], np.full((8, 5), 2.0), rtol=1e-15)


# ------------------------------------------------------------------- algebra


def test_sum_and_product_evaluate_sum_and_product():
    X1, X2 = _inputs(16), _inputs(17, n=5)
    k1, k2 = KERNELS["squared_exponential"], KERNELS["periodic"]
    total, product = k1 + k2, k1 * k2
    assert isinstance(total, Sum) and isinstance(product, Product)
    assert total.left is k1 and total.right is k2
    c1, c2 = _cross(k1, X1, X2), _cross(k2, X1, X2)
    np.testing.assert_allclose(_cross(total, X1, X2), c1 + c2, rtol=1e-15)
    np.testing.assert_allclose(_cross(product, X1, X2), c1 * c2, rtol=1e-15)
    # Nested algebra.
    nested = (k1 + k2) * k1 + k2
    np.testing.assert_allclose(_cross(nested, X1, X2), (c1 + c2) * c1 + c2, rtol=1e-14)


def test_scaling_by_a_constant():
    X1, X2 = _inputs(18), _inputs(19, n=5)
    kernel = KERNELS["matern32"]
    reference = _evaluations(kernel, jnp.asarray(X1), jnp.asarray(X2))
    for scaled in (2.5 * kernel, kernel * 2.5):
        assert isinstance(scaled, Product)
        result = _evaluations(scaled, jnp.asarray(X1), jnp.asarray(X2))
        np.testing.assert_allclose(result["cross"], 2.5 * np.asarray(reference["cross"]), rtol=1e-15)
        np.testing.assert_allclose(result["diagonal"], np.full(8, 2.5 * 1.1), rtol=1e-15)
    # The scale is itself a (positive) hyperparameter.
    assert isinstance((2.5 * kernel).left, Constant)
    np.testing.assert_allclose((2.5 * kernel).left.variance.value, 2.5, rtol=1e-15)
    with pytest.raises(ValueError):
        -1.0 * kernel


def test_adding_a_number_is_not_supported():
    with pytest.raises(TypeError):
        SquaredExponential() + 1.0


# --------------------------------------------------------------- active_dims


@eqx.filter_jit
def _restricted_and_sliced(restricted, full, X1, X2):
    dims = jnp.asarray([0, 2])
    return (
        {"gram": restricted.gram(X1), "cross": restricted.cross(X1, X2), "diagonal": restricted.diagonal(X1)},
        {
            "gram": full.gram(X1[:, dims]),
            "cross": full.cross(X1[:, dims], X2[:, dims]),
            "diagonal": full.diagonal(X1[:, dims]),
        },
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda dims: SquaredExponential(lengthscale=jnp.asarray([0.5, 1.5]), variance=1.2, active_dims=dims),
        lambda dims: Matern12(lengthscale=jnp.asarray([0.5, 1.5]), active_dims=dims),
        lambda dims: Matern52(lengthscale=0.8, active_dims=dims),
        lambda dims: RationalQuadratic(lengthscale=0.8, mixture=2.0, active_dims=dims),
        lambda dims: ProductMatern(1.5, lengthscale=jnp.asarray([0.5, 1.5]), active_dims=dims),
        lambda dims: Periodic(period=jnp.asarray([1.1, 0.6]), active_dims=dims),
        lambda dims: Linear(variance=jnp.asarray([0.5, 2.0]), active_dims=dims),
        lambda dims: Polynomial(2, offset=0.5, active_dims=dims),
        lambda dims: White(variance=0.5, active_dims=dims),
    ],
    ids=["se", "matern12", "matern52", "rq", "product_matern", "periodic", "linear", "polynomial", "white"],
)
def test_active_dims_equals_evaluating_on_sliced_inputs(make):
    X1, X2 = _inputs(19), _inputs(20, n=5)
    X2[1, [0, 2]] = X1[4, [0, 2]]  # equal on the active columns only (matters for White)
    restricted, full = make((0, 2)), make(None)
    result, expected = _restricted_and_sliced(restricted, full, jnp.asarray(X1), jnp.asarray(X2))
    for key in ("cross", "gram", "diagonal"):
        np.testing.assert_allclose(result[key], expected[key], rtol=1e-15, atol=0)
    # The inactive column has no effect.
    X1[:, 1] += 10.0
    X2[:, 1] -= 3.0
    moved, _ = _restricted_and_sliced(restricted, full, jnp.asarray(X1), jnp.asarray(X2))
    np.testing.assert_allclose(moved["cross"], result["cross"], rtol=1e-15, atol=0)
    np.testing.assert_allclose(moved["gram"], result["gram"], rtol=1e-15, atol=0)


# ----------------------------------------------------- cross/gram/diagonal


@pytest.mark.parametrize("name", list(KERNELS))
def test_cross_gram_diagonal_agree(name):
    X = jnp.asarray(_inputs(21))
    result = {k: np.asarray(v) for k, v in _evaluations(KERNELS[name], X, X[:5]).items()}
    assert result["gram"].shape == (8, 8) and result["cross"].shape == (8, 5) and result["diagonal"].shape == (8,)
    np.testing.assert_allclose(result["cross"], result["gram"][:, :5], rtol=1e-15, atol=0)
    np.testing.assert_allclose(result["diagonal"], np.diag(result["gram"]), rtol=1e-15, atol=0)
    # The same entry from a single (eager) `evaluate`.
    np.testing.assert_allclose(KERNELS[name].evaluate(X[7], X[1]), result["gram"][7, 1], rtol=1e-13, atol=1e-16)


@eqx.filter_jit
def _vectorised_and_pairwise(kernel, X1, X2):
    """`cross` (one matrix product for stationary kernels) and the pairwise form that vmaps
    `evaluate`, with their gradients in the kernel's parameters."""

    def pairwise(k):
        return jax.vmap(lambda a: jax.vmap(lambda b: k.evaluate(a, b))(X2))(X1)

    weights = jnp.cos(jnp.arange(X1.shape[0] * X2.shape[0], dtype=X1.dtype)).reshape(X1.shape[0], X2.shape[0])
    vectorised_gradient = eqx.filter_grad(lambda k: jnp.sum(weights * k.cross(X1, X2)))(kernel)
    pairwise_gradient = eqx.filter_grad(lambda k: jnp.sum(weights * pairwise(k)))(kernel)
    return kernel.cross(X1, X2), pairwise(kernel), vectorised_gradient, pairwise_gradient


@pytest.mark.parametrize(
    "name", ["squared_exponential", "matern12", "matern32", "matern52", "rational_quadratic", "active_dims", "sum"]
)
def test_vectorised_cross_equals_pairwise_evaluation_far_from_the_origin(name):
    # Inputs 10³ from the origin with unit spread: without centring, |a|² ≈ 10⁶ would put
    # rounding errors of ~10⁻¹⁰ into r²; with it they stay near machine precision.
    kernel = KERNELS[name]
    X1 = 1e3 + _inputs(31, n=8)
    X2 = 1e3 + _inputs(32, n=5)
    X2[2] = X1[4]  # coincident inputs in different rows: r² = 0 exactly
    cross, pairwise, gradient, pairwise_gradient = _vectorised_and_pairwise(kernel, jnp.asarray(X1), jnp.asarray(X2))
    np.testing.assert_allclose(cross, pairwise, rtol=1e-12, atol=1e-15)
    assert cross[4, 2] == pairwise[4, 2]
    for leaf, reference in zip(
        jax.tree_util.tree_leaves(eqx.filter(gradient, eqx.is_inexact_array)),
        jax.tree_util.tree_leaves(eqx.filter(pairwise_gradient, eqx.is_inexact_array)),
    ):
        np.testing.assert_allclose(leaf, reference, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("smoothness", [0.5, 1.5])
def test_gram_is_accurate_at_near_coincident_points(smoothness):
    # Points 1e-7 apart, spread 1 around the origin: r² ≈ 1e-14 is close to the rounding of
    # |a|² + |b|² − 2aᵀb (a few 1e-16, below which aabdb9c snapped r² to 0): a Gram from that
    # expansion was off by 8.5e-8 (Matérn-1/2) and 1.1e-14 (Matérn-3/2), measured; from
    # differences it matches the closed form to K's own rounding.
    X = _inputs(33, n=6)
    X[1::2] = X[0::2] + 1e-7 * _inputs(34, n=3)
    kernel = MATERNS[smoothness](lengthscale=jnp.asarray(LENGTHSCALE))
    K = np.asarray(_evaluations(kernel, jnp.asarray(X), jnp.asarray(X[:5]))["gram"])
    expected = _matern_numpy(smoothness, _pairwise_scaled_distance(X, X, LENGTHSCALE))
    np.testing.assert_allclose(K, expected, rtol=0, atol=4 * np.finfo(np.float64).eps)


@pytest.mark.parametrize("make", [SquaredExponential, Matern12, Matern32, Matern52])
@pytest.mark.parametrize("lengthscale", [0.7, [0.7], [0.7, 1.3, 0.4]], ids=["scalar", "one", "three"])
def test_gram_gradient_under_jit_equals_forward_mode(make, lengthscale):
    # Reverse mode of the Gram under jit (what every fit uses) against forward mode without
    # jit, at inputs with a repeated row. A mask in the distances' derivative made XLA:CPU
    # miscompile the reverse pass for ℓ of shape (1,): 10.53 became −7.19 (2026-11-29).
    dimension = len(np.atleast_1d(lengthscale))
    X = np.linspace(-1.5, 1.5, 5)[:, None] + np.arange(dimension)[None, :] * 0.3
    X = jnp.asarray(np.vstack([X, X[2:3]]))
    weights = jnp.asarray(np.random.default_rng(5).normal(size=(6, 6)))

    def loss(log_lengthscale):
        return jnp.sum(weights * jnp.sin(make(lengthscale=jnp.exp(log_lengthscale)).gram(X)))

    point = jnp.log(jnp.asarray(lengthscale))
    reverse = jax.jit(jax.grad(loss))(point)
    forward = jax.jacfwd(loss)(point)
    np.testing.assert_allclose(reverse, forward, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("make", [SquaredExponential, Matern12, Matern32, Matern52, RationalQuadratic])
def test_a_nan_input_row_gives_nan_not_full_correlation(make):
    # A NaN coordinate must not read as a coincident point (r² = 0, k = σ²): that would be
    # a plausible, silently wrong covariance. Before 2026-11-29 both the distance cut-off
    # and the Matérn's √r² mapped NaN to 0.
    X = np.asarray([[0.0, 1.0], [np.nan, 0.0], [1.0, 1.0]])
    K = np.asarray(_evaluations(make(), jnp.asarray(X), jnp.asarray(X[:2]))["gram"])
    assert np.all(np.isnan(K[1])) and np.all(np.isnan(K[:, 1]))
    finite = np.delete(np.delete(K, 1, axis=0), 1, axis=1)
    assert np.all(np.isfinite(finite)) and np.all(np.diag(finite) == 1.0)


def test_call_is_cross():
    X1, X2 = jnp.asarray(_inputs(22)), jnp.asarray(_inputs(23, n=5))
    kernel = KERNELS["matern52"]
    called = eqx.filter_jit(lambda k, a, b: k(a, b))(kernel, X1, X2)
    np.testing.assert_allclose(called, _evaluations(kernel, X1, X2)["cross"], rtol=1e-15, atol=0)


def test_shape_errors_name_the_argument():
    kernel = SquaredExponential()
    with _without_runtime_typechecks():
        with pytest.raises(ValueError, match=r"`X`.*\(4,\)"):
            kernel.gram(jnp.ones(4))
        with pytest.raises(ValueError, match=r"`X`.*\(4,\)"):
            kernel.diagonal(jnp.ones(4))
        with pytest.raises(ValueError, match=r"`X1`.*\(4,\)"):
            kernel.cross(jnp.ones(4), jnp.ones((3, 2)))
        with pytest.raises(ValueError, match=r"`X2`.*\(3,\)"):
            kernel.cross(jnp.ones((4, 2)), jnp.ones(3))
        with pytest.raises(ValueError, match=r"`X2` has 3 columns.*\(5, 3\).*2 were expected"):
            kernel.cross(jnp.ones((4, 2)), jnp.ones((5, 3)))
        with pytest.raises(ValueError, match=r"`X2` has 3 columns"):
            kernel(jnp.ones((4, 2)), jnp.ones((5, 3)))


# --------------------------------------------------------------- gradients

_W = jnp.asarray(np.random.default_rng(23).normal(size=(6, 6)))


@eqx.filter_jit
@eqx.filter_value_and_grad
def _weighted_gram_and_gradient(kernel_and_inputs):
    kernel, X = kernel_and_inputs
    return jnp.sum(_W * kernel.gram(X))


_GRADIENT_KERNELS = [
    "squared_exponential",
    "matern12",
    "matern32",
    "matern52",
    "product_matern12",
    "product_matern32",
    "product_matern52",
    "rational_quadratic",
    "periodic",
]


@pytest.mark.parametrize("name", _GRADIENT_KERNELS)
def test_gram_gradient_finite_and_matches_finite_differences(name):
    kernel = KERNELS[name]
    X = _inputs(24, n=6)
    X[3] = X[0]  # x1 == x2 off the diagonal as well as on it
    X = jnp.asarray(X)
    _, (gradient, gradient_inputs) = _weighted_gram_and_gradient((kernel, X))
    leaves = jax.tree_util.tree_leaves(eqx.filter((gradient, gradient_inputs), eqx.is_inexact_array))
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in leaves)

    # Central differences in the unconstrained lengthscale (same compiled function).
    u = np.asarray(kernel.lengthscale.unconstrained, dtype=np.float64)
    step = 1e-6

    def loss(delta):
        shifted = eqx.tree_at(lambda k: k.lengthscale.unconstrained, kernel, jnp.asarray(u + delta))
        return float(_weighted_gram_and_gradient((shifted, X))[0])

    numeric = np.zeros_like(u)
    for i in range(u.size):
        e = np.zeros_like(u)
        e.flat[i] = step
        numeric.flat[i] = (loss(e) - loss(-e)) / (2 * step)
    np.testing.assert_allclose(gradient.lengthscale.unconstrained, numeric, rtol=1e-6, atol=1e-8)


@eqx.filter_jit
def _gradients_at_coincident_points(kernel, x):
    gradient = eqx.filter_grad(lambda k: k.evaluate(x, x))(kernel)
    gradient_x = jax.grad(lambda a: kernel.evaluate(a, x))(x)
    return gradient, gradient_x


@pytest.mark.parametrize("smoothness", [0.5, 1.5, 2.5])
def test_matern_gradient_at_coincident_points(smoothness):
    # At x1 == x2 the distance does not depend on the lengthscale: dk/dℓ = 0, no NaN.
    x = jnp.asarray([0.3, -1.2, 0.5])
    for kernel in (
        MATERNS[smoothness](lengthscale=jnp.asarray(LENGTHSCALE)),
        ProductMatern(smoothness, lengthscale=jnp.asarray(LENGTHSCALE)),
    ):
        gradient, gradient_x = _gradients_at_coincident_points(kernel, x)
        np.testing.assert_array_equal(gradient.lengthscale.unconstrained, np.zeros(D))
        # dk/du_σ² = σ'(u) for the softplus transform, at k = σ².
        np.testing.assert_allclose(
            gradient.variance.unconstrained, jax.nn.sigmoid(kernel.variance.unconstrained), rtol=1e-15
        )
        assert np.all(np.isfinite(np.asarray(gradient_x)))
        if smoothness > 1:  # differentiable at r = 0 with zero derivative
            np.testing.assert_array_equal(gradient_x, np.zeros(D))


# --------------------------------------------------------------- transforms


def _shift_leaves(tree, shift):
    return jax.tree_util.tree_map(lambda leaf: leaf + shift if eqx.is_inexact_array(leaf) else leaf, tree)


def test_jit_traces_once_for_new_values():
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def grams(kernels, X):
        return {name: kernel.gram(X) for name, kernel in kernels.items()}

    previous = None
    for seed, shift in ((25, 0.0), (26, 0.1)):
        kernels = _shift_leaves(KERNELS, shift)
        X = jnp.asarray(_inputs(seed))
        result = grams(kernels, X)
        for name, kernel in kernels.items():
            expected = _evaluations(kernel, X, X[:5])["gram"]
            np.testing.assert_allclose(result[name], expected, rtol=1e-14, atol=1e-15, err_msg=name)
        previous = result
    # The new hyperparameter values were really used (not baked in as constants).
    shifted = grams(_shift_leaves(KERNELS, 0.3), X)
    for name in KERNELS:
        assert not np.allclose(shifted[name], previous[name], rtol=1e-6, atol=0), name


_VMAP_KERNELS = {
    "se": lambda ls, var: SquaredExponential(lengthscale=ls, variance=var),
    "matern12": lambda ls, var: Matern12(lengthscale=ls, variance=var),
    "product_matern": lambda ls, var: ProductMatern(1.5, lengthscale=ls, variance=var),
    "algebra": lambda ls, var: SquaredExponential(lengthscale=ls) + 2.0 * Matern32(lengthscale=ls, variance=var),
}


def test_vmap_over_a_batch_of_kernels_equals_a_loop():
    rng = np.random.default_rng(27)
    lengthscales = jnp.asarray(rng.uniform(0.3, 2.0, size=(4, D)))
    variances = jnp.asarray(rng.uniform(0.5, 2.0, size=(4,)))
    X, X2 = jnp.asarray(_inputs(28)), jnp.asarray(_inputs(29, n=5))

    @eqx.filter_jit
    def batched_grams(lengthscales, variances):
        batched = {name: eqx.filter_vmap(make)(lengthscales, variances) for name, make in _VMAP_KERNELS.items()}
        return {name: eqx.filter_vmap(lambda kernel: kernel.gram(X))(kernel) for name, kernel in batched.items()}

    grams = batched_grams(lengthscales, variances)
    for name, make in _VMAP_KERNELS.items():
        assert grams[name].shape == (4, 8, 8)
        for i in range(4):
            expected = _evaluations(make(lengthscales[i], variances[i]), X, X2)["gram"]
            np.testing.assert_allclose(grams[name][i], expected, rtol=1e-14, atol=1e-15, err_msg=name)
        assert not np.allclose(grams[name][0], grams[name][1])


def test_float32_smoke():
    X = jnp.asarray(_inputs(30), dtype=jnp.float32)
    X2 = jnp.asarray(_inputs(31, n=5), dtype=jnp.float32)
    ls32 = jnp.asarray(LENGTHSCALE, dtype=jnp.float32)
    # Same hyperparameters as the float64 kernels of KERNELS.
    pairs = [
        (SquaredExponential(lengthscale=ls32, variance=jnp.float32(1.5)), KERNELS["squared_exponential"]),
        (ProductMatern(1.5, lengthscale=ls32, variance=jnp.float32(1.2)), KERNELS["product_matern32"]),
        (Matern12(lengthscale=ls32, variance=jnp.float32(0.8)), KERNELS["matern12"]),
    ]
    for kernel32, kernel64 in pairs:
        result = _evaluations(kernel32, X, X2)
        expected = _evaluations(kernel64, X.astype(jnp.float64), X2.astype(jnp.float64))
        for key in ("gram", "cross", "diagonal"):
            assert result[key].dtype == jnp.float32
            assert np.all(np.isfinite(np.asarray(result[key])))
            np.testing.assert_allclose(result[key], expected[key], rtol=1e-5, atol=1e-6)
