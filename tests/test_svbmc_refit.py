"""The SVBMC sparse-GP refit: the guard against a mean that rises above the ceiling between
the data and the refit from several starts (the first fit below the ceiling is kept)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from gpcompose import mixtures, sparse, svbmc
from gpcompose.kernels import SquaredExponential
from gpcompose.means import NegativeQuadratic
from gpcompose.svbmc._refit import exceeds_ceiling, refit_from_starts
from gpcompose.svbmc._surrogate import Surrogate, conditioned_objective, initial_surrogate, with_lengthscale_scaled
from gpcompose.svbmc._training import peak_ceiling, peak_check
from gpcompose.svbmc._whitening import highest_points_gaussian, keeps_whitening

X = jnp.linspace(-3.0, 3.0, 21)[:, None]  # spacing 0.3
Y = -0.5 * X[:, 0] ** 2  # y_max = 0 at x = 0
NOISE = jnp.full(21, 1e-3)
GRID = jnp.linspace(-3.0, 3.0, 601)[:, None]


def posterior(lengthscale, mean_maximum):
    kernel = SquaredExponential(lengthscale=jnp.array([lengthscale]), variance=1.0)
    mean = NegativeQuadratic(maximum=mean_maximum, location=jnp.zeros(1), scale=jnp.ones(1))
    return sparse.condition(kernel, mean, X, Y, NOISE, X, mask=jnp.ones(21, bool), inducing_mask=jnp.ones(21, bool))


SMOOTH = posterior(1.0, 0.0)  # the mean function is the target itself
# lengthscale 0.03 ≪ spacing: between the points the mean returns to its mean function,
# whose maximum is 50 above every observation
PEAKY = posterior(0.03, 50.0)


def test_a_peak_between_the_data_exceeds_the_ceiling():
    assert float(sparse.predict(PEAKY, GRID)[0].max()) > 40.0  # the constructed peak is there
    assert exceeds_ceiling(PEAKY, GRID, jnp.asarray(2.0))


def test_a_mean_below_the_ceiling_passes():
    assert float(sparse.predict(SMOOTH, GRID)[0].max()) < 0.01
    assert not exceeds_ceiling(SMOOTH, GRID, jnp.asarray(2.0))


def test_masked_points_are_not_checked():
    at_data = jnp.arange(601) % 30 == 0  # the grid points that are training inputs
    assert not exceeds_ceiling(PEAKY, GRID, jnp.asarray(2.0), at_data)


# a 2-D log density with a bump beside the quadratic: the lengthscales matter
DATA_X = jax.random.uniform(jax.random.key(0), (150, 2), minval=-3.0, maxval=3.0)
DATA_Y = -0.5 * jnp.sum(DATA_X**2, axis=1) + 1.5 * jnp.exp(-2.0 * jnp.sum((DATA_X - 0.7) ** 2, axis=1))
DATA_NOISE = jnp.full((150,), 1e-3)
KEEP = jnp.ones((150,), bool)
OPTIONS = svbmc.SVBMC(min_inducing=20, max_inducing=40, sparse_fit_steps=30, batch_size=2)
START = initial_surrogate(jnp.zeros(2), jnp.full(2, 6.0), jnp.asarray(0.0), jnp.asarray(2.0), jnp.asarray(20.0))
TOO_SMOOTH, TOO_ROUGH = with_lengthscale_scaled(START, 4.0), with_lengthscale_scaled(START, 0.1)


@eqx.filter_jit
def refit(starts, ceiling):
    return refit_from_starts(
        starts,
        DATA_X,
        DATA_Y,
        DATA_NOISE,
        KEEP,
        OPTIONS,
        num_initial=150,
        check_points=DATA_X,
        check_mask=KEEP,
        ceiling=ceiling,
    )


def bound(surrogate_of, chosen):
    """The bound of `chosen` (conditioned with its own hyperparameters)."""
    return float(conditioned_objective(surrogate_of(chosen), chosen))


def hyperparameters(posterior):
    return Surrogate(posterior.kernel, posterior.mean)


def assert_same_posterior(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        if eqx.is_array(x):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-9)


def highest_mean(posterior):
    mean, _ = sparse.predict(posterior, DATA_X)
    return float(jnp.max(mean))


def test_the_first_start_whose_fit_stays_below_the_ceiling_is_kept():
    """Starts are fitted in order and the first fit below the ceiling is kept: the second
    start's fit only if the first one's peaks."""
    singles = [refit([start], jnp.asarray(100.0)).posterior for start in (TOO_SMOOTH, TOO_ROUGH)]
    highest = [highest_mean(single) for single in singles]
    assert abs(highest[0] - highest[1]) > 1e-3  # the two starts end at different fits
    low, high = int(np.argmin(highest)), int(np.argmax(highest))
    starts = (TOO_SMOOTH, TOO_ROUGH)
    for first, second in ((low, high), (high, low)):  # no peak: the first start's fit, whatever its bound
        kept = refit([starts[first], starts[second]], jnp.asarray(100.0))
        assert not kept.fell_back
        assert_same_posterior(kept.posterior, singles[first])
    between = jnp.asarray(0.5 * (highest[0] + highest[1]))  # only the higher-peaked fit exceeds it
    kept = refit([starts[high], starts[low]], between)
    assert not kept.fell_back
    assert_same_posterior(kept.posterior, singles[low])


def test_when_every_fit_peaks_the_best_unfitted_start_is_kept():
    """A ceiling below the data: every fitted mean exceeds it, so the refit falls back to the
    start with the higher bound, its hyperparameters unchanged."""
    outcome = refit([TOO_SMOOTH, TOO_ROUGH], jnp.asarray(-100.0))
    assert outcome.fell_back
    assert_same_posterior(outcome.posterior, outcome.unfitted)
    kept = hyperparameters(outcome.posterior)
    lengthscales = [np.asarray(s.kernel.lengthscale.value) for s in (TOO_SMOOTH, TOO_ROUGH)]
    assert any(np.allclose(kept.kernel.lengthscale.value, value, rtol=1e-12) for value in lengthscales)


# one component N(0, 1)
STANDARD_NORMAL = mixtures.VBMCMixture(
    logits=jnp.zeros(1),
    means=jnp.zeros((1, 1)),
    log_sigma=jnp.zeros(1),
    log_lambda=jnp.zeros(1),
    mask=jnp.ones(1, bool),
)


def test_a_mixture_on_the_peaks_between_the_data_peaks():
    mixture = STANDARD_NORMAL
    options = svbmc.SVBMC()
    ceiling = peak_ceiling(Y, jnp.ones(21, bool), options, 1)
    assert float(ceiling) == 1.0  # y_max = 0 plus 1·D
    key = jax.random.key(0)
    assert peak_check(PEAKY, mixture, ceiling, key, options).peaked
    assert not peak_check(SMOOTH, mixture, ceiling, key, options).peaked


def test_the_highest_draw_is_the_top_of_a_mountain_between_the_data():
    """`peak_check` returns the draw of the mixture with the highest surrogate mean: on the
    peaky posterior a point between two training inputs, where the mean rises above the
    ceiling; on the smooth one (mean −x²/2) the draw nearest the mode 0."""
    mixture = STANDARD_NORMAL
    options = svbmc.SVBMC()
    key = jax.random.key(0)
    draws = np.asarray(mixture.sample(key, options.peak_check_samples))[:, 0]
    top = peak_check(PEAKY, mixture, jnp.asarray(1.0), key, options).top
    assert float(jnp.min(jnp.abs(X[:, 0] - top[0]))) > 0.1  # spacing 0.3: between the data
    assert float(sparse.predict(PEAKY, top[None])[0][0]) > 1.0 + 40.0  # far above the ceiling y_max + 1
    smooth_top = peak_check(SMOOTH, mixture, jnp.asarray(1.0), key, options).top
    assert float(jnp.abs(smooth_top[0])) == np.min(np.abs(draws))


def test_a_whitened_fit_is_kept_if_it_scores_higher_without_a_significant_elbo_drop_or_a_lone_peak():
    valid, up, down = jnp.asarray(True), jnp.asarray(1.0), jnp.asarray(-1.0)
    no, yes = jnp.asarray(False), jnp.asarray(True)

    def keeps(score_gain, elbo_drop_z, new_peaks, old_peaks, is_valid=valid):
        return bool(keeps_whitening(is_valid, score_gain, jnp.asarray(elbo_drop_z), new_peaks, old_peaks, 2.0))

    assert keeps(up, -1.0, no, no)
    assert keeps(up, 0.9, no, no)  # a lower ELBO within 2 sds (Lotka–Volterra sets 3, 4: 0.9, 0.5)
    assert not keeps(up, 2.3, no, no)  # a significantly lower ELBO (timing seed 5: 2.3 sds)
    assert not keeps(down, -1.0, no, no)  # a lower score
    assert not keeps(up, -1.0, yes, no)  # higher both, but its q sits on a peak
    assert keeps(up, -1.0, yes, yes)  # both peak: score and ELBO decide
    assert not keeps(down, -1.0, no, yes)  # the first fit peaks but scores higher
    assert not keeps(up, -1.0, no, no, is_valid=jnp.asarray(False))


def highest_points_case(num_points, scale):
    """`num_points` inputs of N(0, C) (correlation 0.9) with y = −½ xᵀC⁻¹x / scale²."""
    covariance = np.array([[1.0, 0.9], [0.9, 1.0]])
    X = np.random.default_rng(0).multivariate_normal(np.zeros(2), covariance, num_points)
    y = -0.5 * np.einsum("nd,de,ne->n", X, np.linalg.inv(covariance), X) / scale**2
    return X, y


def with_floor(covariance):
    """`covariance` plus `initial_mixture`'s diagonal floor 1e-6 × its largest variance + 1e-12."""
    return covariance + (1e-6 * np.max(np.diag(covariance)) + 1e-12) * np.eye(covariance.shape[0])


