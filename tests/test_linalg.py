"""Tests of `gpcompose._linalg`: the jittered Cholesky, triangular and PD solves,
log-determinants and the rank-1 modifications of a factor, against numpy/scipy."""

import contextlib

import equinox as eqx
import jax
import jax.numpy as jnp
import jaxtyping
import numpy as np
import pytest
import scipy.linalg

from gpcompose import RESULTS
from gpcompose._linalg import (
    cholesky as eager_cholesky,
)
from gpcompose._linalg import (
    cholesky_append,
    cholesky_solve,
    cholesky_update,
    initial_relative_jitter,
    log_determinant,
    solve_triangular,
)

# The functions run under `jit` as in the library; eager calls would recompile the
# while loop of the jitter policy and the lineax solves at every call.
cholesky = eqx.filter_jit(eager_cholesky)
cholesky_append = eqx.filter_jit(cholesky_append)
cholesky_solve = eqx.filter_jit(cholesky_solve)
cholesky_update = eqx.filter_jit(cholesky_update)
log_determinant = eqx.filter_jit(log_determinant)
solve_triangular = eqx.filter_jit(solve_triangular)

# The jitter policy: j_k = s · j_0 · 10^(k−1), k = 1, …, 6 (module docstring).
_JITTER_LEVELS = 10.0 ** np.arange(6)


@contextlib.contextmanager
def _without_runtime_typechecks():
    """Disable jaxtyping's runtime checks so that the library's own argument checks run
    (what a user without the jaxtyping import hook sees)."""
    jaxtyping.config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping.config.update("jaxtyping_disable", False)


def _random_spd(rng, n, ridge=None):
    B = rng.normal(size=(n, n))
    return B @ B.T + (n if ridge is None else ridge) * np.eye(n)


def _squared_exponential_gram(X, lengthscale=1.0, variance=1.0):
    D = X[:, None, :] - X[None, :, :]
    return variance * np.exp(-0.5 * np.sum(D**2, axis=-1) / lengthscale**2)


def _padded(A, used):
    """`A` restricted to its first `used` rows/columns, identity in the other slots."""
    P = np.eye(A.shape[0])
    P[:used, :used] = A[:used, :used]
    return P


# --------------------------------------------------------------------------- cholesky


def test_cholesky_matches_numpy_on_positive_definite():
    rng = np.random.default_rng(0)
    A = _random_spd(rng, 5)
    factor = eager_cholesky(jnp.asarray(A))
    assert factor.result == RESULTS.successful
    assert bool(factor.succeeded)
    assert float(factor.jitter) == 0.0
    np.testing.assert_allclose(factor.lower, np.asarray(jnp.linalg.cholesky(jnp.asarray(A))), rtol=0, atol=0)
    np.testing.assert_allclose(factor.lower, np.linalg.cholesky(A), rtol=1e-13, atol=1e-13)
    assert np.all(np.triu(np.asarray(factor.lower), 1) == 0.0)


def test_cholesky_escalates_jitter_on_singular_gram():
    # A Gram matrix of duplicated points is PSD but singular: the exact factorisation fails.
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.5], [1.0, 0.5], [-0.3, 2.0]])
    variance = 2.5
    K = _squared_exponential_gram(X, variance=variance)
    assert not np.all(np.isfinite(np.asarray(jnp.linalg.cholesky(jnp.asarray(K)))))

    factor = cholesky(jnp.asarray(K))
    lower = np.asarray(factor.lower)
    jitter = float(factor.jitter)
    assert factor.result == RESULTS.successful
    assert bool(factor.succeeded)
    assert jitter > 0
    assert np.all(np.isfinite(lower))
    # The jitter is one of the documented levels, relative to mean(|diag K|).
    levels = variance * initial_relative_jitter(jnp.float64) * _JITTER_LEVELS
    assert np.any(np.isclose(jitter, levels, rtol=1e-12, atol=0)), (jitter, levels)
    # ... and the factor is exactly that of K + jitter I.
    np.testing.assert_allclose(lower @ lower.T, K + jitter * np.eye(len(K)), rtol=0, atol=1e-13 * variance)
    np.testing.assert_allclose(lower, np.linalg.cholesky(K + jitter * np.eye(len(K))), rtol=1e-10, atol=1e-12)


