import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import gpcompose
from gpcompose import gp, kernels, means, priors, sparse
from gpcompose.parameters import Fixed, Positive, Real

from .test_gp import make_problem


def test_map_of_a_gaussian_objective_with_a_normal_prior():
    # log N(x; 4, 1) + log N(x; 2, 1) peaks at x = 3.
    params = {"x": Real(0.0, prior=priors.Normal(2.0, 1.0)), "fixed": Fixed(5.0)}
    fit = gpcompose.maximize(lambda p, _: -0.5 * (p["x"].value - 4.0) ** 2, params)
    np.testing.assert_allclose(fit.params["x"].value, 3.0, atol=1e-6)
    assert fit.params["fixed"].value == 5.0
    assert fit.result == gpcompose.RESULTS.successful


def test_the_result_code_prints_readably():
    # optimistix's own `successful` prints as `RESULTS<>`; `maximize` returns gpcompose's codes.
    fit = gpcompose.maximize(lambda p, _: -((p.value - 1.0) ** 2), Real(0.0))
    assert "successful" in repr(fit) and "successful" in str(fit)
    assert "RESULTS<>" not in repr(fit)
    stopped = gpcompose.maximize(lambda p, _: -((p.value - 1.0) ** 4), Real(0.0), max_steps=1)
    assert stopped.result == gpcompose.RESULTS.nonlinear_max_steps_reached
    assert "maximum number of steps" in repr(stopped.result)


def test_map_includes_the_log_jacobian_of_the_transform():
    # With x = exp(u) and log x ~ N(m, s²), the density of u is N(u; m, s²): its mode is u = m.
    params = Positive(1.0, transform="exp", prior=priors.LogNormal(0.7, 0.3))
    fit = gpcompose.maximize(lambda p, _: jnp.zeros(()), params)
    np.testing.assert_allclose(fit.params.value, np.exp(0.7), rtol=1e-6)
    without_prior = gpcompose.maximize(lambda p, _: -((p.value - 2.0) ** 2), params, include_prior=False)
    np.testing.assert_allclose(without_prior.params.value, 2.0, rtol=1e-6)


def _log_marginal_likelihood(params, data):
    X, y = data
    return gp.log_marginal_likelihood(gp.condition(params["kernel"], params["mean"], X, y, params["noise"]))


def _gp_parameters():
    return {
        "kernel": kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0),
        "mean": means.Constant(0.0),
        "noise": Positive(0.5),
    }


def test_ml2_reaches_a_stationary_point_that_improves_the_objective(getkey):
    _, _, X, y, _ = make_problem(getkey(), num_points=40)
    params = _gp_parameters()
    fit = gpcompose.maximize(_log_marginal_likelihood, params, (X, y))
    vector, unflatten = gpcompose.parameters.flatten(fit.params)
    gradient = jax.grad(lambda v: _log_marginal_likelihood(unflatten(v), (X, y)))(vector)
    assert np.max(np.abs(gradient)) < 1e-4
    assert fit.value > _log_marginal_likelihood(params, (X, y))
    np.testing.assert_allclose(fit.value, _log_marginal_likelihood(fit.params, (X, y)), rtol=1e-12)


def test_ml2_on_noise_free_data_with_the_default_noise_parameter_ends_at_a_valid_noise():
    """The core tour's ML-II (SE kernel, Gamma prior on the lengthscales, constant mean, noise
    `Positive(0.1)`, default settings) on noise-free data. BFGS drives the noise's u towards −∞
    and tries steps where softplus(u) underflows to 0 (here seed 3), which `gp.condition`
    would reject; every fit must end successfully, finite, with a noise variance above 0."""
    floor = float(jnp.finfo(jnp.float64).tiny)  # `Positive`'s lowest value above minimum 0
    for seed in range(8):
        X = jax.random.uniform(jax.random.key(seed), (30, 2), minval=-3, maxval=3)
        y = jnp.sin(X[:, 0]) + 0.1 * X[:, 1] ** 2
        params = {
            "kernel": kernels.SquaredExponential(lengthscale=Positive(jnp.ones(2), prior=priors.Gamma(1.0, 2.0))),
            "mean": means.Constant(0.0),
            "noise": Positive(0.1),
        }
        fit = gpcompose.maximize(_log_marginal_likelihood, params, (X, y))
        assert fit.result == gpcompose.RESULTS.successful and bool(fit.finite), seed
        assert np.isfinite(float(_log_marginal_likelihood(fit.params, (X, y)))), seed
        assert floor <= float(fit.params["noise"].value) < 1e-6, seed