def highest_points(X, y):
    options = svbmc.SVBMC()
    n = X.shape[0]
    return highest_points_gaussian(
        jnp.asarray(X), jnp.asarray(y), jnp.full(n, 1e-5), jnp.ones(n, bool), options, num_initial=n
    )


def test_the_highest_points_gaussian_has_their_mean_and_covariance():
    """The component is the mean and covariance (1/n) of the rows within D + 2 of y_max
    (with `initial_mixture`'s diagonal floor)."""
    X, y = highest_points_case(2000, 1.0)
    top = X[y >= y.max() - 4.0]
    assert top.shape[0] > 20  # the band, not the 10·D floor, decides here
    gaussian = highest_points(X, y)
    np.testing.assert_allclose(gaussian.mean(), top.mean(0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gaussian.covariance(), with_floor(np.cov(top.T, bias=True)), rtol=1e-10)


def test_the_highest_points_gaussian_takes_the_10d_highest_when_the_band_is_thin():
    """On a sharp target (y falls by 4 within 0.08 sd of the peak) fewer than 10·D rows lie
    within D + 2 of y_max; the component is then that of the 20 highest rows."""
    X, y = highest_points_case(2000, 0.03)
    assert np.sum(y >= y.max() - 4.0) < 20
    top = X[np.argsort(y)[-20:]]
    gaussian = highest_points(X, y)
    np.testing.assert_allclose(gaussian.covariance(), with_floor(np.cov(top.T, bias=True)), rtol=1e-10)
