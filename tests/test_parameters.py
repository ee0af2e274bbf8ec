"""Tests of `gpcompose.parameters`: the positivity and interval transforms and their log-Jacobians,
argument checks, `Real`/`Fixed`, and the tree operations (`partition`, `flatten`,
`log_prior`)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
import scipy.stats

from gpcompose import means
from gpcompose.kernels import Periodic, SquaredExponential
from gpcompose.parameters import (
    Fixed,
    Interval,
    Positive,
    Real,
    as_positive,
    as_real,
    flatten,
    is_parameter,
    log_prior,
    partition,
    sample_unconstrained,
    trainable_spec,
    value_of,
    with_prior_draws,
)
from gpcompose.priors import Gamma, LogNormal, LogScale, Normal, StudentT

TRANSFORMS = ["softplus", "exp"]
MINIMA = [0.0, 1e-6, 0.5]


def _with_unconstrained(parameter, unconstrained):
    return eqx.tree_at(lambda p: p.unconstrained, parameter, unconstrained)


# ------------------------------------------------------------------ Positive


@pytest.mark.parametrize("minimum", MINIMA)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_positive_round_trips_value(transform, minimum):
    shifted = np.array([1e-8, 1e-3, 0.7, 3.0, 50.0, 1e3])
    value = minimum + shifted
    parameter = Positive(jnp.asarray(value), transform=transform, minimum=minimum)
    assert parameter.value.shape == value.shape
    np.testing.assert_allclose(parameter.value, value, rtol=1e-13, atol=0)
    # The stored coordinate is the documented inverse transform of value − minimum
    # (computed in float64 from the given value; log(eˣ − 1) = x + log1p(−e⁻ˣ) for large x).
    actual_shift = value - minimum
    if transform == "exp":
        expected_u = np.log(actual_shift)
    else:
        small = np.minimum(actual_shift, 30.0)
        expected_u = np.where(
            actual_shift > 30, actual_shift + np.log1p(-np.exp(-actual_shift)), np.log(np.expm1(small))
        )
    np.testing.assert_allclose(parameter.unconstrained, expected_u, rtol=1e-10, atol=1e-12)
    assert np.all(np.asarray(parameter.value) > minimum)


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_positive_scalar_and_large_values(transform):
    scalar = Positive(2.5, transform=transform)
    assert scalar.value.shape == ()
    np.testing.assert_allclose(float(scalar.value), 2.5, rtol=1e-15)
    huge = Positive(1e300 if transform == "exp" else 1e8, transform=transform)
    assert np.isfinite(float(huge.unconstrained))
    # exp amplifies the rounding of u ≈ 690 by |u|: relative error ~ 690 ε.
    np.testing.assert_allclose(float(huge.value), 1e300 if transform == "exp" else 1e8, rtol=1e-12)


@pytest.mark.parametrize("minimum", MINIMA)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_log_jacobian_matches_autodiff(transform, minimum):
    u = jnp.asarray([-30.0, -3.0, -0.2, 0.0, 1.5, 12.0])
    parameter = _with_unconstrained(Positive(jnp.ones(6), transform=transform, minimum=minimum), u)

    @jax.jit
    def jacobian_and_log_jacobian(unconstrained):
        def value(v):
            return _with_unconstrained(parameter, v).value

        return jax.jacfwd(value)(unconstrained), _with_unconstrained(parameter, unconstrained).log_jacobian()

    jacobian, log_jacobian = jacobian_and_log_jacobian(u)
    jacobian = np.asarray(jacobian)
    np.testing.assert_array_equal(jacobian, np.diag(np.diag(jacobian)))  # elementwise transform
    expected = np.sum(np.log(np.abs(np.diag(jacobian))))
    np.testing.assert_allclose(float(log_jacobian), expected, rtol=1e-13)
    # ... and the closed forms log σ(u) / u.
    closed_form = -np.logaddexp(0.0, -np.asarray(u)) if transform == "softplus" else np.asarray(u)
    np.testing.assert_allclose(float(log_jacobian), np.sum(closed_form), rtol=1e-14)


@pytest.mark.parametrize(
    "value, kwargs",
    [
        (0.0, {}),
        (-1.0, {}),
        (-1.0, {"transform": "exp"}),
        (np.array([1.0, -2.0, 3.0]), {}),
        (0.5, {"minimum": 1.0}),
        (1.0, {"minimum": 1.0}),
        (0.0, {"transform": "exp"}),
        (np.nan, {}),
        (np.array([1.0, np.nan]), {"transform": "exp"}),
    ],
)
def test_positive_rejects_values_at_or_below_the_minimum(value, kwargs):
    with pytest.raises(ValueError, match=r"`value` must be > "):
        Positive(jnp.asarray(value), **kwargs)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("minimum", MINIMA)
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_positive_value_stays_finite_and_above_the_minimum_for_every_finite_u(transform, minimum, dtype):
    # softplus(u) and eᵘ are 0 in floating point for u ≪ 0 (and eᵘ is inf for u ≫ 0): the value
    # must still lie in (minimum, ∞), with a finite gradient, and be unchanged in between.
    parameter = Positive(jnp.asarray(1.0 + minimum, dtype), transform=transform, minimum=minimum)
    u = jnp.asarray([-1e4, -800.0, -120.0, -3.0, 0.0, 3.0, 120.0, 800.0, 1e4], dtype)
    values = eqx.filter_vmap(lambda u: _with_unconstrained(parameter, u).value)(u)
    gradients = jax.vmap(jax.grad(lambda u: _with_unconstrained(parameter, u).value))(u)
    assert values.dtype == dtype
    assert np.all(np.isfinite(values)) and np.all(np.asarray(values) > np.asarray(minimum, dtype)), values
    assert np.all(np.isfinite(gradients)), gradients
    middle = np.asarray(u[3:6], np.float64)
    expected = minimum + (np.exp(middle) if transform == "exp" else np.logaddexp(0.0, middle))
    np.testing.assert_allclose(values[3:6], expected, rtol=10 * np.finfo(dtype).eps)


def test_positive_rejects_unknown_transform():
    with pytest.raises(ValueError, match="transform"):
        Positive(1.0, transform="log")


def test_positive_can_be_built_under_vmap_and_jit():
    values = jnp.asarray([0.2, 1.0, 4.0])
    batched = eqx.filter_vmap(lambda v: Positive(v, minimum=0.1))(values)
    np.testing.assert_allclose(batched.value, values, rtol=1e-14)
    np.testing.assert_allclose(eqx.filter_jit(lambda v: Positive(v).value)(values), values, rtol=1e-14)


# ------------------------------------------------------------------ Interval


def test_interval_round_trips_value_with_array_bounds():
    lower = np.array([0.0, -2.0, 1e-3, 5.0])
    upper = np.array([1.0, 3.0, 2e-3, 5.5])
    value = np.array([1e-9, -1.999, 1.5e-3, 5.4999])
    parameter = Interval(jnp.asarray(value), lower=lower, upper=upper)
    np.testing.assert_allclose(parameter.value, value, rtol=1e-9, atol=0)
    fraction = (value - lower) / (upper - lower)
    np.testing.assert_allclose(parameter.unconstrained, np.log(fraction / (1 - fraction)), rtol=1e-9)
    # far out on both sides the value stays inside the closed interval
    extreme = _with_unconstrained(parameter, jnp.asarray([-800.0, 800.0, -40.0, 40.0])).value
    assert np.all(np.asarray(extreme) >= lower) and np.all(np.asarray(extreme) <= upper)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_interval_value_stays_strictly_inside_for_every_finite_u(dtype):
    # σ(u) rounds to 0 or 1 for large |u|: the value must stay strictly inside, with a finite gradient.
    lower = jnp.asarray([0.0, -2.0, 1.5, -1.0], dtype)
    upper = jnp.asarray([1.0, 3.0, 1.5001, -0.5], dtype)
    parameter = Interval((lower + upper) / 2, lower=lower, upper=upper)
    for u in (-1e4, -800.0, -40.0, 40.0, 800.0, 1e4):
        moved = _with_unconstrained(parameter, jnp.full(4, u, dtype))
        gradient = jax.grad(lambda v: jnp.sum(_with_unconstrained(parameter, v).value))(moved.unconstrained)
        assert np.all((moved.value > lower) & (moved.value < upper)), (u, moved.value)
        assert np.all(np.isfinite(gradient))


def test_interval_log_jacobian_matches_autodiff():
    u = jnp.asarray([-30.0, -3.0, -0.2, 0.0, 1.5, 12.0])
    parameter = _with_unconstrained(Interval(jnp.full(6, 0.5), lower=0.25, upper=jnp.linspace(1.0, 3.0, 6)), u)

    def value(v):
        return _with_unconstrained(parameter, v).value

    jacobian = np.asarray(jax.jacfwd(value)(u))
    np.testing.assert_array_equal(jacobian, np.diag(np.diag(jacobian)))
    np.testing.assert_allclose(float(parameter.log_jacobian()), np.sum(np.log(np.diag(jacobian))), rtol=1e-12)


def test_interval_log_prior_is_the_prior_density_of_u():
    """log p_u(u) = log p(T(u)) + log T'(u): its integral over u is the prior mass of the interval."""
    prior = LogNormal(0.0, 1.0)
    parameter = Interval(0.5, lower=0.2, upper=3.0, prior=prior)
    grid = jnp.linspace(-40.0, 40.0, 200001)
    densities = jax.vmap(lambda v: jnp.exp(_with_unconstrained(parameter, v).log_prior()))(grid)
    mass = float(jnp.sum(densities) * (grid[1] - grid[0]))
    expected = scipy.stats.lognorm(1.0).cdf(3.0) - scipy.stats.lognorm(1.0).cdf(0.2)
    np.testing.assert_allclose(mass, expected, rtol=1e-6)