def test_sparse_map_fit_runs_and_respects_priors(getkey):
    _, _, X, y, _ = make_problem(getkey(), num_points=40)
    params = {
        "kernel": kernels.Matern52(lengthscale=Positive(jnp.ones(2), prior=priors.Gamma(1.0, 2.0))),
        "mean": means.Zero(),
        "noise": Positive(0.1, prior=priors.LogNormal(-2.0, 1.0)),
    }

    def elbo(p, data):
        X, y, Z = data
        return sparse.elbo(sparse.condition(p["kernel"], p["mean"], X, y, p["noise"], Z))

    fit = gpcompose.maximize(elbo, params, (X, y, X[:10]))
    np.testing.assert_allclose(
        fit.value, elbo(fit.params, (X, y, X[:10])) + gpcompose.parameters.log_prior(fit.params), rtol=1e-12
    )
    assert fit.value > elbo(params, (X, y, X[:10])) + gpcompose.parameters.log_prior(params)


def test_new_data_reuse_the_compiled_fit(getkey):
    traces = []

    def objective(params, data):
        traces.append(None)
        return _log_marginal_likelihood(params, data)

    params = {"kernel": kernels.Matern32(), "mean": means.Zero(), "noise": Positive(0.2)}
    _, _, X, y, _ = make_problem(getkey(), num_points=12)
    gpcompose.maximize(objective, params, (X, y))
    first = len(traces)
    _, _, X, y, _ = make_problem(getkey(), num_points=12)
    gpcompose.maximize(objective, params, (X, y))
    assert len(traces) == first


def test_vmap_over_datasets_equals_loop(getkey):
    params = {"kernel": kernels.SquaredExponential(), "mean": means.Zero(), "noise": Positive(0.2)}
    problems = [make_problem(getkey(), num_points=12)[2:4] for _ in range(3)]
    X = jnp.stack([p[0] for p in problems])
    y = jnp.stack([p[1] for p in problems])

    def fit_value(X, y):
        return gpcompose.maximize(_log_marginal_likelihood, params, (X, y), max_steps=100).value

    batched = jax.vmap(fit_value)(X, y)
    np.testing.assert_allclose(batched, [fit_value(X[i], y[i]) for i in range(3)], rtol=1e-9)


def test_scaled_objective_reaches_the_same_optimum_in_fewer_steps():
    """A sum over N points: unscaled, BFGS's first step −∇ has size O(N) and the line
    search halves it for many steps; with `scale=N` the same optimum is reached sooner
    and the reported value stays unscaled."""
    num_points = 5000
    data = jnp.linspace(-1.0, 3.0, num_points)

    def objective(params, data):  # maximised at the sample mean, curvature N
        return -0.5 * jnp.sum((data - params["location"].value) ** 2)

    params = {"location": Real(jnp.asarray(10.0))}
    scaled = gpcompose.maximize(objective, params, data, scale=float(num_points), max_steps=100)
    unscaled = gpcompose.maximize(objective, params, data, max_steps=100)
    np.testing.assert_allclose(scaled.params["location"].value, jnp.mean(data), rtol=1e-6)
    np.testing.assert_allclose(scaled.value, objective(scaled.params, data), rtol=1e-12)
    np.testing.assert_allclose(unscaled.params["location"].value, jnp.mean(data), rtol=1e-6)
    assert int(scaled.num_steps) + 5 <= int(unscaled.num_steps)


