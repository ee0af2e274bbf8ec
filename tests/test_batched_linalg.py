"""Tests of `gpcompose._linalg` under `vmap`: batched Cholesky factors and triangular solves
equal the unbatched ones in every derivative mode, and on the CPU every LAPACK call sees one
matrix (jaxlib's batched CPU kernels can deadlock XLA's thread pool; `_linalg` docstring),
while other platforms keep one batched call."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import RESULTS
from gpcompose._linalg import cholesky, cholesky_solve, log_determinant, solve_triangular

_NUM_POINTS = 6
_INPUTS = np.linspace(-1.0, 1.5, _NUM_POINTS)[:, None] * np.array([[1.0, -0.5]])
_SQUARED_DISTANCES = np.sum((_INPUTS[:, None, :] - _INPUTS[None, :, :]) ** 2, axis=-1)
# One (log-lengthscale, log-variance, log-noise) and one target per member of the batch.
_THETAS = np.array([[-0.3, 0.2, -2.0], [0.1, -0.4, -3.0], [0.5, 0.6, -1.5], [-0.8, 0.0, -2.5]])
_TARGETS = np.random.default_rng(0).normal(size=(len(_THETAS), _NUM_POINTS))


def _gram(theta):
    lengthscale, variance, noise = jnp.exp(theta[0]), jnp.exp(theta[1]), jnp.exp(theta[2])
    gram = variance * jnp.exp(-0.5 * jnp.asarray(_SQUARED_DISTANCES) / lengthscale**2)
    return gram + noise * jnp.eye(_NUM_POINTS)


def _log_marginal_likelihood(theta, y):
    """log N(y; 0, K_θ + σ²I) up to its constant, through the factor and both solves."""
    lower = cholesky(_gram(theta)).lower
    return -0.5 * y @ cholesky_solve(lower, y) - 0.5 * log_determinant(lower)


def _random_spd(rng, n):
    B = rng.normal(size=(n, n))
    return B @ B.T + n * np.eye(n)


def _lowers(rng, batch, n):
    return np.stack([np.linalg.cholesky(_random_spd(rng, n)) for _ in range(batch)])


def _per_member(function, *batched_arguments):
    return np.stack([np.asarray(function(*arguments)) for arguments in zip(*batched_arguments)])


# ----------------------------------------------------------------- batched equals unbatched


def test_vmapped_cholesky_equals_unbatched_and_isolates_a_failing_member():
    rng = np.random.default_rng(1)
    batch = np.stack([_random_spd(rng, 5), np.diag([1.0, -1.0, 2.0, 1.0, 1.0]), _random_spd(rng, 5)])
    factors = jax.jit(jax.vmap(cholesky))(batch)
    single = jax.jit(cholesky)
    for member, matrix in enumerate(batch):
        expected = single(matrix)
        np.testing.assert_allclose(factors.lower[member], expected.lower, rtol=1e-14, atol=1e-15)
        assert float(factors.jitter[member]) == float(expected.jitter)
    np.testing.assert_array_equal(factors.result == RESULTS.successful, [True, False, True])
    assert np.all(np.isfinite(factors.lower))


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("rhs_shape", [(5,), (5, 3)])
@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)], ids=["both", "matrix", "rhs"])
def test_vmapped_solve_triangular_equals_unbatched(transpose, rhs_shape, in_axes):
    rng = np.random.default_rng(2)
    lowers = _lowers(rng, 4, 5)
    rhs = rng.normal(size=(4, *rhs_shape))
    lowers_in = lowers if in_axes[0] == 0 else lowers[0]
    rhs_in = rhs if in_axes[1] == 0 else rhs[0]
    solve = jax.jit(jax.vmap(lambda lower, b: solve_triangular(lower, b, transpose=transpose), in_axes=in_axes))
    expected = _per_member(
        lambda lower, b: solve_triangular(lower, b, transpose=transpose),
        lowers if in_axes[0] == 0 else [lowers[0]] * 4,
        rhs if in_axes[1] == 0 else [rhs[0]] * 4,
    )
    np.testing.assert_allclose(solve(lowers_in, rhs_in), expected, rtol=1e-13, atol=1e-14)
    dense = [(lower.T if transpose else lower) for lower in (lowers if in_axes[0] == 0 else [lowers[0]] * 4)]
    reference = np.stack([np.linalg.solve(a, b) for a, b in zip(dense, rhs if in_axes[1] == 0 else [rhs[0]] * 4)])
    np.testing.assert_allclose(expected, reference, rtol=1e-10, atol=1e-12)


def test_nested_vmap_of_cholesky_solve_equals_unbatched():
    rng = np.random.default_rng(3)
    matrices = np.stack([_random_spd(rng, 4) for _ in range(6)]).reshape(2, 3, 4, 4)
    rhs = rng.normal(size=(2, 3, 4, 2))

    def solve(matrix, b):
        return cholesky_solve(cholesky(matrix).lower, b)

    nested = jax.jit(jax.vmap(jax.vmap(solve)))(matrices, rhs)
    expected = _per_member(solve, matrices.reshape(6, 4, 4), rhs.reshape(6, 4, 2))
    np.testing.assert_allclose(nested.reshape(6, 4, 2), expected, rtol=1e-13, atol=1e-14)


# ------------------------------------------------------------------- derivatives of batches


def test_grad_of_vmapped_lml_and_vmap_of_grad_equal_per_member_gradients():
    thetas, targets = jnp.asarray(_THETAS), jnp.asarray(_TARGETS)
    single = jax.jit(jax.grad(_log_marginal_likelihood))
    expected = _per_member(single, thetas, targets)
    vmap_of_grad = jax.jit(jax.vmap(jax.grad(_log_marginal_likelihood)))(thetas, targets)
    grad_of_vmap = jax.jit(jax.grad(lambda t: jnp.sum(jax.vmap(_log_marginal_likelihood)(t, targets))))(thetas)
    np.testing.assert_allclose(vmap_of_grad, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad_of_vmap, expected, rtol=1e-12, atol=1e-12)
    # The per-member gradient against central differences.
    step = 1e-6
    value = jax.jit(_log_marginal_likelihood)
    numeric = [
        (value(thetas[0] + step * e, targets[0]) - value(thetas[0] - step * e, targets[0])) / (2 * step)
        for e in jnp.eye(3)
    ]
    np.testing.assert_allclose(expected[0], numeric, rtol=1e-6, atol=1e-7)


def test_forward_mode_and_hessian_under_vmap_equal_per_member():
    thetas, targets = jnp.asarray(_THETAS), jnp.asarray(_TARGETS)
    direction = jnp.asarray([0.3, -1.0, 0.5])
    gradients = _per_member(jax.jit(jax.grad(_log_marginal_likelihood)), thetas, targets)

    def directional(theta, y):
        return jax.jvp(lambda t: _log_marginal_likelihood(t, y), (theta,), (direction,))[1]

    np.testing.assert_allclose(
        jax.jit(jax.vmap(directional))(thetas, targets), gradients @ direction, rtol=1e-12, atol=1e-12
    )
    hessian = jax.hessian(_log_marginal_likelihood)
    expected = _per_member(jax.jit(hessian), thetas, targets)
    np.testing.assert_allclose(jax.jit(jax.vmap(hessian))(thetas, targets), expected, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(expected, np.swapaxes(expected, 1, 2), rtol=1e-10, atol=1e-10)


# --------------------------------------------------- one LAPACK call per matrix on the CPU

# A Cholesky or triangular-solve custom call (LAPACK, cuSOLVER), or XLA's own triangular solve.
_FACTORISATION = re.compile(
    r'(?:stablehlo\.custom_call @(\w*(?:potrf|trsm)\w*)|"stablehlo\.(triangular_solve)")\(.*?\).*? : \(([^)]*)\)'
)


def _factorisation_calls(lowered_text):
    """(operation, operand ranks) of every factorisation or solve in StableHLO text."""
    calls = []
    for target, operation, operand_types in _FACTORISATION.findall(lowered_text):
        shapes = re.findall(r"tensor<([^>]*)>", operand_types)
        calls.append((target or operation, [len(shape.split("x")) - 1 for shape in shapes]))
    return calls


def _vmapped_programs():
    thetas, targets = jnp.asarray(_THETAS), jnp.asarray(_TARGETS)
    lowers = jnp.asarray(_lowers(np.random.default_rng(4), 4, 5))
    rhs = jnp.ones((4, 5, 2))
    direction = jnp.ones(3)
    return {
        "cholesky": (jax.vmap(lambda t: cholesky(_gram(t)).lower), (thetas,)),
        "solve": (jax.vmap(solve_triangular), (lowers, rhs)),
        "transposed solve": (jax.vmap(lambda lower, b: solve_triangular(lower, b, transpose=True)), (lowers, rhs)),
        "vmap of grad": (jax.vmap(jax.grad(_log_marginal_likelihood)), (thetas, targets)),
        "grad of vmap": (jax.grad(lambda t, y: jnp.sum(jax.vmap(_log_marginal_likelihood)(t, y))), (thetas, targets)),
        "vmap of jvp": (
            jax.vmap(lambda t, y: jax.jvp(lambda s: _log_marginal_likelihood(s, y), (t,), (direction,))[1]),
            (thetas, targets),
        ),
        "nested vmap": (
            jax.vmap(jax.vmap(jax.grad(_log_marginal_likelihood))),
            (thetas.reshape(2, 2, 3), targets.reshape(2, 2, -1)),
        ),
    }


@pytest.mark.parametrize("name", list(_vmapped_programs()))
def test_cpu_lowering_calls_lapack_one_matrix_at_a_time(name):
    function, arguments = _vmapped_programs()[name]
    text = jax.jit(function).trace(*arguments).lower(lowering_platforms=("cpu",)).as_text()
    calls = _factorisation_calls(text)
    assert calls, f"no LAPACK factorisation or solve found in the lowering of {name}"
    batched = [(target, ranks) for target, ranks in calls if any(rank != 2 for rank in ranks)]
    assert not batched, f"batched LAPACK calls in {name}: {batched}"


def test_gpu_lowering_keeps_batched_calls():
    # Lowered for CUDA without a GPU (jax.export): the batch stays one cuSOLVER/XLA call.
    function, arguments = _vmapped_programs()["vmap of grad"]
    text = jax.export.export(jax.jit(function), platforms=["cuda"])(*arguments).mlir_module()
    calls = _factorisation_calls(text)
    assert {name for name, _ in calls} >= {"cusolver_potrf_ffi", "triangular_solve"}, calls
    assert all(rank == 3 for _, ranks in calls for rank in ranks), calls