@pytest.mark.parametrize(
    "value, lower, upper, message",
    [
        (1.0, 0.0, 1.0, "`value` must lie strictly inside"),
        (-0.5, 0.0, 1.0, "`value` must lie strictly inside"),
        (np.array([0.5, 2.0]), 0.0, np.array([1.0, 1.5]), "`value` must lie strictly inside"),
        (np.nan, 0.0, 1.0, "`value` must lie strictly inside"),
        (0.5, 1.0, 1.0, "`lower` must be below `upper`"),
        (0.5, 2.0, 1.0, "`lower` must be below `upper`"),
    ],
)
def test_interval_rejects_bad_bounds_and_values(value, lower, upper, message):
    with pytest.raises(ValueError, match=message):
        Interval(jnp.asarray(value), lower=lower, upper=upper)


def test_interval_can_be_built_under_vmap_and_only_u_is_trainable():
    uppers = jnp.asarray([1.0, 2.0, 4.0])
    batched = eqx.filter_vmap(lambda upper: Interval(0.5 * upper, upper=upper))(uppers)
    np.testing.assert_allclose(batched.value, 0.5 * uppers, rtol=1e-14)
    spec = Interval(0.5, upper=1.0).trainable_spec()
    assert spec.unconstrained is True and spec.lower is False and spec.upper is False