def test_coordinate_scales_reach_the_optimum_of_a_badly_scaled_objective_in_fewer_steps():
    """Curvatures 1 and 10⁻⁴ along the two coordinates (a direction 100× flatter): with
    `coordinate_scales` (1, 100) BFGS starts from the exact inverse Hessian and reaches the
    optimum in a few steps, reported in the original coordinates; from the identity it
    first crawls along the flat direction and needs more steps."""

    def objective(params, _):  # maximised at (1, 300)
        return -0.5 * (params["a"].value - 1.0) ** 2 - 0.5e-4 * (params["b"].value - 300.0) ** 2

    params = {"a": Real(jnp.asarray(0.0)), "b": Real(jnp.asarray(0.0))}
    trainable, _ = gpcompose.parameters.partition(params)
    scales = eqx.tree_at(lambda t: t["b"].unconstrained, jax.tree.map(jnp.ones_like, trainable), jnp.asarray(100.0))
    scaled = gpcompose.maximize(objective, params, coordinate_scales=scales, max_steps=200)
    plain = gpcompose.maximize(objective, params, max_steps=200)
    for fit in (scaled, plain):
        np.testing.assert_allclose([fit.params["a"].value, fit.params["b"].value], [1.0, 300.0], rtol=1e-6)
        np.testing.assert_allclose(fit.value, objective(fit.params, None), rtol=1e-12, atol=1e-12)
    assert int(scaled.num_steps) <= 4
    assert int(scaled.num_steps) + 5 <= int(plain.num_steps)


def test_coordinate_scales_leave_the_optimum_of_a_gp_fit_unchanged(getkey):
    """Any positive scales change BFGS's path, not the stationary point it reaches."""
    _, _, X, y, _ = make_problem(getkey(), num_points=40)
    params = _gp_parameters()
    trainable, _ = gpcompose.parameters.partition(params)
    scales = jax.tree.map(lambda leaf: jnp.full_like(leaf, 3.0), trainable)
    scaled = gpcompose.maximize(_log_marginal_likelihood, params, (X, y), coordinate_scales=scales, max_steps=500)
    plain = gpcompose.maximize(_log_marginal_likelihood, params, (X, y), max_steps=500)
    np.testing.assert_allclose(scaled.value, plain.value, rtol=1e-8)
    for new, old in zip(jax.tree.leaves(scaled.params), jax.tree.leaves(plain.params)):
        np.testing.assert_allclose(new, old, rtol=1e-4, atol=1e-6)


def test_a_fit_that_ends_non_finite_keeps_the_start():
    def objective(params, _):  # NaN everywhere: no step of BFGS can end finite
        return jnp.nan * params["x"].value

    start = {"x": Real(0.0)}
    fit = gpcompose.maximize(objective, start, None, max_steps=20)
    assert not bool(fit.finite)
    assert float(fit.params_or(start)["x"].value) == 0.0
    good = gpcompose.maximize(lambda p, _: -((p["x"].value - 0.25) ** 2), start, None, max_steps=50)
    assert bool(good.finite)
    np.testing.assert_allclose(good.params_or(start)["x"].value, 0.25, atol=1e-6)


def test_location_and_scale_of_a_masked_buffer():
    from gpcompose._standardise import location_and_scale

    values = jnp.array([1.0, 2.0, 4.0, 100.0])
    mask = jnp.array([True, True, True, False])
    for ddof in (0, 1):
        location, scale = location_and_scale(values, mask, ddof=ddof)
        np.testing.assert_allclose(location, np.mean([1.0, 2.0, 4.0]))
        np.testing.assert_allclose(scale, np.std([1.0, 2.0, 4.0], ddof=ddof))
    assert float(location_and_scale(values, jnp.array([True, False, False, False]))[1]) == 1.0
    assert float(location_and_scale(jnp.full(4, 3.0), jnp.ones(4, bool), ddof=1)[1]) == 1.0
