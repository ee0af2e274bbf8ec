"""Gaussian-mixture families against dense quadrature grids, closed forms and Monte Carlo."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from gpcompose import mixtures

from .helpers import autodiff_gradient, finite_difference_gradient

WEIGHTS = np.array([0.5, 0.3, 0.2])
MEANS = np.array([[0.0, 1.0], [1.0, -1.0], [-2.0, 0.5]])
VARIANCES = np.array([[0.3, 0.5], [0.2, 0.4], [1.0, 0.6]])
SIGMAS = np.array([0.5, 0.7, 1.0])
LAMBDAS = np.array([1.0, 0.6])
OFFDIAGONAL = np.array([[0.0, 0.0], [0.8, 0.0]])  # S = diag(λ)(I + B) = [[1, 0], [0.48, 0.6]]


def lower_entries(matrix):
    """The strict lower triangle of a square matrix, row-major (VBMCMixture.lambda_offdiagonal)."""
    return jnp.asarray(matrix[np.tril_indices(matrix.shape[0], -1)])


FAMILIES = ("gaussian_mixture", "vbmc_mixture", "rotated_vbmc_mixture")


def make_mixture(family, dimension=2):
    """A 3-component mixture of the family, and its (weights, means, covariances (K, D, D))."""
    means = MEANS[:, :dimension]
    if family == "gaussian_mixture":
        variances = VARIANCES[:, :dimension]
        mixture = mixtures.GaussianMixture.from_moments(WEIGHTS, means, variances)
        return mixture, (WEIGHTS, means, np.stack([np.diag(v) for v in variances]))
    lambdas = LAMBDAS[:dimension]
    rotated = family == "rotated_vbmc_mixture"
    flagged = family == "axis_aligned_flagged_vbmc_mixture"  # B stored but switched off
    offdiagonal = OFFDIAGONAL[:dimension, :dimension]
    scale = np.diag(lambdas) @ (np.eye(dimension) + (offdiagonal if rotated else 0.0))
    mixture = mixtures.VBMCMixture(
        jnp.log(jnp.asarray(WEIGHTS)),
        jnp.asarray(means),
        jnp.log(jnp.asarray(SIGMAS)),
        jnp.log(jnp.asarray(lambdas)),
        jnp.ones(3, bool),
        lower_entries(offdiagonal) if rotated or flagged else None,
        jnp.asarray(True) if flagged else None,
    )
    return mixture, (WEIGHTS, means, SIGMAS[:, None, None] ** 2 * (scale @ scale.T)[None])


def mixture_density(reference, points):
    """q(x) = Σ_k w_k N(x; μ_k, Σ_k) in numpy (scipy), for points (..., D)."""
    weights, means, covariances = reference
    total = 0.0
    for weight, mean, covariance in zip(weights, means, covariances):
        total = total + weight * stats.multivariate_normal(mean, covariance).pdf(points)
    return total


def grid(dimension, half_width=12.0, num_points=1201):
    """Points (P, D) and the cell volume of a regular grid (the integrands decay to 0 at
    the edges, so the rectangle rule is spectrally accurate)."""
    axis = np.linspace(-half_width, half_width, num_points)
    cell = (axis[1] - axis[0]) ** dimension
    points = np.stack(np.meshgrid(*([axis] * dimension), indexing="ij"), axis=-1).reshape(-1, dimension)
    return axis, points, cell


# Jitted queries (eager calls dispatch every operation separately, which is slow).
log_prob = eqx.filter_jit(lambda mixture, x: mixture.log_prob(x))
marginal_log_prob = eqx.filter_jit(lambda mixture, values, dimension: mixture.marginal_log_prob(values, dimension))
sample = eqx.filter_jit(lambda mixture, key, num_samples: mixture.sample(key, num_samples))
stratified_sample = eqx.filter_jit(
    lambda mixture, key, num_per_component: mixture.stratified_sample(key, num_per_component)
)
entropy = eqx.filter_jit(lambda mixture, key, num_per_component: mixture.entropy(key, num_per_component))
prune = eqx.filter_jit(lambda mixture, threshold: mixture.prune(threshold))
add_component = eqx.filter_jit(lambda mixture, *args: mixture.add_component(*args))
gaussian_kl = eqx.filter_jit(mixtures.gaussian_kl)


@eqx.filter_jit
def summary(mixture):
    """Weights, moments and entropy bounds."""
    return {
        "weights": mixture.weights,
        "log_weights": mixture.log_weights,
        "mean": mixture.mean(),
        "covariance": mixture.covariance(),
        "moment_matched": mixture.moment_matched(),
        "entropy_bounds": mixture.entropy_bounds(),
        "component_means": mixture.component_means,
        "component_variances": mixture.component_variances,
        "component_covariances": mixture.component_covariances,
    }


# ---------------------------------------------------------------------------------------
# Density, moments, marginals.
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dimension", [1, 2])
def test_log_prob_matches_numpy_and_integrates_to_one(family, dimension):
    mixture, reference = make_mixture(family, dimension)
    _, points, cell = grid(dimension, num_points=4001 if dimension == 1 else 601)
    values = np.asarray(log_prob(mixture, jnp.asarray(points)))
    np.testing.assert_allclose(np.exp(values), mixture_density(reference, points), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(np.sum(np.exp(values)) * cell, 1.0, rtol=1e-10)
    # One point and a batch of any shape.
    batch = jnp.asarray(points[:6].reshape(2, 3, dimension))
    assert log_prob(mixture, batch).shape == (2, 3)
    np.testing.assert_allclose(log_prob(mixture, batch[1, 2]), values[5], rtol=1e-14)
    # Far from every component the density underflows but its logarithm stays finite.
    assert np.isfinite(log_prob(mixture, jnp.full(dimension, 200.0)))


@pytest.mark.parametrize("family", FAMILIES)
def test_mean_and_covariance_match_the_formulae(family):
    mixture, (weights, means, covariances) = make_mixture(family)
    mean = weights @ means
    second_moment = sum(w * (c + np.outer(m, m)) for w, m, c in zip(weights, means, covariances))
    values = summary(mixture)
    np.testing.assert_allclose(values["mean"], mean, rtol=1e-14)
    np.testing.assert_allclose(values["covariance"], second_moment - np.outer(mean, mean), rtol=1e-13)
    np.testing.assert_allclose(values["weights"], weights, rtol=1e-14)
    np.testing.assert_allclose(values["component_variances"], np.diagonal(covariances, 0, 1, 2), rtol=1e-14)
    matched_mean, matched_covariance = values["moment_matched"]
    np.testing.assert_allclose(matched_mean, mean, rtol=1e-14)
    np.testing.assert_allclose(matched_covariance, values["covariance"], rtol=1e-14)


def _moment_statistics(samples, weights=None):
    """Per-draw values of x and x xᵀ (flattened); with `weights`, (K, S, D) stratified draws
    combined as Σ_k w_k x_{k,s}."""
    outer = samples[..., :, None] * samples[..., None, :]
    values = np.concatenate([samples, outer.reshape(*samples.shape[:-1], -1)], axis=-1)
    if weights is None:
        return values.mean(axis=0), values.std(axis=0) / math.sqrt(values.shape[0])
    combined = np.einsum("k,ksv->sv", weights, values)
    return combined.mean(axis=0), combined.std(axis=0) / math.sqrt(combined.shape[0])


@pytest.mark.parametrize("family", FAMILIES)
def test_sample_moments_match_mean_and_covariance(getkey, family):
    mixture, (weights, _, _) = make_mixture(family)
    values = summary(mixture)
    mean = np.asarray(values["mean"])
    second = np.asarray(values["covariance"]) + np.outer(mean, mean)
    expected = np.concatenate([mean, second.ravel()])
    draws = np.asarray(sample(mixture, getkey(), 1_000_000))
    estimate, error = _moment_statistics(draws)
    assert np.all(np.abs(estimate - expected) <= 4 * error), (estimate - expected) / error
    stratified = np.asarray(stratified_sample(mixture, getkey(), 400_000))
    assert stratified.shape == (3, 400_000, 2)
    estimate, error = _moment_statistics(stratified, weights)
    assert np.all(np.abs(estimate - expected) <= 4 * error), (estimate - expected) / error


def test_expectation_is_the_weighted_stratified_estimate(getkey):
    mixture, (weights, means, covariances) = make_mixture("gaussian_mixture")
    variances = np.diagonal(covariances, 0, 1, 2)
    key = getkey()
    function = lambda x: x[0] ** 2 + jnp.sin(x[1])
    estimate = eqx.filter_jit(lambda m, key: m.expectation(function, key, 200_000))(mixture, key)
    samples = np.asarray(stratified_sample(mixture, key, 200_000))
    values = samples[..., 0] ** 2 + np.sin(samples[..., 1])
    np.testing.assert_allclose(estimate, weights @ values.mean(axis=1), rtol=1e-12)
    # E[x₀²] + E[sin x₁] in closed form: Σ w (μ₀² + σ₀²) + Σ w sin(μ₁) e^{−σ₁²/2}.
    exact = weights @ (means[:, 0] ** 2 + variances[:, 0]) + weights @ (
        np.sin(means[:, 1]) * np.exp(-variances[:, 1] / 2)
    )
    error = math.sqrt(np.sum(weights**2 * values.var(axis=1)) / 200_000)
    assert abs(estimate - exact) <= 4 * error


@pytest.mark.parametrize("family", FAMILIES)
def test_marginal_log_prob_integrates_to_one_and_marginalises_the_joint(getkey, family):
    mixture, reference = make_mixture(family)
    axis, points, cell = grid(2, num_points=801)
    joint = np.exp(np.asarray(log_prob(mixture, jnp.asarray(points)))).reshape(axis.size, axis.size)
    step = axis[1] - axis[0]
    for dimension in (0, 1):
        marginal = np.exp(np.asarray(marginal_log_prob(mixture, jnp.asarray(axis), dimension)))
        np.testing.assert_allclose(np.sum(marginal) * step, 1.0, rtol=1e-10)
        by_quadrature = joint.sum(axis=1 - dimension) * step
        np.testing.assert_allclose(marginal, by_quadrature, rtol=1e-8, atol=1e-14)
    # Against a histogram of draws: each bin's probability within 4 binomial standard errors.
    draws = np.asarray(sample(mixture, getkey(), 1_000_000))[:, 1]
    edges = np.linspace(-3.0, 4.0, 36)
    counts, _ = np.histogram(draws, bins=edges)
    fine = np.linspace(-3.0, 4.0, 35 * 40 + 1)
    density = np.exp(np.asarray(marginal_log_prob(mixture, jnp.asarray(fine), 1)))
    cumulative = np.concatenate([[0.0], np.cumsum(0.5 * (density[1:] + density[:-1]) * np.diff(fine))])
    probabilities = np.diff(cumulative[::40])
    error = np.sqrt(probabilities * (1 - probabilities) / draws.size)
    assert np.all(np.abs(counts / draws.size - probabilities) <= 4 * error + 1e-6)


# ---------------------------------------------------------------------------------------
# Entropy.
# ---------------------------------------------------------------------------------------


def _entropy_by_quadrature(mixture, dimension):
    _, points, cell = grid(dimension, num_points=6001 if dimension == 1 else 801)
    values = np.asarray(log_prob(mixture, jnp.asarray(points)))
    return -np.sum(np.exp(values) * values) * cell


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dimension", [1, 2])
def test_entropy_estimates_and_bounds_match_quadrature(getkey, family, dimension):
    mixture, (weights, _, _) = make_mixture(family, dimension)
    true_entropy = _entropy_by_quadrature(mixture, dimension)
    lower, upper = summary(mixture)["entropy_bounds"]
    assert lower <= true_entropy <= upper
    key = getkey()
    per_component = 100_000
    estimate = entropy(mixture, key, per_component)
    draws = stratified_sample(mixture, key, per_component)
    # the control-variate estimate from the same draws: H = Σ_k w_k (H[N_k] − mean_s[log q(x) − log N_k(x)])
    own_component = np.arange(weights.size)[:, None]
    log_components = np.asarray(jax.vmap(jax.vmap(mixture.component_log_prob))(draws))
    own_log_density = np.take_along_axis(log_components, own_component[..., None], axis=2)[..., 0]
    residuals = np.asarray(log_prob(mixture, draws)) - own_log_density
    covariances = np.asarray(mixture.component_covariances)
    log_determinants = np.log(covariances).sum(-1) if covariances.ndim == 2 else np.linalg.slogdet(covariances)[1]
    component_entropies = 0.5 * (dimension * math.log(2 * math.pi * math.e) + log_determinants)
    np.testing.assert_allclose(estimate, weights @ (component_entropies - residuals.mean(axis=1)), rtol=1e-12)
    error = math.sqrt(np.sum(weights**2 * residuals.var(axis=1)) / per_component)
    assert abs(estimate - true_entropy) <= 4 * error


def test_entropy_estimate_is_exact_for_one_gaussian_and_less_noisy_than_plain_monte_carlo(getkey):
    """The control variate log N_k makes one Gaussian's estimate exact, and on overlapping
    components it has a fraction of the spread of −(1/S) Σ log q(x_s) over keys."""
    variance = np.array([0.3, 2.0])
    single = mixtures.GaussianMixture.from_moments(np.ones(1), np.zeros((1, 2)), variance[None])
    exact = 0.5 * np.sum(np.log(2 * np.pi * np.e * variance))
    np.testing.assert_allclose(entropy(single, getkey(), 7), exact, rtol=1e-13)
    mixture, _ = make_mixture("vbmc_mixture", 2)
    keys = [getkey() for _ in range(40)]
    controlled = np.array([entropy(mixture, key, 200) for key in keys])
    plain = np.array([-mixture.expectation(mixture.log_prob, key, 200) for key in keys])
    np.testing.assert_allclose(controlled.mean(), _entropy_by_quadrature(mixture, 2), atol=4 * controlled.std() / 6)
    assert controlled.std() < 0.5 * plain.std()


def test_entropy_bounds_of_a_single_gaussian_and_of_separated_components():
    """One component: upper = ½ log|2πeΣ| (exact) and lower = ½ log|4πΣ|. Far-apart
    components: H → Σ w_k H_k − Σ w_k log w_k, the upper bound."""
    variance = np.array([0.3, 2.0])
    single = mixtures.GaussianMixture.from_moments(np.ones(1), np.zeros((1, 2)), variance[None])
    lower, upper = summary(single)["entropy_bounds"]
    np.testing.assert_allclose(upper, 0.5 * np.sum(np.log(2 * np.pi * np.e * variance)), rtol=1e-14)
    np.testing.assert_allclose(lower, 0.5 * np.sum(np.log(4 * np.pi * variance)), rtol=1e-14)
    separated = mixtures.GaussianMixture.from_moments(WEIGHTS, 100.0 * MEANS, VARIANCES)
    lower, upper = summary(separated)["entropy_bounds"]
    mixing = -np.sum(WEIGHTS * np.log(WEIGHTS))
    np.testing.assert_allclose(
        upper, mixing + WEIGHTS @ (0.5 * np.sum(np.log(2 * np.pi * np.e * VARIANCES), axis=1)), rtol=1e-13
    )
    np.testing.assert_allclose(
        lower, mixing + WEIGHTS @ (0.5 * np.sum(np.log(4 * np.pi * VARIANCES), axis=1)), rtol=1e-13
    )


# ---------------------------------------------------------------------------------------
# Adding, pruning and masking components.
# ---------------------------------------------------------------------------------------


def _padded(mask=(True, True, True, False), weights=(0.5, 0.3, 0.2, 0.7)):
    means = np.concatenate([MEANS, [[30.0, 30.0]]])
    variances = np.concatenate([VARIANCES, [[0.1, 0.1]]])
    return mixtures.GaussianMixture.from_moments(np.array(weights), means, variances, mask=np.array(mask))


def test_masked_components_contribute_nothing(getkey):
    padded = _padded()
    subset, _ = make_mixture("gaussian_mixture")
    points = jnp.asarray(np.random.default_rng(0).normal(size=(50, 2)) * 2)
    padded_summary, subset_summary = summary(padded), summary(subset)
    np.testing.assert_allclose(padded_summary["weights"], np.append(WEIGHTS, 0.0), rtol=1e-14)
    assert padded_summary["log_weights"][3] == -np.inf
    for name in ("mean", "covariance", "entropy_bounds"):
        for a, b in zip(
            jax.tree_util.tree_leaves(padded_summary[name]), jax.tree_util.tree_leaves(subset_summary[name])
        ):
            np.testing.assert_allclose(a, b, rtol=1e-13)
    np.testing.assert_allclose(log_prob(padded, points), log_prob(subset, points), rtol=1e-13)
    np.testing.assert_allclose(
        marginal_log_prob(padded, points[:, 0], 1), marginal_log_prob(subset, points[:, 0], 1), rtol=1e-13
    )
    # Never sampled, and out of every stratified expectation (the masked component sits at 30).
    assert np.max(np.abs(np.asarray(sample(padded, getkey(), 100_000)))) < 15.0
    key = getkey()
    draws = np.asarray(stratified_sample(padded, key, 1000))
    expectation = eqx.filter_jit(lambda m, key: m.expectation(lambda x: jnp.sum(x), key, 1000))(padded, key)
    np.testing.assert_allclose(expectation, WEIGHTS @ draws[:3].sum(axis=-1).mean(axis=1), rtol=1e-12)
    assert np.isfinite(entropy(padded, key, 1000))


@pytest.mark.parametrize("family", FAMILIES)
def test_add_component_renormalises_and_fills_the_first_free_slot(family):
    if family == "gaussian_mixture":
        mixture = _padded()
        added = add_component(mixture, 0.25, jnp.array([3.0, -3.0]), jnp.array([0.2, 0.3]))
        new_covariance = np.diag([0.2, 0.3])
    else:
        rotated = family == "rotated_vbmc_mixture"
        mixture = mixtures.VBMCMixture(
            jnp.log(jnp.array([0.5, 0.3, 0.2, 1.0])),
            jnp.concatenate([jnp.asarray(MEANS), jnp.zeros((1, 2))]),
            jnp.log(jnp.append(jnp.asarray(SIGMAS), 1.0)),
            jnp.log(jnp.asarray(LAMBDAS)),
            jnp.array([True, True, True, False]),
            lower_entries(OFFDIAGONAL) if rotated else None,
        )
        added = add_component(mixture, 0.25, jnp.array([3.0, -3.0]), 0.4)
        scale = np.diag(LAMBDAS) @ (np.eye(2) + (OFFDIAGONAL if rotated else 0.0))
        new_covariance = 0.4**2 * scale @ scale.T
    added_summary, original_summary = summary(added), summary(mixture)
    np.testing.assert_allclose(added_summary["weights"], np.append(0.75 * WEIGHTS, 0.25), rtol=1e-13)
    np.testing.assert_array_equal(added.mask, [True, True, True, True])
    np.testing.assert_allclose(added_summary["component_means"][3], [3.0, -3.0])
    np.testing.assert_allclose(added_summary["component_variances"][3], np.diag(new_covariance), rtol=1e-13)
    np.testing.assert_allclose(
        added_summary["component_variances"][:3], original_summary["component_variances"][:3], rtol=1e-14
    )
    covariances = np.asarray(added_summary["component_covariances"])
    if covariances.ndim == 2:
        covariances = np.stack([np.diag(c) for c in covariances])
    np.testing.assert_allclose(covariances[3], new_covariance, rtol=1e-13, atol=1e-15)
    reference = (np.append(0.75 * WEIGHTS, 0.25), np.asarray(added_summary["component_means"]), covariances)
    points = np.random.default_rng(1).normal(size=(20, 2)) * 2
    np.testing.assert_allclose(
        np.exp(log_prob(added, jnp.asarray(points))), mixture_density(reference, points), rtol=1e-12
    )
    with pytest.raises(Exception, match="No free component slot"):
        if family == "gaussian_mixture":
            add_component(added, 0.1, jnp.zeros(2), jnp.ones(2))
        else:
            add_component(added, 0.1, jnp.zeros(2), 1.0)


def test_add_component_fills_a_pruned_slot():
    pruned = prune(mixtures.GaussianMixture.from_moments(WEIGHTS, MEANS, VARIANCES), 0.25)
    np.testing.assert_array_equal(pruned.mask, [True, True, False])
    added = add_component(pruned, 0.5, jnp.array([4.0, 4.0]), jnp.array([1.0, 1.0]))
    np.testing.assert_array_equal(added.mask, [True, True, True])
    np.testing.assert_allclose(summary(added)["weights"], [0.3125, 0.1875, 0.5], rtol=1e-13)


def test_add_component_if_room_adds_or_keeps_and_runs_in_a_vmapped_cond():
    """Batch member 0 has a free slot, member 1 is full. Under vmap a lax.cond with a batched
    predicate runs both branches for every member, so a checked add_component would raise
    for member 1 (it did in the 20-seed GPU run of SVBMC); add_component_if_room must add
    for member 0 and leave member 1 exactly as it was."""
    free = mixtures.VBMCMixture(
        jnp.log(jnp.array([0.5, 0.5, 1.0])),
        jnp.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]),
        jnp.zeros(3),
        jnp.zeros(2),
        jnp.array([True, True, False]),
    )
    full = eqx.tree_at(lambda m: m.mask, free, jnp.array([True, True, True]))
    batch = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), free, full)

    @eqx.filter_jit
    @eqx.filter_vmap
    def add_where_wanted(mixture, wanted):
        return jax.lax.cond(
            wanted, lambda m: m.add_component_if_room(0.5, jnp.array([3.0, -3.0]), 2.0), lambda m: m, mixture
        )

    added = add_where_wanted(batch, jnp.array([True, True]))
    np.testing.assert_array_equal(added.mask, [[True, True, True], [True, True, True]])
    np.testing.assert_allclose(added.weights[0], [0.25, 0.25, 0.5], rtol=1e-14)
    np.testing.assert_allclose(added.means[0, 2], [3.0, -3.0])
    np.testing.assert_allclose(added.log_sigma[0, 2], np.log(2.0), rtol=1e-14)
    for new, old in zip(jax.tree_util.tree_leaves(added), jax.tree_util.tree_leaves(full)):
        np.testing.assert_array_equal(new[1], old)


@pytest.mark.parametrize("family", ["vbmc_mixture", "rotated_vbmc_mixture", "axis_aligned_flagged_vbmc_mixture"])
def test_affine_image_is_the_law_of_the_mapped_points(getkey, family):
    """Image of q under x ↦ m + L x: log density log q(x) − log|det L| at m + L x,
    components N(m + L μ_k, L Σ_k Lᵀ), and it is in the rotated family."""
    mixture, (weights, means, covariances) = make_mixture(family)
    shift = np.array([0.3, -2.0])
    factor = np.array([[1.5, 0.0], [-0.9, 0.4]])
    image = eqx.filter_jit(lambda q: q.affine_image(shift, factor))(mixture)
    assert image.lambda_offdiagonal is not None
    x = jax.random.normal(getkey(), (50, 2))
    np.testing.assert_allclose(
        log_prob(image, shift[None] + x @ factor.T), log_prob(mixture, x) - np.log(1.5 * 0.4), rtol=1e-12, atol=1e-12
    )
    reference = (weights, shift + means @ factor.T, factor[None] @ covariances @ factor.T[None])
    points = 3.0 * np.asarray(jax.random.normal(getkey(), (50, 2)))
    np.testing.assert_allclose(np.exp(log_prob(image, points)), mixture_density(reference, points), rtol=1e-10)


def test_prune_deactivates_light_components_and_renormalises():
    mixture = mixtures.GaussianMixture.from_moments(WEIGHTS, MEANS, VARIANCES)
    pruned = prune(mixture, 0.25)
    np.testing.assert_array_equal(pruned.mask, [True, True, False])
    np.testing.assert_allclose(summary(pruned)["weights"], [0.625, 0.375, 0.0], rtol=1e-14)
    subset = mixtures.GaussianMixture.from_moments(WEIGHTS[:2], MEANS[:2], VARIANCES[:2])
    points = jnp.asarray(np.random.default_rng(2).normal(size=(20, 2)))
    np.testing.assert_allclose(log_prob(pruned, points), log_prob(subset, points), rtol=1e-13)
    # The heaviest component always stays; nothing goes below the threshold 0.
    np.testing.assert_array_equal(prune(mixture, 0.9).mask, [True, False, False])
    np.testing.assert_allclose(summary(prune(mixture, 0.9))["weights"], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(prune(mixture, 0.0).mask, [True, True, True])
    # Already-masked components stay masked.
    np.testing.assert_array_equal(prune(_padded(), 0.1).mask, [True, True, True, False])


@pytest.mark.parametrize("family", FAMILIES)
def test_clip_to_box_clips_means_and_caps_the_scales_at_the_width(family):
    """Means clipped to [lower, upper]; every sd ≤ width per coordinate, with the VBMC family's
    shared λ kept and σ_k lowered just enough; components already inside are unchanged."""
    mixture, (weights, component_means, covariances) = make_mixture(family)
    variances = np.diagonal(covariances, 0, 1, 2)
    lower, upper = jnp.array([-0.5, -3.0]), jnp.array([0.5, 3.0])  # widths 1 and 6
    clipped = mixture.clip_to_box(lower, upper)
    np.testing.assert_array_equal(clipped.component_means, np.clip(component_means, lower, upper))
    np.testing.assert_allclose(clipped.weights, weights, rtol=1e-14)
    sds, widths = np.sqrt(variances), np.asarray(upper - lower)
    clipped_sds = np.sqrt(np.asarray(clipped.component_variances))
    if family == "gaussian_mixture":
        np.testing.assert_allclose(clipped_sds, np.minimum(sds, widths), rtol=1e-14)
    else:
        np.testing.assert_allclose(clipped.scale_matrix, mixture.scale_matrix)
        shrink = np.minimum(1.0, np.min(widths / sds, axis=1, keepdims=True))
        np.testing.assert_allclose(clipped_sds, sds * shrink, rtol=1e-14)
    assert np.all(clipped_sds <= widths * (1 + 1e-14))
    wide = mixture.clip_to_box(jnp.full(2, -10.0), jnp.full(2, 10.0))
    for new, old in zip(jax.tree.leaves(wide), jax.tree.leaves(mixture)):
        np.testing.assert_array_equal(new, old)


# ---------------------------------------------------------------------------------------
# Gaussians.
# ---------------------------------------------------------------------------------------


def test_gaussian_kl_matches_closed_forms():
    # 1-D: log(σ_q/σ_p) + (σ_p² + (μ_p − μ_q)²)/(2σ_q²) − ½.
    value = gaussian_kl(jnp.array([0.3]), jnp.array([[0.5]]), jnp.array([-1.0]), jnp.array([[2.0]]))
    expected = 0.5 * math.log(2.0 / 0.5) + (0.5 + 1.3**2) / (2 * 2.0) - 0.5
    np.testing.assert_allclose(value, expected, rtol=1e-14)
    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    covariance_p, covariance_q = A @ A.T + 0.5 * np.eye(3), B @ B.T + 0.5 * np.eye(3)
    mean_p, mean_q = rng.normal(size=3), rng.normal(size=3)
    inverse_q = np.linalg.inv(covariance_q)
    difference = mean_q - mean_p
    expected = 0.5 * (
        np.trace(inverse_q @ covariance_p)
        + difference @ inverse_q @ difference
        - 3
        + np.linalg.slogdet(covariance_q)[1]
        - np.linalg.slogdet(covariance_p)[1]
    )
    value = gaussian_kl(*(jnp.asarray(a) for a in (mean_p, covariance_p, mean_q, covariance_q)))
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    same = gaussian_kl(*(jnp.asarray(a) for a in (mean_p, covariance_p, mean_p, covariance_p)))
    np.testing.assert_allclose(same, 0.0, atol=1e-13)


def test_gaussian_kl_matches_monte_carlo(getkey):
    mean_p, covariance_p = jnp.array([0.2, -0.5]), jnp.array([[1.0, 0.3], [0.3, 0.5]])
    mean_q, covariance_q = jnp.array([-0.4, 0.1]), jnp.array([[2.0, -0.4], [-0.4, 0.8]])
    p, q = mixtures.MultivariateNormal(mean_p, covariance_p), mixtures.MultivariateNormal(mean_q, covariance_q)
    draws = sample(p, getkey(), 1_000_000)
    values = np.asarray(log_prob(p, draws) - log_prob(q, draws))
    estimate, error = values.mean(), values.std() / 1000.0
    assert abs(gaussian_kl(mean_p, covariance_p, mean_q, covariance_q) - estimate) <= 4 * error


def test_multivariate_normal_density_and_sampling(getkey):
    mean, covariance = np.array([0.5, -1.0]), np.array([[1.2, 0.4], [0.4, 0.6]])
    gaussian = mixtures.MultivariateNormal(jnp.asarray(mean), jnp.asarray(covariance))
    points = np.random.default_rng(4).normal(size=(2, 5, 2))
    np.testing.assert_allclose(
        log_prob(gaussian, jnp.asarray(points)), stats.multivariate_normal(mean, covariance).logpdf(points), rtol=1e-12
    )
    assert gaussian.dimension == 2
    np.testing.assert_array_equal(gaussian.mean(), mean)
    np.testing.assert_array_equal(gaussian.covariance(), covariance)
    draws = np.asarray(sample(gaussian, getkey(), 1_000_000))
    estimate, error = _moment_statistics(draws)
    expected = np.concatenate([mean, (covariance + np.outer(mean, mean)).ravel()])
    assert np.all(np.abs(estimate - expected) <= 4 * error)


# ---------------------------------------------------------------------------------------
# Bad input.
# ---------------------------------------------------------------------------------------


def test_shape_errors_name_the_argument():
    with pytest.raises(ValueError, match="`means`.*shape"):
        mixtures.GaussianMixture.from_moments(WEIGHTS, MEANS[0], VARIANCES[0])
    with pytest.raises(ValueError, match="`weights`.*\\(3,\\)"):
        mixtures.GaussianMixture.from_moments(WEIGHTS[:2], MEANS, VARIANCES)
    with pytest.raises(ValueError, match="`variances`"):
        mixtures.GaussianMixture.from_moments(WEIGHTS, MEANS, VARIANCES[:, :1])
    with pytest.raises(ValueError, match="`x`.*last axis of size 2"):
        mixtures.GaussianMixture.from_moments(WEIGHTS, MEANS, VARIANCES).log_prob(jnp.zeros((4, 3)))
    with pytest.raises(ValueError, match="`mean`.*`covariance`"):
        mixtures.MultivariateNormal(jnp.zeros(2), jnp.eye(3))
    with pytest.raises(ValueError, match="`mean`.*`covariance`"):
        mixtures.MultivariateNormal(jnp.zeros((2, 2)), jnp.eye(2))


def test_non_positive_moments_are_rejected():
    with pytest.raises(Exception, match="`variances` must be finite and strictly positive"):
        mixtures.GaussianMixture.from_moments(WEIGHTS, MEANS, -VARIANCES)
    with pytest.raises(Exception, match="`weights` must be finite and strictly positive"):
        mixtures.GaussianMixture.from_moments(np.array([0.5, 0.0, 0.5]), MEANS, VARIANCES)
    # A zero weight is allowed on a masked slot.
    masked = mixtures.GaussianMixture.from_moments(
        np.array([0.5, 0.0, 0.5]), MEANS, VARIANCES, mask=[True, False, True]
    )
    np.testing.assert_allclose(summary(masked)["weights"], [0.5, 0.0, 0.5])


# ---------------------------------------------------------------------------------------
# Transform matrix.
# ---------------------------------------------------------------------------------------


def _everything(mixture, key, x):
    lower, upper = mixture.entropy_bounds()
    return (
        mixture.log_prob(x),
        mixture.sample(key, 16),
        mixture.stratified_sample(key, 4),
        mixture.entropy(key, 8),
        lower,
        upper,
        mixture.mean(),
        mixture.covariance(),
        mixture.marginal_log_prob(x[:, 0], 1),
        mixture.prune(0.1).weights,
        gaussian_kl(mixture.mean(), mixture.covariance(), jnp.zeros_like(x[0]), jnp.eye(2, dtype=x.dtype)),
    )


def _random_gaussian_mixture(key):
    weight_key, mean_key, variance_key = jax.random.split(key, 3)
    return mixtures.GaussianMixture.from_moments(
        jax.random.uniform(weight_key, (3,), minval=0.2, maxval=1.0),
        jax.random.normal(mean_key, (3, 2)),
        jax.random.uniform(variance_key, (3, 2), minval=0.1, maxval=0.8),
    )


def _random_vbmc_mixture(key, rotated=False):
    keys = jax.random.split(key, 5)
    return mixtures.VBMCMixture(
        jax.random.normal(keys[0], (3,)),
        jax.random.normal(keys[1], (3, 2)),
        0.3 * jax.random.normal(keys[2], (3,)),
        0.3 * jax.random.normal(keys[3], (2,)),
        jnp.ones(3, bool),
        jax.random.normal(keys[4], (1,)) if rotated else None,
    )


RANDOM_MIXTURES = {
    "gaussian_mixture": _random_gaussian_mixture,
    "vbmc_mixture": _random_vbmc_mixture,
    "rotated_vbmc_mixture": lambda key: _random_vbmc_mixture(key, rotated=True),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_jit_traces_once_for_new_values(getkey, family):
    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def run(mixture, key, x, weight, mean, scale):
        if isinstance(mixture, mixtures.GaussianMixture):
            bigger = mixtures.GaussianMixture(
                jnp.append(mixture.logits, 0.0),
                jnp.concatenate([mixture.means, mean[None]]),
                jnp.concatenate([mixture.log_scales, jnp.zeros((1, 2))]),
                jnp.append(mixture.mask, False),
            )
            added = bigger.add_component(weight, mean, jnp.full(2, scale))
        else:
            added = mixture.prune(0.5).add_component(weight, mean, scale)
        return _everything(mixture, key, x), added.weights

    for _ in range(3):
        run(
            RANDOM_MIXTURES[family](getkey()),
            getkey(),
            jax.random.normal(getkey(), (5, 2)),
            jax.random.uniform(getkey(), minval=0.1, maxval=0.5),
            jax.random.normal(getkey(), (2,)),
            jax.random.uniform(getkey(), minval=0.5, maxval=1.5),
        )


@pytest.mark.parametrize("family", FAMILIES)
def test_vmap_over_mixtures_equals_loop(getkey, family):
    batch = [RANDOM_MIXTURES[family](getkey()) for _ in range(4)]
    stacked = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *batch)
    keys = jax.random.split(getkey(), 4)
    x = jax.random.normal(getkey(), (5, 2))
    batched = eqx.filter_jit(jax.vmap(_everything, in_axes=(0, 0, None)))(stacked, keys, x)
    single = eqx.filter_jit(_everything)
    for index, mixture in enumerate(batch):
        for a, b in zip(batched, single(mixture, keys[index], x)):
            np.testing.assert_allclose(a[index], b, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("family", FAMILIES)
def test_gradients_match_finite_differences(getkey, family):
    """Entropy (Monte Carlo with a fixed key: common random numbers), its bounds, the
    log density and the moments, with respect to every mixture parameter."""
    mixture = RANDOM_MIXTURES[family](getkey())
    params, static = eqx.partition(mixture, eqx.is_inexact_array)
    key = getkey()
    x = jax.random.normal(getkey(), (4, 2))

    @eqx.filter_jit
    def objective(params):
        mixture = eqx.combine(params, static)
        lower, upper = mixture.entropy_bounds()
        return (
            mixture.entropy(key, 64)
            + 0.7 * lower
            - 0.3 * upper
            + jnp.sum(mixture.log_prob(x))
            + jnp.sum(mixture.mean() ** 2)
            + jnp.sum(mixture.covariance())
            + jnp.sum(mixture.marginal_log_prob(x[:, 1], 0))
        )

    np.testing.assert_allclose(
        autodiff_gradient(objective, params), finite_difference_gradient(objective, params), rtol=1e-5, atol=1e-7
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_float32_smoke(getkey, family):
    mixture = RANDOM_MIXTURES[family](getkey())
    mixture = jax.tree_util.tree_map(
        lambda leaf: leaf.astype(jnp.float32) if eqx.is_inexact_array(leaf) else leaf, mixture
    )
    outputs = eqx.filter_jit(_everything)(mixture, getkey(), jax.random.normal(getkey(), (5, 2), jnp.float32))
    for output in outputs:
        assert output.dtype == jnp.float32
        assert np.all(~np.isnan(output))