# -------------------------------------------------------------- Real / Fixed


def test_real_is_the_identity():
    parameter = Real(jnp.asarray([-2.0, 0.0, 3.5]), prior=Normal(0.5, 2.0))
    np.testing.assert_array_equal(parameter.value, [-2.0, 0.0, 3.5])
    np.testing.assert_array_equal(parameter.unconstrained, [-2.0, 0.0, 3.5])
    assert float(parameter.log_jacobian()) == 0.0
    np.testing.assert_allclose(
        float(parameter.log_prior()), np.sum(scipy.stats.norm(0.5, 2.0).logpdf([-2.0, 0.0, 3.5])), rtol=1e-14
    )
    assert Real(3).value.dtype == jnp.float64  # integers become floating point
    assert trainable_spec(parameter).unconstrained is True


def test_fixed_is_excluded_from_partition_and_flatten():
    parameter = Fixed(jnp.asarray([1.0, 2.0]))
    np.testing.assert_array_equal(parameter.value, [1.0, 2.0])
    assert parameter.prior is None
    assert float(parameter.log_jacobian()) == 0.0 and float(parameter.log_prior()) == 0.0
    assert trainable_spec(parameter).fixed_value is False
    trainable, rest = partition(parameter)
    assert trainable.fixed_value is None
    np.testing.assert_array_equal(rest.fixed_value, [1.0, 2.0])
    vector, unflatten = flatten({"fixed": parameter, "free": Real(0.5)})
    assert vector.shape == (1,)
    np.testing.assert_array_equal(vector, [0.5])
    np.testing.assert_array_equal(unflatten(jnp.asarray([9.0]))["fixed"].value, [1.0, 2.0])


