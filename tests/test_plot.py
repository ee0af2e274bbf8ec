"""Tests of `gpcompose.plot`: each plot writes a PNG of non-trivial content (some kilobytes,
and a good fraction of pixels that are not white) from cheap inputs — a tiny BVBMC run (its
posterior and its per-round results), a Gaussian mixture, a tiny BO run, small exact and
sparse GPs, an SVBMC round history — and draws the numbers it is given; `import gpcompose`
does not import matplotlib, and `gpcompose.plot` without matplotlib names the extra."""

import math
import subprocess
import sys

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from gpcompose import bo, boosting, bvbmc, gp, kernels, means, mixtures, plot, sparse, svbmc  # noqa: E402
from gpcompose.svbmc._report import record_round, start_history  # noqa: E402

MEAN = np.array([0.5, -1.0])
SD = np.array([1.0, 0.6])
LOG_Z = 1.7


def gaussian_log_density(x):
    """log Z + log N(x; MEAN, diag(SD²)): the evidence is exactly e^{LOG_Z}."""
    standardised = (np.asarray(x) - MEAN) / SD
    return float(LOG_Z - 0.5 * np.sum(standardised**2) - np.sum(np.log(SD)) - math.log(2 * math.pi))


def assert_png_has_content(figure, path, min_ink=0.025):
    """Writes `figure` to `path` and checks the file: more than 10 kB, and more than `min_ink` of
    its pixels not white (an empty axes of the size of `bo_trace`'s 1-D figure: 6 kB, 1.5 %)."""
    figure.savefig(path, dpi=80)
    plt.close(figure)
    assert path.stat().st_size > 10_000, path.stat().st_size
    image = matplotlib.image.imread(path)
    ink = np.mean(np.any(image[..., :3] < 0.95, axis=-1))
    assert ink > min_ink, ink


@pytest.fixture(scope="module")
def bvbmc_run():
    """A tiny BVBMC run on the Gaussian and its result after every evaluation (the callback of
    `elbo_trace`'s docstring)."""
    learner = bvbmc.BVBMC(
        max_components=3,
        fit_steps=30,
        initial_joint_steps=20,
        acquisitions=(bvbmc.Prospective(),),
        num_candidates=8,
        num_search_starts=2,
        search_steps=3,
        final_entropy_samples=512,
        boosting=boosting.Boosting(
            relbo_steps=20,
            relbo_samples=16,
            weight_samples=16,
            joint_update_every=10,
            joint_steps=10,
            joint_samples_per_component=16,
        ),  # fmt: skip
        kernel=kernels.SquaredExponential(lengthscale=jnp.ones(2), variance=1.0),
    )
    X0 = MEAN + 1.5 * np.asarray(jax.random.normal(jax.random.key(0), (8, 2)))
    per_round = []
    result = bvbmc.fit(
        gaussian_log_density,
        X0,
        key=jax.random.key(1),
        budget=4,
        learner=learner,
        callback=lambda progress: per_round.append(learner.result(progress.state)),
    )
    return result, per_round


def test_corner_of_a_variational_posterior_against_reference_samples(bvbmc_run, tmp_path):
    result, _ = bvbmc_run
    reference = MEAN + SD * np.asarray(jax.random.normal(jax.random.key(2), (5000, 2)))
    figure = plot.corner(result.posterior, key=jax.random.key(3), reference_samples=reference, labels=["a", "b"])
    axes = figure.axes
    assert len(axes) == 4 and not axes[1].axison  # the upper triangle is empty
    assert [axes[2].get_xlabel(), axes[3].get_xlabel(), axes[2].get_ylabel()] == ["a", "b", "b"]
    assert_png_has_content(figure, tmp_path / "corner.png", min_ink=0.1)


def test_corner_of_samples_and_of_a_mixture_in_a_subfigure(tmp_path):
    mixture = mixtures.GaussianMixture.from_moments(
        jnp.array([0.3, 0.7]), jnp.array([[-1.0, 0.0, 2.0], [1.5, 1.0, 0.0]]), jnp.full((2, 3), 0.3)
    )
    samples = np.asarray(mixture.sample(jax.random.key(0), 4000))
    figure = plot.corner(samples, bins=30)
    assert len(figure.axes) == 9
    assert_png_has_content(figure, tmp_path / "samples.png", min_ink=0.1)

    parent = plt.figure(figsize=(9, 4.5), layout="constrained")
    left, right = parent.subfigures(1, 2)
    assert plot.corner(mixture, key=jax.random.key(1), num_samples=2000, fig=left) is parent
    right.subplots().plot([0, 1], [0, 1])
    assert_png_has_content(parent, tmp_path / "subfigure.png", min_ink=0.1)

    with pytest.raises(ValueError, match="`key` is needed"):
        plot.corner(mixture)
    with pytest.raises(ValueError, match="`reference_samples` must have shape"):
        plot.corner(samples, reference_samples=samples[:, :2])
    with pytest.raises(ValueError, match="`labels` must hold 3 names"):
        plot.corner(samples, labels=["a"])


