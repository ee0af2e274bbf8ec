"""`gpcompose._errors`: the result codes print readably, and a run-time value error names the
public function that raised it, eagerly, inside a user's `jit` and under `vmap`."""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest

import gpcompose
from gpcompose import gp, kernels, means, sparse
from gpcompose.parameters import Real

NOISE_MESSAGE = "`noise_variance` must be finite and ≥ 0"  # an exact GP takes noise 0 (noise-free)
SPARSE_NOISE_MESSAGE = "`noise_variance` must be finite and strictly positive"


def test_results_items_print_their_name_or_message():
    assert repr(gpcompose.RESULTS.successful) == "gpcompose.RESULTS<successful>"
    assert str(gpcompose.RESULTS.successful) == "gpcompose.RESULTS<successful>"
    failed = repr(gpcompose.RESULTS.cholesky_failed)
    assert failed.startswith("gpcompose.RESULTS<The matrix was not positive definite")
    results = gpcompose.RESULTS
    batch = jax.vmap(lambda ok: results.where(ok, results.successful, results.update_failed))(jnp.array([True, False]))
    assert "successful" in repr(batch) and "rank-1 Cholesky update" in repr(batch)


def _problem():
    X = jnp.linspace(-1.0, 1.0, 6)[:, None]
    return kernels.SquaredExponential(), means.Zero(), X, jnp.sin(3 * X[:, 0])


def test_value_errors_name_the_public_function_called_eagerly():
    kernel, mean, X, y = _problem()
    with pytest.raises(eqx.EquinoxRuntimeError, match=f"gp.condition: {NOISE_MESSAGE}"):
        gp.condition(kernel, mean, X, y, -1.0)
    with pytest.raises(eqx.EquinoxRuntimeError, match=f"sparse.condition: {SPARSE_NOISE_MESSAGE}"):
        sparse.condition(kernel, mean, X, y, -1.0, X[:2])
    with pytest.raises(eqx.EquinoxRuntimeError, match="gp.update: The observation buffer is full"):
        gp.update(gp.condition(kernel, mean, X, y, 1e-3), X[0], 0.0, 1e-3)


def test_value_errors_inside_a_users_jit_name_the_function_after_an_earlier_valid_call():
    # The core tour's failure: a valid eager `gp.condition(..., 1e-3)`, then an ML-II-style
    # objective under the user's `jit` reaching an invalid noise. The traceback of such an
    # error may point at the earlier call; the message must name the function that raised.
    kernel, mean, X, y = _problem()
    gp.condition(kernel, mean, X, y, 1e-3)

    @eqx.filter_jit
    def objective(noise):
        return gp.log_marginal_likelihood(gp.condition(kernel, mean, X, y, noise))

    assert jnp.isfinite(objective(Real(1e-3)))
    with pytest.raises(eqx.EquinoxRuntimeError, match=f"gp.condition: {NOISE_MESSAGE}"):
        objective(Real(-1e-3))
    batched = eqx.filter_vmap(lambda value: objective(Real(value)))
    with pytest.raises(eqx.EquinoxRuntimeError, match=f"gp.condition: {NOISE_MESSAGE}"):
        batched(jnp.array([1e-3, -1e-3]))


def test_error_if_outside_a_public_function_keeps_its_message():
    from gpcompose._errors import error_if

    with pytest.raises(eqx.EquinoxRuntimeError, match=r"EquinoxRuntimeError: `x` is negative\."):
        jax.block_until_ready(error_if(jnp.ones(2), jnp.array(True), "`x` is negative."))


def test_value_errors_under_vmap_name_the_first_failing_batch_member():
    """Under `vmap` the message names the first member whose value is bad, also through a
    gradient and inside a user's `jit`; for nested `vmap`s, the member of the inner one."""
    kernel, mean, X, y = _problem()

    def objective(noise):
        return gp.log_marginal_likelihood(gp.condition(kernel, mean, X, y, noise))

    member = r" \(batch member {} of {} under `vmap`\)"
    with pytest.raises(eqx.EquinoxRuntimeError, match=f"gp.condition: {NOISE_MESSAGE}.{member.format(1, 4)}"):
        jax.vmap(objective)(jnp.array([1e-3, -1e-3, 1e-2, -1.0]))
    with pytest.raises(Exception, match=f"{NOISE_MESSAGE}.{member.format(2, 3)}"):
        jax.block_until_ready(jax.jit(jax.vmap(jax.grad(objective)))(jnp.array([1e-3, 1e-2, jnp.nan])))
    with pytest.raises(eqx.EquinoxRuntimeError, match=f"{NOISE_MESSAGE}.{member.format(0, 2)}"):
        jax.vmap(jax.vmap(objective))(jnp.array([[1e-3, 1e-2], [-1.0, 1e-3]]))
    gradients = jax.vmap(jax.grad(objective))(jnp.array([1e-3, 1e-2]))  # valid members: no error
    assert jnp.all(jnp.isfinite(gradients))