# ------------------------------------------------------------------ trees


def _model():
    """A nested tree: kernel algebra with Fixed leaves, a mean and a noise parameter."""
    kernel = SquaredExponential(lengthscale=jnp.asarray([0.5, 2.0]), variance=Fixed(1.3)) + Periodic(
        period=Fixed(2.0), lengthscale=0.8, variance=0.6
    )
    return {
        "kernel": kernel,
        "mean": means.Constant(0.7),
        "noise": Positive(0.1, transform="exp", minimum=1e-6, prior=Gamma(1.0, 2.0)),
    }


def test_flatten_unflatten_round_trip():
    tree = _model()
    vector, unflatten = flatten(tree)
    # Trainable: SE lengthscale (2), periodic lengthscale and variance, mean constant, noise.
    assert vector.shape == (6,) and vector.dtype == jnp.float64
    rebuilt = unflatten(vector)
    assert bool(eqx.tree_equal(rebuilt, tree))
    # Static metadata survives.
    assert rebuilt["noise"].transform == "exp" and rebuilt["noise"].minimum == 1e-6
    # A step in the vector moves exactly the trainable unconstrained coordinates.
    delta = jnp.arange(1.0, 7.0) / 10
    moved = unflatten(vector + delta)
    moved_trainable = jax.tree_util.tree_leaves(partition(moved)[0])
    original_trainable = jax.tree_util.tree_leaves(partition(tree)[0])
    shifts = np.concatenate([np.ravel(a - b) for a, b in zip(moved_trainable, original_trainable, strict=True)])
    np.testing.assert_allclose(np.sort(shifts), np.sort(np.asarray(delta)), rtol=1e-12)
    np.testing.assert_allclose(flatten(moved)[0], vector + delta, rtol=1e-15)
    # Fixed values do not move.
    assert float(moved["kernel"].left.variance.value) == 1.3
    assert float(moved["kernel"].right.period.value) == 2.0


def test_flatten_vector_holds_the_unconstrained_values():
    tree = _model()
    vector, _ = flatten(tree)
    expected = np.concatenate(
        [
            np.asarray(tree["kernel"].left.lengthscale.unconstrained),
            [float(tree["kernel"].right.lengthscale.unconstrained), float(tree["kernel"].right.variance.unconstrained)],
            [0.7, np.log(0.1 - 1e-6)],
        ]
    )
    np.testing.assert_allclose(np.sort(np.asarray(vector)), np.sort(expected), rtol=1e-14)