def _slightly_indefinite(n=5, relative_eigenvalue=-3e-8, seed=8):
    """A symmetric matrix with one eigenvalue −3e-8 · mean(diag): the first jitter levels
    below 3e-8 cannot fix it and the first level above it must."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    eigenvalues = np.array([2.0, 1.5, 1.0, 0.5, 0.0])
    scale = np.sum(eigenvalues) / n  # = mean(diag A) = trace / n
    eigenvalues[-1] = relative_eigenvalue * scale
    A = Q @ np.diag(eigenvalues) @ Q.T
    A = 0.5 * (A + A.T)
    return A, np.mean(np.abs(np.diag(A)))


@pytest.mark.parametrize("relative_jitter, winning_level", [(None, 3), (1e-6, 0), (1e-9, 2)])
def test_cholesky_uses_the_first_sufficient_jitter(relative_jitter, winning_level):
    A, scale = _slightly_indefinite()
    assert np.all(np.diag(A) > 0)
    first = initial_relative_jitter(jnp.float64) if relative_jitter is None else relative_jitter
    expected_jitter = scale * first * _JITTER_LEVELS[winning_level]
    factor = cholesky(jnp.asarray(A), relative_jitter=relative_jitter)
    assert factor.result == RESULTS.successful
    np.testing.assert_allclose(float(factor.jitter), expected_jitter, rtol=1e-12)
    lower = np.asarray(factor.lower)
    np.testing.assert_allclose(lower @ lower.T, A + expected_jitter * np.eye(len(A)), rtol=0, atol=1e-13)


@pytest.mark.parametrize(
    "matrix",
    [np.diag([1.0, -1.0]), np.array([[1.0, 2.0], [2.0, 1.0]]), np.diag([3.0, -2.0, 0.5, 1.0, 1.0])],
    ids=["diag(1,-1)", "offdiagonal", "diag(3,-2,...)"],
)
def test_cholesky_indefinite_gives_finite_placeholder(matrix):
    factor = cholesky(jnp.asarray(matrix))
    lower = np.asarray(factor.lower)
    assert factor.result == RESULTS.cholesky_failed
    assert not bool(factor.succeeded)
    assert np.all(np.isfinite(lower))
    assert np.isfinite(float(factor.jitter))
    # The documented placeholder: diag(sqrt(|diag A| + j_max)).
    scale = np.mean(np.abs(np.diag(matrix)))
    j_max = scale * initial_relative_jitter(jnp.float64) * _JITTER_LEVELS[-1]
    np.testing.assert_allclose(float(factor.jitter), j_max, rtol=1e-12)
    np.testing.assert_allclose(lower, np.diag(np.sqrt(np.abs(np.diag(matrix)) + j_max)), rtol=1e-14)


def test_cholesky_non_square_raises():
    with _without_runtime_typechecks(), pytest.raises(ValueError, match=r"`matrix`.*\(2, 3\)"):
        eager_cholesky(jnp.ones((2, 3)))


def test_cholesky_vmap_isolates_a_failing_element():
    rng = np.random.default_rng(1)
    good = _random_spd(rng, 3)
    indefinite = np.diag([1.0, -1.0, 2.0])
    singular = _squared_exponential_gram(np.array([[0.0], [0.0], [1.0]]))
    batch = jnp.asarray(np.stack([good, indefinite, singular]))

    factors = jax.vmap(cholesky)(batch)
    lowers = np.asarray(factors.lower)
    assert np.all(np.isfinite(lowers))
    assert np.all(np.isfinite(np.asarray(factors.jitter)))
    ok = np.asarray(factors.result == RESULTS.successful)
    np.testing.assert_array_equal(ok, [True, False, True])
    for i in range(3):
        single = cholesky(batch[i])
        np.testing.assert_allclose(lowers[i], single.lower, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(float(factors.jitter[i]), float(single.jitter), rtol=1e-14)
    np.testing.assert_allclose(lowers[0], np.linalg.cholesky(good), rtol=1e-13)
    # Downstream quantities stay finite for every element, including the failed one.
    rhs = jnp.ones((3, 3))
    assert np.all(np.isfinite(np.asarray(jax.vmap(log_determinant)(factors.lower))))
    assert np.all(np.isfinite(np.asarray(jax.vmap(cholesky_solve)(factors.lower, rhs))))


# --------------------------------------------------------------- gradients of cholesky

_X_GRAD = np.array([[0.1, -0.4], [0.9, 0.3], [-1.2, 0.5], [0.4, 1.1], [1.5, -0.8]])
_D2_GRAD = np.sum((_X_GRAD[:, None, :] - _X_GRAD[None, :, :]) ** 2, axis=-1)


def _matrix_of_theta(theta):
    """SE Gram (log-lengthscale, log-variance) plus log-noise: a smooth PD matrix family."""
    lengthscale, variance, noise = jnp.exp(theta[0]), jnp.exp(theta[1]), jnp.exp(theta[2])
    gram = variance * jnp.exp(-0.5 * jnp.asarray(_D2_GRAD) / lengthscale**2)
    return gram + noise * jnp.eye(len(_X_GRAD))


_THETA = np.array([np.log(0.8), np.log(1.7), np.log(0.05)])
_Y_GRAD = np.array([0.3, -1.0, 0.7, 2.0, -0.4])
_W_GRAD = np.random.default_rng(2).normal(size=(5, 5))
_X_DUPLICATED = np.array([[0.0], [0.0], [1.0], [1.0]])


def _functions_of_factor(theta):
    """Three scalars of the factor of A(θ): log det A, yᵀA⁻¹y (through `cholesky_solve`)
    and Σ W ⊙ L, which exercises every entry of dL and not only its diagonal."""
    lower = cholesky(_matrix_of_theta(theta)).lower
    y = jnp.asarray(_Y_GRAD)
    return jnp.stack([log_determinant(lower), y @ cholesky_solve(lower, y), jnp.sum(jnp.asarray(_W_GRAD) * lower)])


def _matrix_derivatives(theta):
    """dA/dθ_i in closed form (numpy), for the trace and quadratic-form identities."""
    lengthscale, variance, noise = np.exp(theta)
    gram = variance * np.exp(-0.5 * _D2_GRAD / lengthscale**2)
    return [gram * _D2_GRAD / lengthscale**2, gram, noise * np.eye(len(_X_GRAD))]


def test_cholesky_gradient_matches_finite_differences():
    theta = jnp.asarray(_THETA)
    forward = np.asarray(jax.jit(jax.jacfwd(_functions_of_factor))(theta))
    function = jax.jit(_functions_of_factor)
    step = 1e-5
    numeric = np.stack(
        [
            (np.asarray(function(theta + step * e)) - np.asarray(function(theta - step * e))) / (2 * step)
            for e in jnp.eye(3)
        ],
        axis=1,
    )
    np.testing.assert_allclose(forward, numeric, rtol=1e-7, atol=1e-8)
    # Reverse mode (the transpose of the custom JVP) agrees with forward mode.
    weights = jnp.asarray([1.0, -0.5, 0.3])
    reverse = np.asarray(jax.jit(jax.grad(lambda t: weights @ _functions_of_factor(t)))(theta))
    np.testing.assert_allclose(reverse, np.asarray(weights) @ forward, rtol=1e-12, atol=1e-13)
    # d log det A / dθ = tr(A⁻¹ dA/dθ) and d yᵀA⁻¹y / dθ = −yᵀA⁻¹ (dA/dθ) A⁻¹y exactly.
    A = np.asarray(_matrix_of_theta(theta))
    dA = _matrix_derivatives(_THETA)
    alpha = np.linalg.solve(A, _Y_GRAD)
    np.testing.assert_allclose(forward[0], [np.trace(np.linalg.solve(A, d)) for d in dA], rtol=1e-11)
    np.testing.assert_allclose(forward[1], [-alpha @ d @ alpha for d in dA], rtol=1e-11)


def test_cholesky_gradient_under_vmap_with_a_failing_element():
    def log_det(matrix):
        return log_determinant(cholesky(matrix).lower)

    rng = np.random.default_rng(3)
    good = _random_spd(rng, 3)
    batch = jnp.asarray(np.stack([good, np.diag([1.0, -1.0, 2.0]), _random_spd(rng, 3)]))
    gradients = np.asarray(jax.vmap(jax.grad(log_det))(batch))
    assert np.all(np.isfinite(gradients))
    # d log det A / dA = A⁻¹ for the successful elements.
    np.testing.assert_allclose(gradients[0], np.linalg.inv(good), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(gradients[2], np.linalg.inv(np.asarray(batch[2])), rtol=1e-11, atol=1e-13)


def test_cholesky_gradient_finite_when_jitter_is_used():
    # Duplicated points: every lengthscale gives a singular Gram, so the jitter is active.
    D2 = jnp.asarray(np.sum((_X_DUPLICATED[:, None, :] - _X_DUPLICATED[None, :, :]) ** 2, axis=-1))

    def gram(lengthscale):
        return jnp.exp(-0.5 * D2 / lengthscale**2)

    def weighted_factor(lengthscale):
        return jnp.sum(jnp.asarray(_W_GRAD[:4, :4]) * cholesky(gram(lengthscale)).lower)

    lengthscale = jnp.asarray(0.7)
    factor = cholesky(gram(lengthscale))
    assert factor.result == RESULTS.successful and float(factor.jitter) > 0
    gradient = float(jax.jit(jax.grad(weighted_factor))(lengthscale))
    assert np.isfinite(gradient)
    # The jitter is held constant: the gradient is that of the factor of K(ℓ) + jitter I.
    jitter = float(factor.jitter)
    identity = np.eye(4)

    @jax.jit
    def fixed_jitter_factor(ls):
        return jnp.sum(jnp.asarray(_W_GRAD[:4, :4]) * jnp.linalg.cholesky(gram(ls) + jitter * identity))

    def fixed_jitter(ls):
        return float(fixed_jitter_factor(jnp.asarray(ls)))

    # The factor has entries ~1/√jitter, so rounding limits the step to ~1e-4.
    step = 1e-4
    numeric = (fixed_jitter(0.7 + step) - fixed_jitter(0.7 - step)) / (2 * step)
    np.testing.assert_allclose(gradient, numeric, rtol=1e-7)


# ------------------------------------------------------------------------ solves


@pytest.fixture
def well_conditioned_lower():
    rng = np.random.default_rng(4)
    return np.linalg.cholesky(_random_spd(rng, 5))


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("rhs_shape", [(5,), (5, 3)], ids=["vector", "matrix"])
def test_solve_triangular_matches_scipy(well_conditioned_lower, transpose, rhs_shape):
    L = well_conditioned_lower
    rhs = np.random.default_rng(5).normal(size=rhs_shape)
    x = np.asarray(solve_triangular(jnp.asarray(L), jnp.asarray(rhs), transpose=transpose))
    assert x.shape == rhs_shape
    expected = scipy.linalg.solve_triangular(L, rhs, lower=True, trans="T" if transpose else "N")
    np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-14)
    # The residual of the system itself.
    operator = L.T if transpose else L
    np.testing.assert_allclose(operator @ x, rhs, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("rhs_shape", [(5,), (5, 2)], ids=["vector", "matrix"])
def test_cholesky_solve_matches_numpy(rhs_shape):
    rng = np.random.default_rng(6)
    A = _random_spd(rng, 5)
    rhs = rng.normal(size=rhs_shape)
    lower = cholesky(jnp.asarray(A)).lower
    x = np.asarray(cholesky_solve(lower, jnp.asarray(rhs)))
    np.testing.assert_allclose(x, np.linalg.solve(A, rhs), rtol=1e-11, atol=1e-13)


def test_log_determinant_matches_numpy():
    rng = np.random.default_rng(7)
    A = _random_spd(rng, 5, ridge=0.5)
    sign, expected = np.linalg.slogdet(A)
    assert sign == 1
    np.testing.assert_allclose(float(log_determinant(cholesky(jnp.asarray(A)).lower)), expected, rtol=1e-12)
    np.testing.assert_allclose(
        float(log_determinant(jnp.asarray(scipy.linalg.cholesky(A, lower=True)))),
        np.log(np.linalg.det(A)),
        rtol=1e-11,
    )


# ---------------------------------------------------------------- cholesky_append


@pytest.mark.parametrize("index", [0, 2, 4])
def test_cholesky_append_equals_refactorisation(index):
    rng = np.random.default_rng(10 + index)
    n = 5
    A = _random_spd(rng, n)
    lower = np.linalg.cholesky(_padded(A, index))
    # Entries after `index` are documented as ignored: fill them with garbage.
    column = A[:, index].copy()
    column[index + 1 :] = rng.normal(size=n - index - 1) * 1e3
    new_lower, ok = cholesky_append(jnp.asarray(lower), jnp.asarray(column), jnp.asarray(index))
    assert bool(ok)
    np.testing.assert_allclose(new_lower, np.linalg.cholesky(_padded(A, index + 1)), rtol=0, atol=1e-8)
    np.testing.assert_allclose(new_lower, np.linalg.cholesky(_padded(A, index + 1)), rtol=1e-12, atol=1e-13)


def test_cholesky_append_sequentially_builds_the_full_factor():
    rng = np.random.default_rng(20)
    n = 5
    A = _random_spd(rng, n, ridge=0.3)
    lower = jnp.eye(n)
    for index in range(n):
        lower, ok = cholesky_append(lower, jnp.asarray(A[:, index]), jnp.asarray(index))
        assert bool(ok)
        np.testing.assert_allclose(lower, np.linalg.cholesky(_padded(A, index + 1)), rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(lower, np.linalg.cholesky(A), rtol=1e-10, atol=1e-11)


def test_cholesky_append_flags_non_positive_definite_extension():
    rng = np.random.default_rng(21)
    n, index = 5, 3
    A = _random_spd(rng, n)
    lower = np.linalg.cholesky(_padded(A, index))
    column = A[:, index].copy()
    row = scipy.linalg.solve_triangular(lower[:index, :index], column[:index], lower=True)
    column[index] = 0.5 * np.sum(row**2)  # a_index − ‖ℓ‖² < 0: not positive definite
    assert (
        np.linalg.eigvalsh(np.block([[A[:index, :index], column[:index, None]], [column[None, : index + 1]]])).min() < 0
    )
    new_lower, ok = cholesky_append(jnp.asarray(lower), jnp.asarray(column), jnp.asarray(index))
    assert not bool(ok)
    new_lower = np.asarray(new_lower)
    assert np.all(np.isfinite(new_lower))
    assert new_lower[index, index] == 1.0  # documented finite placeholder
    np.testing.assert_allclose(new_lower[index, :index], row, rtol=1e-12)
    # Untouched rows are unchanged.
    np.testing.assert_array_equal(np.delete(new_lower, index, axis=0), np.delete(lower, index, axis=0))


# ---------------------------------------------------------------- cholesky_update


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cholesky_update_matches_refactorisation(sign):
    rng = np.random.default_rng(30)
    n = 5
    A = _random_spd(rng, n)
    v = 0.7 * rng.normal(size=n)
    assert np.linalg.eigvalsh(A + sign * np.outer(v, v)).min() > 0.1
    lower = np.linalg.cholesky(A)
    new_lower, ok = cholesky_update(jnp.asarray(lower), jnp.asarray(v), sign)
    assert bool(ok)
    expected = np.linalg.cholesky(A + sign * np.outer(v, v))
    np.testing.assert_allclose(new_lower, expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(new_lower, expected, rtol=1e-11, atol=1e-12)


def test_cholesky_update_then_downdate_round_trips():
    rng = np.random.default_rng(31)
    A = _random_spd(rng, 5)
    v = rng.normal(size=5)
    lower = jnp.asarray(np.linalg.cholesky(A))
    updated, ok_up = cholesky_update(lower, jnp.asarray(v), 1.0)
    restored, ok_down = cholesky_update(updated, jnp.asarray(v), -1.0)
    assert bool(ok_up) and bool(ok_down)
    np.testing.assert_allclose(restored, lower, rtol=1e-11, atol=1e-12)


def test_cholesky_downdate_flags_loss_of_definiteness():
    rng = np.random.default_rng(32)
    A = _random_spd(rng, 5)
    v = 3.0 * np.linalg.cholesky(A)[:, 0]  # A − vvᵀ has a negative eigenvalue
    assert np.linalg.eigvalsh(A - np.outer(v, v)).min() < 0
    new_lower, ok = cholesky_update(jnp.asarray(np.linalg.cholesky(A)), jnp.asarray(v), -1.0)
    assert not bool(ok)
    assert np.all(np.isfinite(np.asarray(new_lower)))


# ------------------------------------------------------------------ transforms


def test_jit_traces_once_for_new_values():
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def factor_solve_logdet(matrix, rhs):
        factor = cholesky(matrix)
        return factor.lower, cholesky_solve(factor.lower, rhs), log_determinant(factor.lower), factor.result

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def append(lower, column, index):
        return cholesky_append(lower, column, index)

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def update(lower, vector):
        return cholesky_update(lower, vector, -1.0)

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def triangular(lower, rhs):
        return solve_triangular(lower, rhs, transpose=True)

    n = 5
    for seed in (40, 41):
        rng = np.random.default_rng(seed)
        A = _random_spd(rng, n)
        rhs = rng.normal(size=n)
        lower, solution, log_det, result = factor_solve_logdet(jnp.asarray(A), jnp.asarray(rhs))
        assert result == RESULTS.successful
        np.testing.assert_allclose(lower, np.linalg.cholesky(A), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(solution, np.linalg.solve(A, rhs), rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(float(log_det), np.linalg.slogdet(A)[1], rtol=1e-12)

        index = 2 if seed == 40 else 4
        new_lower, ok = append(
            jnp.asarray(np.linalg.cholesky(_padded(A, index))), jnp.asarray(A[:, index]), jnp.asarray(index)
        )
        assert bool(ok)
        np.testing.assert_allclose(new_lower, np.linalg.cholesky(_padded(A, index + 1)), rtol=1e-12, atol=1e-13)

        v = 0.3 * rng.normal(size=n)
        downdated, ok = update(jnp.asarray(np.linalg.cholesky(A)), jnp.asarray(v))
        assert bool(ok)
        np.testing.assert_allclose(downdated, np.linalg.cholesky(A - np.outer(v, v)), rtol=1e-11, atol=1e-12)

        L = np.linalg.cholesky(A)
        np.testing.assert_allclose(
            triangular(jnp.asarray(L), jnp.asarray(rhs)),
            scipy.linalg.solve_triangular(L, rhs, lower=True, trans="T"),
            rtol=1e-12,
        )


@eqx.filter_jit
def _float32_pipeline(matrix, rhs, padded_lower, column, index, vector):
    factor = eager_cholesky(matrix)
    lower = factor.lower
    return {
        "factor": factor,
        "solution": cholesky_solve(lower, rhs),
        "log_det": log_determinant(lower),
        "appended": cholesky_append(padded_lower, column, index),
        "updated": cholesky_update(lower, vector, 1.0),
        "downdated": cholesky_update(lower, vector, -1.0),
        "gradient": jax.grad(lambda M: log_determinant(eager_cholesky(M).lower))(matrix),
    }


def test_float32_smoke():
    rng = np.random.default_rng(50)
    n, index = 5, 3
    A = _random_spd(rng, n)
    rhs = rng.normal(size=(n, 2))
    v = 0.3 * rng.normal(size=n)
    f32 = lambda a: jnp.asarray(a, dtype=jnp.float32)  # noqa: E731
    result = _float32_pipeline(
        f32(A), f32(rhs), f32(np.linalg.cholesky(_padded(A, index))), f32(A[:, index]), jnp.asarray(index), f32(v)
    )
    for leaf in jax.tree_util.tree_leaves(eqx.filter(result, eqx.is_inexact_array)):
        assert leaf.dtype == jnp.float32
        assert np.all(np.isfinite(np.asarray(leaf)))
    factor = result["factor"]
    assert factor.result == RESULTS.successful
    # Float32 accuracy on a matrix with condition number ~10.
    np.testing.assert_allclose(factor.lower, np.linalg.cholesky(A), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result["solution"], np.linalg.solve(A, rhs), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(result["log_det"]), np.linalg.slogdet(A)[1], rtol=1e-5)
    appended, ok = result["appended"]
    assert bool(ok)
    np.testing.assert_allclose(appended, np.linalg.cholesky(_padded(A, index + 1)), rtol=1e-5, atol=1e-5)
    for key, sign in (("updated", 1.0), ("downdated", -1.0)):
        updated, ok = result[key]
        assert bool(ok)
        np.testing.assert_allclose(updated, np.linalg.cholesky(A + sign * np.outer(v, v)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result["gradient"], np.linalg.inv(A), rtol=1e-4, atol=1e-5)

    # A singular Gram in float32 escalates the jitter from the float32 level (1e-6), and
    # an indefinite matrix gives a finite float32 placeholder.
    singular = f32(_squared_exponential_gram(np.array([[0.0], [0.0], [0.5], [2.0], [3.0]])))
    jittered = cholesky(singular)
    assert jittered.result == RESULTS.successful and jittered.lower.dtype == jnp.float32
    assert float(jittered.jitter) >= 1e-6 * (1 - 1e-6)
    assert np.all(np.isfinite(np.asarray(jittered.lower)))
    failed = cholesky(f32(np.diag([1.0, -1.0, 2.0, 1.0, 1.0])))
    assert failed.result == RESULTS.cholesky_failed and failed.lower.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(failed.lower)))