def test_bo_trace_of_a_run_with_its_points_and_regret(tmp_path):
    lower, upper = np.array([-1.0, -1.0]), np.array([1.0, 1.0])
    learner = bo.BO(num_candidates=64, num_starts=2, search_steps=15, fit_steps=40)

    def quadratic(x):
        return float(np.sum((np.asarray(x) - 0.3) ** 2))

    found = bo.minimize(quadratic, lower, upper, key=jax.random.key(0), budget=6, learner=learner)
    figure = plot.bo_trace(found, optimum=0.0)
    trace, points = figure.axes[:2]
    assert trace.get_yscale() == "log" and points.get_title() == "evaluated points"
    regret = trace.get_lines()[1].get_ydata()
    np.testing.assert_allclose(regret, np.minimum.accumulate(np.asarray(found.y)))  # min f = 0
    assert_png_has_content(figure, tmp_path / "bo.png")


def test_bo_trace_of_a_one_dimensional_maximization(tmp_path):
    X = jnp.linspace(0.0, 1.0, 7)[:, None]
    y = jnp.array([0.1, 0.5, 0.3, 0.9, 0.2, 0.95, 0.4])
    found = bo.BOResult(X[5], y[5], X, y, num_failed=0)
    figure = plot.bo_trace(found, num_initial=3)
    assert len(figure.axes) == 1 and figure.axes[0].get_yscale() == "linear"
    np.testing.assert_allclose(figure.axes[0].get_lines()[1].get_ydata(), np.maximum.accumulate(np.asarray(y)))
    assert_png_has_content(figure, tmp_path / "bo_1d.png")


def test_gp_fit_1d_of_an_exact_and_a_sparse_posterior(tmp_path):
    X = jax.random.uniform(jax.random.key(0), (30, 1), minval=-3.0, maxval=3.0)
    y = jnp.sin(2.0 * X[:, 0]) + 0.1 * jax.random.normal(jax.random.key(1), (30,))
    kernel = kernels.Matern52(lengthscale=0.8, variance=1.0)
    exact = gp.condition(kernel, means.Zero(), X, y, jnp.asarray(0.01))
    figure = plot.gp_fit_1d(exact, jnp.asarray(0.01))
    axis = figure.axes[0]
    assert len(axis.collections) == 2  # the predictive band and the latent band
    assert_png_has_content(figure, tmp_path / "exact.png", min_ink=0.1)

    Z = jnp.linspace(-3.0, 3.0, 6)[:, None]
    approximate = sparse.condition(kernel, means.Zero(), X, y, jnp.asarray(0.01), Z)
    _, axis = plt.subplots()
    assert plot.gp_fit_1d(approximate, grid=np.linspace(-4.0, 4.0, 100), ax=axis) is axis.figure
    assert [line.get_label() for line in axis.get_lines()][-1] == "inducing inputs"
    assert_png_has_content(axis.figure, tmp_path / "sparse.png", min_ink=0.1)

    with pytest.raises(ValueError, match="1-D inputs"):
        plot.gp_fit_1d(gp.condition(kernel, means.Zero(), jnp.zeros((3, 2)), jnp.zeros(3), jnp.asarray(0.01)))


def test_elbo_trace_of_bvbmc_results_collected_per_round(bvbmc_run, tmp_path):
    _, per_round = bvbmc_run
    figure = plot.elbo_trace(per_round, log_normalizer=LOG_Z)
    axis = figure.axes[0]
    elbos = axis.get_lines()[0].get_ydata()
    np.testing.assert_allclose(elbos, [float(result.elbo) for result in per_round])
    assert len(elbos) == 4
    assert_png_has_content(figure, tmp_path / "bvbmc_elbo.png")


def test_elbo_trace_of_an_svbmc_round_history_and_of_arrays(tmp_path):
    # A run of 10 rounds whose ring holds the last 4 (7–10), with round r's ELBO −1/r.
    options, budget = svbmc.SVBMC(batch_size=2), 20
    mixture = mixtures.VBMCMixture(
        logits=jnp.zeros(2),
        means=jnp.array([[0.0, 0.0], [0.0, 1.0]]),
        log_sigma=jnp.zeros(2),
        log_lambda=jnp.zeros(2),
        mask=jnp.ones(2, bool),
    )
    history = start_history(mixture, jnp.asarray(-2.0), jnp.asarray(0.5), options, budget)
    for index in range(1, 11):
        elbo, sd = jnp.asarray(-1.0 / index), jnp.asarray(0.1 / index)
        history = record_round(history, mixture, elbo, sd, jnp.asarray(2 * index, jnp.int32))
    figure = plot.elbo_trace(history)
    line = figure.axes[0].get_lines()[0]
    np.testing.assert_array_equal(line.get_xdata(), [7, 8, 9, 10])
    np.testing.assert_allclose(line.get_ydata(), [-1 / 7, -1 / 8, -1 / 9, -1 / 10])
    assert_png_has_content(figure, tmp_path / "svbmc_elbo.png")

    figure = plot.elbo_trace(np.array([-3.0, -2.0, -1.5]), np.array([1.0, 0.5, 0.2]), rounds=[0, 2, 4])
    np.testing.assert_array_equal(figure.axes[0].get_lines()[0].get_xdata(), [0, 2, 4])
    assert_png_has_content(figure, tmp_path / "arrays.png")
    with pytest.raises(ValueError, match="`elbo_sd` must have the shape"):
        plot.elbo_trace([-3.0, -2.0], [1.0])


def test_gpcompose_does_not_import_matplotlib():
    code = "import sys, gpcompose; assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_plot_without_matplotlib_names_the_extra(monkeypatch):
    for name in [name for name in sys.modules if name == "gpcompose.plot" or name.startswith("gpcompose.plot.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'gpcompose\[plot\]'"):
        import gpcompose.plot  # noqa: F401