def test_partition_and_combine():
    tree = _model()
    trainable, rest = partition(tree)
    assert bool(eqx.tree_equal(eqx.combine(trainable, rest), tree))
    assert trainable["kernel"].left.variance.fixed_value is None
    assert rest["kernel"].left.lengthscale.unconstrained is None
    assert float(rest["kernel"].left.variance.fixed_value) == 1.3
    spec = trainable_spec(tree)
    assert spec["noise"].unconstrained is True and spec["kernel"].right.period.fixed_value is False


def test_unflatten_under_jit_and_grad():
    tree = _model()
    vector, unflatten = flatten(tree)

    def objective(v):
        model = unflatten(v)
        return jnp.sum(model["kernel"].gram(jnp.ones((3, 2)))) + log_prior(model)

    gradient = jax.jit(jax.grad(objective))(vector)
    assert gradient.shape == (6,) and np.all(np.isfinite(np.asarray(gradient)))
    compiled = jax.jit(objective)
    step = 1e-6
    numeric = [
        (float(compiled(vector + step * e)) - float(compiled(vector - step * e))) / (2 * step) for e in jnp.eye(6)
    ]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-8)


def test_log_prior_equals_hand_computation():
    gamma = Positive(1.3, prior=Gamma(2.0, 1.5))
    lognormal = Positive(jnp.asarray([0.4, 2.0]), transform="exp", prior=LogNormal(0.1, 0.7))
    normal = Real(0.2, prior=Normal(0.0, 1.0))
    log_student = Positive(0.3, minimum=0.1, prior=LogScale(StudentT(3.0, 0.0, 1.0)))
    tree = {
        "a": gamma,
        "b": [lognormal, normal],
        "c": (log_student, Positive(0.9), Fixed(5.0)),
        "model": SquaredExponential(lengthscale=Positive(0.6, prior=Gamma(1.0, 2.0))),
    }

    def softplus_jacobian(shifted):
        u = np.log(np.expm1(shifted))
        return -np.logaddexp(0.0, -u)  # log σ(u)

    expected = (
        scipy.stats.gamma(a=2.0, scale=1.5).logpdf(1.3)
        + softplus_jacobian(1.3)
        + np.sum(scipy.stats.lognorm(s=0.7, scale=np.exp(0.1)).logpdf([0.4, 2.0]) + np.log([0.4, 2.0]))
        + scipy.stats.norm(0.0, 1.0).logpdf(0.2)
        + scipy.stats.t(3.0).logpdf(np.log(0.3))
        - np.log(0.3)
        + softplus_jacobian(0.3 - 0.1)
        + scipy.stats.gamma(a=1.0, scale=2.0).logpdf(0.6)
        + softplus_jacobian(0.6)
    )
    np.testing.assert_allclose(float(log_prior(tree)), expected, rtol=1e-13)
    # Each parameter's own log_prior, summed, is the same.
    parts = [gamma, lognormal, normal, log_student, tree["model"].lengthscale]
    np.testing.assert_allclose(sum(float(p.log_prior()) for p in parts), expected, rtol=1e-13)


def test_log_prior_without_priors_is_zero():
    assert float(log_prior({})) == 0.0
    assert float(log_prior(SquaredExponential())) == 0.0
    assert float(log_prior([Positive(2.0), Real(1.0), Fixed(3.0)])) == 0.0


def test_value_and_converters():
    assert is_parameter(Positive(1.0)) and is_parameter(Fixed(1.0)) and not is_parameter(jnp.ones(()))
    np.testing.assert_allclose(value_of(Positive(2.0)), 2.0, rtol=1e-15)
    np.testing.assert_array_equal(value_of(jnp.asarray([1.0, 2.0])), [1.0, 2.0])
    assert isinstance(as_positive(2.0), Positive) and isinstance(as_real(-2.0), Real)
    fixed = Fixed(2.0)
    assert as_positive(fixed) is fixed and as_real(fixed) is fixed
    with pytest.raises(ValueError):
        as_positive(-1.0)
    # Kernel constructors wrap plain numbers into Positive.
    assert isinstance(SquaredExponential(lengthscale=0.5).lengthscale, Positive)


