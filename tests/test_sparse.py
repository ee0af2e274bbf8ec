import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gpcompose import RESULTS, gp, sparse
from gpcompose.parameters import Positive
from gpcompose.sparse import INDUCING_JITTER

from .helpers import autodiff_gradient, dense_sparse_posterior, finite_difference_gradient
from .test_gp import make_problem


def test_inducing_points_at_the_data_reproduce_the_exact_posterior(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    X_new = jax.random.normal(getkey(), (8, 2))
    exact = gp.condition(kernel, mean, X, y, noise)
    approximate = sparse.condition(kernel, mean, X, y, noise, X, inducing_jitter=0.0)
    for a, b in zip(sparse.predict(approximate, X_new), gp.predict(exact, X_new)):
        np.testing.assert_allclose(a, b, atol=1e-8)
    np.testing.assert_allclose(sparse.elbo(approximate), gp.log_marginal_likelihood(exact), atol=1e-8)


@pytest.mark.parametrize("jitter", [None, 0.0, 1e-3])
def test_matches_dense_textbook_formulae(getkey, jitter):
    """None: the default jitter (`INDUCING_JITTER`) on K_ZZ."""
    kernel, mean, X, y, noise = make_problem(getkey())
    Z = X[:7] + 0.1
    X_new = jax.random.normal(getkey(), (6, 2))
    if jitter is None:
        posterior = sparse.condition(kernel, mean, X, y, noise, Z)
        jitter = INDUCING_JITTER
    else:
        posterior = sparse.condition(kernel, mean, X, y, noise, Z, inducing_jitter=jitter)
    mu, cov, bound = dense_sparse_posterior(kernel, mean, X, y, noise, Z, X_new, relative_jitter=jitter)
    mean_pred, variance = sparse.predict(posterior, X_new)
    _, covariance = sparse.predict_covariance(posterior, X_new)
    np.testing.assert_allclose(mean_pred, mu, atol=1e-8)
    np.testing.assert_allclose(sparse.predict_mean(posterior, X_new), mu, atol=1e-8)
    np.testing.assert_allclose(variance, np.diag(cov), atol=1e-8)
    np.testing.assert_allclose(covariance, cov, atol=1e-8)
    np.testing.assert_allclose(sparse.elbo(posterior), bound, rtol=1e-9)


def test_predict_y_adds_the_noise_to_the_dense_sgpr_predictive_and_equals_the_exact_one_at_z_equal_x(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    X_new = jax.random.normal(getkey(), (6, 2))
    new_noise = 0.01 + 0.01 * np.arange(6.0)
    posterior = sparse.condition(kernel, mean, X, y, noise, X[:7] + 0.1)
    mu, cov, _ = dense_sparse_posterior(kernel, mean, X, y, noise, X[:7] + 0.1, X_new, relative_jitter=INDUCING_JITTER)
    for mean_y, variance_y in (sparse.predict_y(posterior, X_new, new_noise), posterior.predict_y(X_new, new_noise)):
        np.testing.assert_allclose(mean_y, mu, atol=1e-8)
        np.testing.assert_allclose(variance_y, np.diag(cov) + new_noise, atol=1e-8)
    full = sparse.condition(kernel, mean, X, y, noise, X, inducing_jitter=0.0)
    exact = gp.condition(kernel, mean, X, y, noise)
    for got, expected in zip(sparse.predict_y(full, X_new, Positive(0.03)), gp.predict_y(exact, X_new, 0.03)):
        np.testing.assert_allclose(got, expected, atol=1e-7)
    with pytest.raises(Exception, match="gpcompose.predict_y: `noise_variance` must be finite and strictly positive"):
        sparse.predict_y(posterior, X_new, 0.0)


def test_elbo_bounds_the_marginal_likelihood_and_grows_with_nested_inducing_sets(getkey):
    kernel, mean, X, y, noise = make_problem(getkey(), num_points=40)
    lml = gp.log_marginal_likelihood(gp.condition(kernel, mean, X, y, noise))
    order = jax.random.permutation(getkey(), X.shape[0])
    previous = -np.inf
    for size in (2, 5, 10, 20, 30, 40):
        value = sparse.elbo(sparse.condition(kernel, mean, X, y, noise, X[order[:size]], inducing_jitter=0.0))
        assert value <= lml + 1e-8
        assert value >= previous - 1e-8
        previous = value
    np.testing.assert_allclose(previous, lml, atol=1e-8)


def test_padded_buffers_equal_unpadded(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    Z = X[:6]
    X_new = jax.random.normal(getkey(), (5, 2))
    reference = sparse.condition(kernel, mean, X, y, noise, Z)
    data_mask = jnp.arange(40) < X.shape[0]
    inducing_mask = jnp.arange(10) < 6
    padded = sparse.condition(
        kernel,
        mean,
        jnp.pad(X, ((0, 10), (0, 0)), constant_values=7.0),
        jnp.pad(y, (0, 10), constant_values=3.0),
        jnp.pad(noise, (0, 10), constant_values=0.5),
        jnp.pad(Z, ((0, 4), (0, 0)), constant_values=-5.0),
        mask=data_mask,
        inducing_mask=inducing_mask,
    )
    np.testing.assert_allclose(sparse.elbo(padded), sparse.elbo(reference), atol=1e-9)
    for a, b in zip(sparse.predict(padded, X_new), sparse.predict(reference, X_new)):
        np.testing.assert_allclose(a, b, atol=1e-9)
    np.testing.assert_allclose(sparse.predict_mean(padded, X_new), sparse.predict(reference, X_new)[0], atol=1e-9)
    capacity = sparse.condition(kernel, mean, X, y, noise, Z, capacity=45)
    np.testing.assert_allclose(sparse.elbo(capacity), sparse.elbo(reference), atol=1e-9)


def test_observation_updates_equal_recomputation(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    Z = X[::3]
    X_new = jax.random.normal(getkey(), (5, 2))
    start = 18
    posterior = sparse.condition(kernel, mean, X[:start], y[:start], noise[:start], Z, capacity=X.shape[0])
    for index in range(start, X.shape[0]):
        posterior = sparse.update(posterior, X[index], y[index], noise[index])
    reference = sparse.condition(kernel, mean, X, y, noise, Z)
    np.testing.assert_allclose(posterior.inner_lower, reference.inner_lower, atol=1e-8)
    np.testing.assert_allclose(posterior.projected_residual, reference.projected_residual, atol=1e-8)
    np.testing.assert_allclose(sparse.elbo(posterior), sparse.elbo(reference), atol=1e-8)
    for a, b in zip(sparse.predict(posterior, X_new), sparse.predict(reference, X_new)):
        np.testing.assert_allclose(a, b, atol=1e-8)
    assert posterior.result == RESULTS.successful


def test_observation_with_co_located_inducing_point_equals_recomputation(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    X_new = jax.random.normal(getkey(), (5, 2))
    start = 25
    num_inducing = 6
    inducing_capacity = num_inducing + X.shape[0] - start
    Z = jnp.zeros((inducing_capacity, 2)).at[:num_inducing].set(X[:num_inducing])
    posterior = sparse.condition(
        kernel,
        mean,
        X[:start],
        y[:start],
        noise[:start],
        Z,
        capacity=X.shape[0],
        inducing_mask=jnp.arange(inducing_capacity) < num_inducing,
    )
    for index in range(start, X.shape[0]):
        posterior = sparse.add_inducing_point(posterior, X[index])
        posterior = sparse.update(posterior, X[index], y[index], noise[index])
    Z_all = jnp.concatenate([X[:num_inducing], X[start:]])
    reference = sparse.condition(kernel, mean, X, y, noise, Z_all)
    np.testing.assert_allclose(posterior.inducing_factor.lower, reference.inducing_factor.lower, atol=1e-8)
    np.testing.assert_allclose(posterior.inner_lower, reference.inner_lower, atol=1e-8)
    np.testing.assert_allclose(sparse.elbo(posterior), sparse.elbo(reference), atol=1e-8)
    for a, b in zip(sparse.predict(posterior, X_new), sparse.predict(reference, X_new)):
        np.testing.assert_allclose(a, b, atol=1e-8)


def test_full_inducing_buffer_raises(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    posterior = sparse.condition(kernel, mean, X, y, noise, X[:4])
    with pytest.raises(Exception, match="inducing-point buffer is full"):
        sparse.add_inducing_point(posterior, X[5])


def test_add_inducing_point_where_false_leaves_the_posterior_and_vmaps(getkey):
    """`where=False` returns the posterior unchanged, also from a full buffer; vmapped over
    a batch that adds to one posterior with room and not to a full one (the untaken branch
    of a vmapped `lax.cond` runs like this), each gets its own result."""
    kernel, mean, X, y, noise = make_problem(getkey())
    full = sparse.condition(kernel, mean, X, y, noise, X[:4])
    unchanged = sparse.add_inducing_point(full, X[5], where=False)
    for a, b in zip(jax.tree_util.tree_leaves(full), jax.tree_util.tree_leaves(unchanged)):
        np.testing.assert_array_equal(a, b)
    with_room = sparse.condition(
        kernel, mean, X, y, noise, jnp.zeros((5, 2)).at[:4].set(X[:4]), inducing_mask=jnp.arange(5) < 4
    )
    added_alone = sparse.add_inducing_point(with_room, X[5])
    batch = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), with_room, with_room)
    batch = eqx.tree_at(lambda p: p.inducing_mask, batch, jnp.stack([jnp.arange(5) < 4, jnp.ones(5, bool)]))
    batched = jax.vmap(lambda p, w: sparse.add_inducing_point(p, X[5], where=w))(batch, jnp.array([True, False]))
    np.testing.assert_allclose(batched.inducing_factor.lower[0], added_alone.inducing_factor.lower, atol=1e-12)
    np.testing.assert_array_equal(batched.inducing_mask[1], jnp.ones(5, bool))
    np.testing.assert_array_equal(batched.inducing_factor.lower[1], with_room.inducing_factor.lower)


def test_lookahead_variance_equals_refit_and_never_increases(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    Z = X[:8]
    posterior = sparse.condition(kernel, mean, X, y, noise, Z)
    X_query = jax.random.normal(getkey(), (10, 2))
    x = jax.random.normal(getkey(), (2,))
    _, current = sparse.predict(posterior, X_query)
    lookahead = sparse.lookahead_variance(posterior, X_query, x, 0.03)
    for unseen_value in (-2.0, 4.0):
        refit = sparse.condition(
            kernel, mean, jnp.concatenate([X, x[None]]), jnp.append(y, unseen_value), jnp.append(noise, 0.03), Z
        )
        np.testing.assert_allclose(lookahead, sparse.predict(refit, X_query)[1], atol=1e-10)
    assert np.all(lookahead <= current + 1e-12)


def test_gradient_of_elbo_matches_finite_differences(getkey):
    kernel, mean, X, y, noise = make_problem(getkey(), num_points=20)
    Z = X[:6]
    params = {"kernel": kernel, "mean": mean, "noise": Positive(0.05)}

    def objective(p):
        return sparse.elbo(sparse.condition(p["kernel"], p["mean"], X, y, p["noise"], Z))

    np.testing.assert_allclose(
        autodiff_gradient(objective, params), finite_difference_gradient(objective, params), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("masked", [False, True])
def test_derivatives_of_elbo_match_dense_autodiff(getkey, masked):
    """Gradient (and, without masks, Hessian) of the bound in the kernel, mean, per-row noise
    and inducing inputs, against autodiff of the textbook bound on the used rows and slots
    (explicit solves, K_ZZ + εI with the posterior's ε). `masked`: unused data rows and a free
    inducing slot (with masks the Matérn kernel's second derivatives are NaN: not compared)."""
    kernel, mean, X, y, noise = make_problem(getkey(), num_points=16)
    Z = X[:6] + 0.05
    used, slots = (np.arange(16) % 5 != 2, np.arange(6) != 3) if masked else (np.ones(16, bool), np.ones(6, bool))
    params = {"kernel": kernel, "mean": mean, "noise": Positive(noise), "Z": Z}
    trainable, static = eqx.partition(params, eqx.is_inexact_array)
    epsilon = sparse.condition(kernel, mean, X, y, noise, Z, mask=used, inducing_mask=slots).inducing_factor.jitter

    def ours(p):
        posterior = sparse.condition(p["kernel"], p["mean"], X, y, p["noise"], p["Z"], mask=used, inducing_mask=slots)
        return sparse.elbo(posterior)

    def textbook(p):
        Xu, Zu, variance = X[used], p["Z"][slots], p["noise"].value[used]
        Kzz = p["kernel"].cross(Zu, Zu) + epsilon * jnp.eye(Zu.shape[0])
        Kzx = p["kernel"].cross(Zu, Xu)
        Q = Kzx.T @ jnp.linalg.solve(Kzz, Kzx)
        covariance = Q + jnp.diag(variance)
        residual = y[used] - p["mean"](Xu)
        _, log_determinant = jnp.linalg.slogdet(covariance)
        log_normal = -0.5 * residual @ jnp.linalg.solve(covariance, residual) - 0.5 * log_determinant
        trace = jnp.sum((p["kernel"].diagonal(Xu) - jnp.diag(Q)) / variance)
        return log_normal - 0.5 * Xu.shape[0] * jnp.log(2 * jnp.pi) - 0.5 * trace

    def flat(function):
        structure = jax.tree.structure(trainable)
        return lambda leaves: function(eqx.combine(jax.tree.unflatten(structure, leaves), static))

    leaves = jax.tree.leaves(trainable)
    np.testing.assert_allclose(ours(params), textbook(params), rtol=1e-10)
    # Compiled (`jax.jit`), not run op by op: the same derivatives to rounding, one compile each.
    for got, expected in zip(
        jax.jit(jax.grad(flat(ours)))(leaves), jax.jit(jax.grad(flat(textbook)))(leaves), strict=True
    ):
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)
    if not masked:
        hessian_got = jax.jit(jax.hessian(flat(ours)))(leaves)
        hessian_expected = jax.jit(jax.hessian(flat(textbook)))(leaves)
        for got, expected in zip(jax.tree.leaves(hessian_got), jax.tree.leaves(hessian_expected), strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_jit_traces_once_for_new_values(getkey):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def pipeline(kernel, mean, X, y, noise, Z, X_new, x):
        posterior = sparse.condition(
            kernel,
            mean,
            X,
            y,
            noise,
            jnp.pad(Z, ((0, 1), (0, 0))),
            capacity=X.shape[0] + 1,
            inducing_mask=jnp.arange(Z.shape[0] + 1) < Z.shape[0],
        )
        updated = sparse.update(sparse.add_inducing_point(posterior, x), x, 0.2, 0.01)
        return (
            sparse.predict(updated, X_new),
            sparse.elbo(updated),
            sparse.lookahead_variance(posterior, X_new, x, 0.01),
        )

    for _ in range(3):
        kernel, mean, X, y, noise = make_problem(getkey())
        Z = X[:5] + 0.1 * jax.random.normal(getkey(), (5, 2))
        pipeline(kernel, mean, X, y, noise, Z, jax.random.normal(getkey(), (4, 2)), jax.random.normal(getkey(), (2,)))


def test_vmap_over_inducing_sets_equals_loop(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    Zs = jax.random.normal(getkey(), (4, 6, 2))

    def bound(Z):
        return sparse.elbo(sparse.condition(kernel, mean, X, y, noise, Z))

    batched = jax.vmap(bound)(Zs)
    np.testing.assert_allclose(batched, [bound(Z) for Z in Zs], rtol=1e-12)


def test_float32_runs_without_nan(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    from gpcompose import kernels, means

    kernel32 = kernels.SquaredExponential(lengthscale=jnp.float32(1.0), variance=jnp.float32(1.0))
    X32, y32 = X.astype(jnp.float32), y.astype(jnp.float32)
    posterior = sparse.condition(kernel32, means.Zero(), X32, y32, jnp.float32(0.05), X32[:6], capacity=X.shape[0] + 1)
    posterior = sparse.update(posterior, X32[0] + 0.3, y32[0], jnp.float32(0.05))
    values = (*sparse.predict(posterior, X32[:5]), sparse.elbo(posterior))
    for value in values:
        assert value.dtype == jnp.float32
        assert np.all(np.isfinite(value))


def test_shape_errors_name_the_argument(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    with pytest.raises(ValueError, match="`Z`"):
        sparse.condition(kernel, mean, X, y, noise, X[:4, :1])
    with pytest.raises(ValueError, match="`inducing_mask`"):
        sparse.condition(kernel, mean, X, y, noise, X[:4], inducing_mask=jnp.ones(3, bool))
    posterior = sparse.condition(kernel, mean, X, y, noise, X[:4], capacity=31)
    with pytest.raises(ValueError, match="`x`"):
        sparse.update(posterior, jnp.zeros(3), 0.0, 0.1)


def test_vmap_of_updates_and_lookahead_over_candidates_equals_loop(getkey):
    kernel, mean, X, y, noise = make_problem(getkey())
    posterior = sparse.condition(
        kernel,
        mean,
        X,
        y,
        noise,
        jnp.pad(X[:5], ((0, 1), (0, 0))),
        capacity=X.shape[0] + 1,
        inducing_mask=jnp.arange(6) < 5,
    )
    candidates = jax.random.normal(getkey(), (4, 2))
    X_query = jax.random.normal(getkey(), (5, 2))

    def appended_bound(x):
        return sparse.elbo(sparse.update(sparse.add_inducing_point(posterior, x), x, 0.5, 0.02))

    def lookahead(x):
        return sparse.lookahead_variance(posterior, X_query, x, 0.02)

    np.testing.assert_allclose(
        jax.vmap(appended_bound)(candidates), [appended_bound(x) for x in candidates], rtol=1e-12
    )
    np.testing.assert_allclose(
        jax.vmap(lookahead)(candidates), np.stack([lookahead(x) for x in candidates]), atol=1e-14
    )


def test_reducible_variance_is_the_variance_less_the_floor_left_by_adding_x_to_the_inducing_set(getkey):
    """Dense brute force: s²_red(x) = s²(x) − r′(x), where r′(x) = k(x, x) − k′ᵀ(K′ + εI)⁻¹k′
    is the Nyström residual at x once x joins Z (K′, k′ over Z ∪ {x}, the same absolute ε)."""
    kernel, mean, X, y, noise = make_problem(getkey())
    Z = X[:7] + 0.1
    X_new = jnp.concatenate([jax.random.normal(getkey(), (5, 2)), Z[:2], X[10:12]])  # also at Z and at data
    relative_jitter = 1e-3
    posterior = sparse.condition(kernel, mean, X, y, noise, Z, inducing_jitter=relative_jitter)
    jitter = relative_jitter * float(kernel.variance.value)
    assert float(posterior.inducing_factor.jitter) == pytest.approx(jitter, rel=1e-12)
    _, covariance, _ = dense_sparse_posterior(kernel, mean, X, y, noise, Z, X_new, relative_jitter=relative_jitter)
    expected = []
    for x in np.asarray(X_new):
        augmented = np.concatenate([np.asarray(Z), x[None]])
        gram = np.asarray(kernel.gram(jnp.asarray(augmented))) + jitter * np.eye(augmented.shape[0])
        column = np.asarray(kernel.cross(jnp.asarray(augmented), jnp.asarray(x[None])))[:, 0]
        floor = float(kernel.evaluate(jnp.asarray(x), jnp.asarray(x))) - column @ np.linalg.solve(gram, column)
        expected.append(floor)
    expected = np.diag(covariance) - np.array(expected)
    mean_reducible, variance_reducible = sparse.reducible_variance(posterior, X_new)
    np.testing.assert_allclose(mean_reducible, sparse.predict(posterior, X_new)[0], atol=1e-10)
    np.testing.assert_allclose(variance_reducible, expected, rtol=1e-6, atol=1e-10)
    assert np.all(np.asarray(variance_reducible) <= np.asarray(sparse.predict(posterior, X_new)[1]) + 1e-12)