def test_float32_smoke():
    parameter = Positive(jnp.asarray([0.3, 2.0], dtype=jnp.float32), prior=Gamma(2.0, 1.0))
    assert parameter.unconstrained.dtype == jnp.float32 and parameter.value.dtype == jnp.float32
    np.testing.assert_allclose(parameter.value, [0.3, 2.0], rtol=1e-6)
    assert parameter.log_prior().dtype == jnp.float32
    assert np.isfinite(float(parameter.log_prior()))
    exp_parameter = Positive(jnp.float32(1e-3), transform="exp", minimum=1e-6)
    np.testing.assert_allclose(float(exp_parameter.value), 1e-3, rtol=1e-6)
    assert exp_parameter.value.dtype == jnp.float32


# ------------------------------------------------- prior draws in the coordinate u

NUM_DRAWS = 4000


def _draws(parameter, key, num_draws=NUM_DRAWS):
    """`num_draws` unconstrained draws and the constrained values they map to (one compile)."""

    @jax.jit
    def draw(key):
        unconstrained = sample_unconstrained(parameter, key)
        return unconstrained, _with_unconstrained(parameter, unconstrained).value

    unconstrained, values = jax.vmap(draw)(jax.random.split(key, num_draws))
    return np.asarray(unconstrained), np.asarray(values)


# (parameter, the scipy distribution of its constrained draws)
_PRIOR_DRAWS = {
    "gamma-softplus-steingp": (
        Positive(1.0, minimum=1e-6, prior=Gamma(1.0, 2.0)),
        scipy.stats.gamma(a=1.0, scale=2.0),
    ),
    "gamma-exp": (Positive(0.3, transform="exp", prior=Gamma(3.0, 0.5)), scipy.stats.gamma(a=3.0, scale=0.5)),
    "lognormal-softplus": (Positive(1.0, prior=LogNormal(-1.0, 1.2)), scipy.stats.lognorm(s=1.2, scale=np.exp(-1.0))),
    "logscale-t-exp": (
        Positive(1.0, transform="exp", prior=LogScale(StudentT(5.0, 0.0, 0.5))),
        scipy.stats.t(5.0, 0.0, 0.5),  # of log θ
    ),
    "normal-real": (Real(0.0, prior=Normal(0.5, 2.0)), scipy.stats.norm(0.5, 2.0)),
    "student-t-real": (Real(3.0, prior=StudentT(4.0, -1.0, 0.7)), scipy.stats.t(4.0, -1.0, 0.7)),
    # no prior: the document's U[0, 1], above the lower bound
    "uniform-positive": (Positive(5.0, minimum=1e-6), scipy.stats.uniform(1e-6, 1.0)),
    "uniform-positive-minimum": (Positive(5.0, transform="exp", minimum=0.5), scipy.stats.uniform(0.5, 1.0)),
    "uniform-real": (Real(-3.0), scipy.stats.uniform(0.0, 1.0)),
}


@pytest.mark.parametrize("name", list(_PRIOR_DRAWS))
def test_sample_unconstrained_maps_a_prior_draw_through_the_inverse_transform(name, getkey):
    parameter, distribution = _PRIOR_DRAWS[name]
    unconstrained, values = _draws(parameter, getkey())
    assert np.all(np.isfinite(unconstrained))
    # u = T⁻¹(θ): the stored coordinate is the inverse transform of the drawn value
    np.testing.assert_allclose(parameter.inverse(jnp.asarray(values)), unconstrained, rtol=1e-9, atol=1e-9)
    if name == "logscale-t-exp":
        values = np.log(values)
    # a fixed key: 10⁻³ fails one correct sampler in 1000 keys
    assert scipy.stats.kstest(values, distribution.cdf).pvalue > 1e-3


def test_prior_draw_is_not_written_into_the_unconstrained_coordinate(getkey):
    # the reference code's quirk: u ~ Gamma(1, 2) gives θ = softplus(u) with mean ≈ 2.2, not 2
    unconstrained, values = _draws(Positive(1.0, minimum=1e-6, prior=Gamma(1.0, 2.0)), getkey())
    assert scipy.stats.kstest(unconstrained, scipy.stats.gamma(a=1.0, scale=2.0).cdf).pvalue < 1e-10
    assert np.any(unconstrained < 0)


def test_sample_unconstrained_keeps_draws_below_the_floor_finite(getkey):
    # 22 % of Gamma(1, 2) lies below 0.5 and all of LogNormal(−30, 0.1) below 10⁻⁶
    for parameter, fraction in [
        (Positive(1.0, minimum=0.5, prior=Gamma(1.0, 2.0)), scipy.stats.gamma(a=1.0, scale=2.0).cdf(0.5)),
        (Positive(1.0, minimum=1e-6, prior=LogNormal(-30.0, 0.1)), 1.0),
    ]:
        unconstrained, values = _draws(parameter, getkey(), 1000)
        assert np.all(np.isfinite(unconstrained)) and np.all(values > parameter.minimum)
        at_floor = unconstrained == unconstrained.min()
        np.testing.assert_allclose(at_floor.mean(), fraction, atol=4 * np.sqrt(fraction * (1 - fraction) / 1000))
        np.testing.assert_allclose(values[at_floor], parameter.minimum, rtol=1e-15)


def test_sample_unconstrained_keeps_shape_and_dtype(getkey):
    parameter = Positive(jnp.ones((2, 3), jnp.float32), prior=Gamma(jnp.float32(1.0), jnp.float32(2.0)))
    unconstrained = sample_unconstrained(parameter, getkey())
    assert unconstrained.shape == (2, 3) and unconstrained.dtype == jnp.float32
    # float32 draws at the floor stay finite too
    floor = Positive(jnp.float32(1.0), minimum=1e-6, prior=LogNormal(jnp.float32(-30.0), jnp.float32(0.1)))
    assert bool(jnp.isfinite(sample_unconstrained(floor, getkey())))


def test_sample_unconstrained_rejects_fixed(getkey):
    with pytest.raises(ValueError, match="Positive or Real"):
        sample_unconstrained(Fixed(1.0), getkey())


def test_with_prior_draws_replaces_trainable_parameters_only(getkey):
    tree = _model()
    drawn = jax.jit(with_prior_draws)(tree, getkey())
    kernel, reference = drawn["kernel"], tree["kernel"]
    for fixed, original in [
        (kernel.left.variance, reference.left.variance),
        (kernel.right.period, reference.right.period),
    ]:
        assert fixed.value == original.value
    trainable_now, trainable_before = flatten(drawn)[0], flatten(tree)[0]
    assert trainable_now.shape == trainable_before.shape
    assert np.all(np.asarray(trainable_now) != np.asarray(trainable_before))
    # one key per parameter: the two elements of the ARD lengthscale differ, and the
    # parameters without a prior are U[0, 1) above their bound
    lengthscale = kernel.left.lengthscale.value
    assert lengthscale[0] != lengthscale[1] and bool(jnp.all((lengthscale > 0) & (lengthscale < 1)))
    assert 0 <= float(drawn["mean"].constant.value) < 1
    # vmap over keys equals a Python loop
    keys = jax.random.split(getkey(), 3)
    draw = jax.jit(lambda key: flatten(with_prior_draws(tree, key))[0])
    batched = jax.jit(jax.vmap(lambda key: flatten(with_prior_draws(tree, key))[0]))(keys)
    for index, key in enumerate(keys):
        np.testing.assert_allclose(draw(key), batched[index], rtol=1e-12)
