import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree
from scipy import special, stats

import gpcompose
from gpcompose import steingp
from gpcompose.kernels import SquaredExponential
from gpcompose.likelihoods import Bernoulli, Gaussian
from gpcompose.parameters import Positive
from gpcompose.priors import Gamma
from gpcompose.svgd import SVGD

from .helpers import autodiff_gradient, finite_difference_gradient

NUM_POINTS = 12


def make_data(dtype=np.float64):
    rng = np.random.default_rng(5)
    X = rng.uniform(-2.0, 2.0, (NUM_POINTS, 1)).astype(dtype)
    y = (np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(NUM_POINTS)).astype(dtype)
    return X, y


def constrained(unconstrained):
    """θ = 10⁻⁶ + softplus(u), SteinGP's default constraint."""
    return 1e-6 + np.logaddexp(0.0, np.asarray(unconstrained))


def reference_log_prior(unconstrained):
    """Σ [log Gamma(θ; shape 1, scale 2) + log σ(u)]: the default prior in the u coordinate."""
    theta = constrained(unconstrained)
    return np.sum(-np.log(2.0) - theta / 2 + special.log_expit(np.asarray(unconstrained)))


def squared_exponential_gram(A, B, lengthscale, variance):
    return variance * np.exp(-0.5 * (A[:, None, 0] - B[None, :, 0]) ** 2 / lengthscale**2)


def hyperparameter_coordinates(model, particle):
    kernel, likelihood = model.components(particle)
    coordinates = [kernel.lengthscale.unconstrained, kernel.variance.unconstrained]
    if isinstance(likelihood, Gaussian):
        coordinates.append(likelihood.variance.unconstrained)
    return np.array([float(c) for c in coordinates])


@pytest.fixture(scope="module")
def data():
    return make_data()


def test_conjugate_log_density_is_marginal_likelihood_plus_prior_and_jacobian(data, getkey):
    X, y = data
    model = steingp.make_model(X, y, kernel=SquaredExponential(), likelihood=Gaussian())
    assert isinstance(model, steingp.ConjugateModel)
    particle = model.initial_particle(getkey(), jnp.asarray(1.0))
    coordinates = hyperparameter_coordinates(model, particle)
    lengthscale, variance, noise = constrained(coordinates)
    covariance = squared_exponential_gram(X, X, lengthscale, variance) + noise * np.eye(NUM_POINTS)
    expected = stats.multivariate_normal.logpdf(y, np.zeros(NUM_POINTS), covariance) + reference_log_prior(coordinates)
    np.testing.assert_allclose(model.log_density(particle), expected, rtol=1e-10)


def test_whitened_bernoulli_log_density_matches_dense_computation(data, getkey):
    X, y = data
    labels = (y > 0).astype(np.float64)
    model = steingp.make_model(X, labels, kernel=SquaredExponential(), likelihood=Bernoulli())
    assert isinstance(model, steingp.WhitenedModel)
    particle = model.initial_particle(getkey(), jnp.asarray(1.0))
    coordinates = hyperparameter_coordinates(model, particle)
    lengthscale, variance = constrained(coordinates)
    latents = np.asarray(particle.latents)
    lower = np.linalg.cholesky(squared_exponential_gram(X, X, lengthscale, variance) + 1e-6 * np.eye(NUM_POINTS))
    latent_values = lower @ latents
    expected = (
        np.sum(special.log_ndtr((2 * labels - 1) * latent_values))
        - 0.5 * latents @ latents
        + reference_log_prior(coordinates)
    )
    np.testing.assert_allclose(model.log_density(particle), expected, rtol=1e-10)


def test_sparse_gaussian_log_density_matches_dense_computation(data, getkey):
    X, y = data
    inducing = np.linspace(-1.5, 1.5, 4)[:, None]
    model = steingp.make_model(X, y, kernel=SquaredExponential(), likelihood=Gaussian(), inducing_points=inducing)
    assert isinstance(model, steingp.SparseWhitenedModel)
    particle = model.initial_particle(getkey(), jnp.asarray(1.0))
    coordinates = hyperparameter_coordinates(model, particle)
    lengthscale, variance, noise = constrained(coordinates)
    latents = np.asarray(particle.latents)
    inducing_gram = squared_exponential_gram(inducing, inducing, lengthscale, variance) + 1e-6 * np.eye(4)
    cross = squared_exponential_gram(inducing, X, lengthscale, variance)
    inverse = np.linalg.inv(inducing_gram)
    mean = cross.T @ np.linalg.solve(np.linalg.cholesky(inducing_gram).T, latents)
    latent_variance = variance - np.einsum("mn,mk,kn->n", cross, inverse, cross)
    data_term = np.sum(stats.norm.logpdf(y, mean, np.sqrt(noise)) - latent_variance / (2 * noise))
    expected = data_term - 0.5 * latents @ latents + reference_log_prior(coordinates)
    np.testing.assert_allclose(model.log_density(particle), expected, rtol=1e-10)


def test_sparse_model_with_inducing_points_at_the_data_reduces_to_the_whitened_model(data, getkey):
    X, y = data
    prior_kernel, likelihood = steingp.with_default_priors((SquaredExponential(), Gaussian(variance=0.5)))
    X, y, jitter = jnp.asarray(X), jnp.asarray(y), 1e-10
    sparse = steingp.SparseWhitenedModel(prior_kernel, likelihood, X, y, X, jitter=jitter)
    whitened = steingp.WhitenedModel(prior_kernel, likelihood, X, y, jitter=jitter)
    particle = whitened.initial_particle(getkey(), jnp.asarray(0.3))
    # With L = chol(K + jI): v_n ≤ j, and the sparse mean K L⁻ᵀν = Lν − j L⁻ᵀν differs from
    # f = Lν by O(√j) because ‖L⁻¹‖ ≤ 1/√j; both vanish with the jitter.
    np.testing.assert_allclose(sparse.log_density(particle), whitened.log_density(particle), atol=1e-6)
    for model in (sparse, whitened):
        _, variance = model.latent_predictive(particle, X)
        assert float(jnp.max(variance)) < 1e-8


@pytest.fixture(scope="module")
def sparse_classifier(data):
    X, y = data
    inducing = np.linspace(-1.5, 1.5, 5)[:, None]
    labels = (y > 0).astype(np.float64)
    kernel, likelihood = SquaredExponential(), Bernoulli(link="logit")
    return steingp.make_model(X, labels, kernel=kernel, likelihood=likelihood, inducing_points=inducing)


def flat_score(model):
    """λ, B ↦ ∇ log p̂(λ; B) as one vector, compiled once."""
    return jax.jit(lambda particle, *batch: ravel_pytree(jax.grad(model.log_density)(particle, *batch))[0])


def test_minibatch_scores_over_a_partition_average_to_the_full_score(sparse_classifier, getkey):
    particle = sparse_classifier.initial_particle(getkey(), jnp.asarray(1.0))
    score = flat_score(sparse_classifier)
    full = score(particle)
    batches = jax.random.permutation(getkey(), NUM_POINTS).reshape(3, 4)
    batch_scores = np.stack([score(particle, batch) for batch in batches])
    np.testing.assert_allclose(batch_scores.mean(axis=0), full, rtol=1e-10, atol=1e-12)
    assert not np.allclose(batch_scores[0], full)  # a single batch is a noisy estimate


def test_random_minibatch_scores_are_unbiased(sparse_classifier, getkey):
    particle = sparse_classifier.initial_particle(getkey(), jnp.asarray(1.0))
    score = flat_score(sparse_classifier)
    full = score(particle)
    # the draw SteinGP.step makes: |B| indices uniform with replacement
    indices = jax.random.randint(getkey(), (4000, 3), 0, NUM_POINTS)
    scores = np.asarray(jax.vmap(score, in_axes=(None, 0))(particle, indices))
    standard_error = scores.std(axis=0) / np.sqrt(scores.shape[0])
    assert np.all(np.abs(scores.mean(axis=0) - full) < 4 * standard_error + 1e-12)


def gamma_prior_svgd(include_jacobian, key):
    parameter = steingp.with_default_priors(Positive(1.0))

    def log_density(particle):
        if include_jacobian:
            return particle.log_prior()
        return jnp.sum(particle.prior.log_prob(particle.value))

    def as_parameter(unconstrained):
        return eqx.tree_at(lambda p: p.unconstrained, parameter, unconstrained)

    svgd = SVGD(lambda unconstrained: log_density(as_parameter(unconstrained)), optimizer=optax.adam(0.1))
    initial = parameter.unconstrained + jax.random.normal(key, (100,))
    state, info = gpcompose.run(svgd, svgd.init(initial), key, 400)
    return as_parameter(state.particles).value, info


def test_svgd_on_the_gamma_prior_in_softplus_space_needs_the_jacobian(getkey):
    key = getkey()
    values, info = gamma_prior_svgd(True, key)
    assert bool(jnp.all(info.finite))
    # Gamma(shape 1, scale 2): mean 2, variance 4 (a rate of 2 would give mean 0.5)
    assert abs(float(jnp.mean(values)) - 2.0) < 0.1
    # SVGD under-disperses slightly on this heavy right tail (3.3 against 4 with 100 particles)
    assert abs(float(jnp.var(values)) - 4.0) < 0.2 * 4.0
    biased, _ = gamma_prior_svgd(False, key)
    assert abs(float(jnp.mean(biased)) - 2.0) > 0.5


def initial_result(X, y, likelihood, key):
    """Four initial particles (drawn from the priors) as a result: the predictive formulae
    hold at any particles, so no SVGD run is needed."""
    algorithm = steingp.SteinGP(steingp.make_model(X, y, kernel=SquaredExponential(), likelihood=likelihood))
    return algorithm.result(algorithm.init(4, key=key), None)


def particle_hyperparameters(result):
    """Each particle's constrained (lengthscale, signal variance[, noise variance]) as numpy arrays."""
    kernel, likelihood = result.components
    values = [kernel.lengthscale.value, kernel.variance.value]
    if isinstance(likelihood, Gaussian):
        values.append(likelihood.variance.value)
    return [np.asarray(value) for value in values]


def test_conjugate_mixture_predictive_matches_dense_posteriors_and_samples(data, getkey):
    X, y = data
    X_new = np.array([[-2.5], [0.3], [1.7]])
    y_new = np.array([0.2, 0.5, -0.4])
    result = initial_result(X, y, Gaussian(), getkey())
    latent_means, latent_variances = result.latent_predictions(X_new)
    means, variances, log_densities = [], [], []
    for index, (lengthscale, variance, noise) in enumerate(zip(*particle_hyperparameters(result))):
        gram = squared_exponential_gram(X, X, lengthscale, variance) + noise * np.eye(NUM_POINTS)
        cross = squared_exponential_gram(X, X_new, lengthscale, variance)
        mean = cross.T @ np.linalg.solve(gram, y)
        latent_variance = variance - np.einsum("nq,nq->q", cross, np.linalg.solve(gram, cross))
        np.testing.assert_allclose(latent_means[index], mean, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(latent_variances[index], latent_variance, rtol=1e-6, atol=1e-10)
        means.append(mean)
        variances.append(latent_variance + noise)
        log_densities.append(stats.norm.logpdf(y_new, mean, np.sqrt(variances[-1])))
    means, variances = np.array(means), np.array(variances)
    mixture_mean = means.mean(axis=0)
    mixture_variance = (variances + means**2).mean(axis=0) - mixture_mean**2
    predicted_mean, predicted_variance = result.predict(X_new)
    np.testing.assert_allclose(predicted_mean, mixture_mean, rtol=1e-8)
    np.testing.assert_allclose(predicted_variance, mixture_variance, rtol=1e-8)
    expected_log_density = special.logsumexp(np.array(log_densities), axis=0) - np.log(result.num_particles)
    np.testing.assert_allclose(result.log_predictive_density(X_new, y_new), expected_log_density, rtol=1e-8)
    samples = np.asarray(result.sample(getkey(), X_new, 5000)).reshape(-1, 3)
    squared_deviations = (samples - mixture_mean) ** 2
    count = samples.shape[0]
    assert np.all(np.abs(samples.mean(axis=0) - mixture_mean) < 4 * np.sqrt(mixture_variance / count))
    variance_error = 4 * squared_deviations.std(axis=0) / np.sqrt(count)
    assert np.all(np.abs(squared_deviations.mean(axis=0) - mixture_variance) < variance_error)


def test_bernoulli_mixture_predictive_matches_dense_whitened_conditionals_and_samples(data, getkey):
    X, y = data
    labels = (y > 0).astype(np.float64)
    X_new = np.array([[-1.0], [0.4], [3.0]])
    result = initial_result(X, labels, Bernoulli(), getkey())
    latent_means, latent_variances = result.latent_predictions(X_new)
    probabilities = []
    for index, (lengthscale, variance) in enumerate(zip(*particle_hyperparameters(result))):
        gram = squared_exponential_gram(X, X, lengthscale, variance) + 1e-6 * np.eye(NUM_POINTS)
        cross = squared_exponential_gram(X, X_new, lengthscale, variance)
        latents = np.asarray(result.particles.latents[index])
        mean = cross.T @ np.linalg.solve(gram, np.linalg.cholesky(gram) @ latents)
        latent_variance = variance - np.einsum("nq,nq->q", cross, np.linalg.solve(gram, cross))
        np.testing.assert_allclose(latent_means[index], mean, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(latent_variances[index], latent_variance, rtol=1e-7, atol=1e-9)
        probabilities.append(stats.norm.cdf(mean / np.sqrt(1 + latent_variance)))
    probability = np.mean(probabilities, axis=0)
    predicted_mean, predicted_variance = result.predict(X_new)
    np.testing.assert_allclose(predicted_mean, probability, rtol=1e-8)
    np.testing.assert_allclose(predicted_variance, probability * (1 - probability), rtol=1e-8)
    np.testing.assert_allclose(result.log_predictive_density(X_new, np.ones(3)), np.log(probability), rtol=1e-8)
    samples = np.asarray(result.sample(getkey(), X_new, 5000)).reshape(-1, 3)
    standard_error = np.sqrt(probability * (1 - probability) / samples.shape[0])
    assert np.all(np.abs(samples.mean(axis=0) - probability) < 4 * standard_error)


def test_one_particle_ascends_to_the_map_hyperparameters(data, getkey):
    X, y = data
    model = steingp.make_model(X, y, kernel=SquaredExponential(), likelihood=Gaussian())
    schedule = optax.exponential_decay(0.1, transition_steps=100, decay_rate=0.5)
    algorithm = steingp.SteinGP(
        model, optimizer=optax.adam(schedule), initialization="around_initial", initial_scale=0.0
    )
    state, _ = gpcompose.run(algorithm, algorithm.init(1, key=getkey()), getkey(), 1500)
    kernel, likelihood = algorithm.result(state, None).components

    def log_marginal_likelihood(params, args):
        prior_kernel, gaussian = params
        posterior = gpcompose.gp.condition(prior_kernel, gpcompose.means.Zero(), X, y, gaussian.variance)
        return gpcompose.gp.log_marginal_likelihood(posterior)

    map_fit = gpcompose.maximize(log_marginal_likelihood, (model.kernel, model.likelihood))
    map_kernel, map_likelihood = map_fit.params
    for fitted, reference in [
        (kernel.lengthscale, map_kernel.lengthscale),
        (kernel.variance, map_kernel.variance),
        (likelihood.variance, map_likelihood.variance),
    ]:
        np.testing.assert_allclose(fitted.value[0], reference.value, rtol=1e-4)


def test_step_compiles_once_and_vmap_over_seeds_equals_a_python_loop(sparse_classifier):
    algorithm = steingp.SteinGP(sparse_classifier, batch_size=4)
    compiled_step = eqx.filter_jit(eqx.debug.assert_max_traces(algorithm.step, max_traces=1))

    def two_steps(key, step):
        initial_key, first_key, second_key = jax.random.split(key, 3)
        state, _ = step(algorithm.init(3, key=initial_key), first_key)
        state, info = step(state, second_key)
        return ravel_pytree(state.particles)[0], info.squared_kernel_stein_discrepancy, state.num_steps

    keys = jax.random.split(jax.random.key(7), 2)
    batched_particles, batched_discrepancy, _ = eqx.filter_jit(jax.vmap(lambda key: two_steps(key, algorithm.step)))(
        keys
    )
    for index, key in enumerate(keys):  # four calls of the compiled step, one trace
        particles, discrepancy, num_steps = two_steps(key, compiled_step)
        assert int(num_steps) == 2
        np.testing.assert_allclose(batched_particles[index], particles, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(batched_discrepancy[index], discrepancy, rtol=1e-10)


@pytest.mark.parametrize("kind", ["conjugate", "whitened", "sparse"])
def test_log_density_gradient_matches_finite_differences(kind, data, sparse_classifier, getkey):
    X, y = data
    if kind == "sparse":
        model = sparse_classifier
    elif kind == "whitened":
        # a short lengthscale keeps K + 10⁻⁶ I well conditioned, so that differences are accurate
        kernel = SquaredExponential(lengthscale=0.3)
        model = steingp.make_model(X, (y > 0).astype(np.float64), kernel=kernel, likelihood=Bernoulli())
    else:
        model = steingp.make_model(X, y, kernel=SquaredExponential(), likelihood=Gaussian())
    particle = model.initial_particle(getkey(), jnp.asarray(0.5))
    log_density = eqx.filter_jit(model.log_density)
    np.testing.assert_allclose(
        autodiff_gradient(log_density, particle),
        # a step of 1e-4 keeps round-off of the ill-conditioned whitening map out of the differences
        finite_difference_gradient(log_density, particle, step=1e-4),
        rtol=1e-6,
        atol=1e-7,
    )


def test_float32_smoke_fit(data, getkey):
    X, y = data
    X, y, likelihood = X.astype(np.float32), (y > 0).astype(np.float32), Bernoulli()
    kernel = SquaredExponential(lengthscale=np.float32(1.0), variance=np.float32(1.0))
    result = steingp.fit(X, y, key=getkey(), kernel=kernel, likelihood=likelihood, num_particles=3, num_steps=3)
    mean, variance = result.predict(X[:4])
    assert mean.dtype == jnp.float32 and variance.dtype == jnp.float32
    assert ravel_pytree(result.particles)[0].dtype == jnp.float32
    assert bool(jnp.all(result.info.finite)) and bool(jnp.all(jnp.isfinite(variance)))


def test_prior_initialization_draws_the_hyperparameters_from_their_priors(data, getkey):
    X, y = data
    model = steingp.make_model(X, y, kernel=SquaredExponential(), likelihood=Gaussian())
    result = steingp.SteinGP(model).result(steingp.SteinGP(model).init(2000, key=getkey()), None)
    gamma = stats.gamma(a=1.0, scale=2.0)  # SteinGP's default prior, mean 2, sd 2
    for values in particle_hyperparameters(result):
        assert abs(values.mean() - 2.0) < 4 * 2.0 / np.sqrt(values.size)
        assert stats.kstest(values - 1e-6, gamma.cdf).pvalue > 1e-3
    # the initial values (all 1) are not the centre: the draws reach far beyond u₀ ± 3
    assert np.max(particle_hyperparameters(result)[0]) > 10.0


def test_prior_initialization_draws_latents_from_their_prior(sparse_classifier, getkey):
    state = steingp.SteinGP(sparse_classifier).init(2000, key=getkey())
    latents = np.asarray(state.particles.latents)
    assert latents.shape == (2000, 5)
    assert stats.kstest(latents.ravel(), stats.norm.cdf).pvalue > 1e-3


def old_initial_particles(model, key, num_particles, scale):
    """The initialization before `initialization` existed (u₀ + scale · ε, ν ~ N(0, I)), with
    its key splits, written out."""
    hyperparameters, _ = gpcompose.parameters.partition((model.kernel, model.likelihood))
    leaves, treedef = jax.tree.flatten(hyperparameters)
    particles = []
    for particle_key in jax.random.split(key, num_particles):
        hyper_key, latent_key = jax.random.split(particle_key)
        leaf_keys = jax.random.split(hyper_key, len(leaves))
        moved = [leaf + scale * jax.random.normal(k, leaf.shape, leaf.dtype) for leaf, k in zip(leaves, leaf_keys)]
        latents = jax.random.normal(latent_key, (model.num_latents,), model.X.dtype)
        particles.append(ravel_pytree((jax.tree.unflatten(treedef, moved), latents))[0])
    return np.stack(particles)


def test_around_initial_reproduces_the_previous_initialization(sparse_classifier, getkey):
    key = getkey()
    algorithm = steingp.SteinGP(sparse_classifier, initialization="around_initial", initial_scale=0.7)
    state = algorithm.init(3, key=key)
    particles = np.stack([ravel_pytree(jax.tree.map(lambda x: x[j], state.particles))[0] for j in range(3)])
    np.testing.assert_array_equal(particles, old_initial_particles(sparse_classifier, key, 3, 0.7))


@pytest.mark.parametrize("initialization", ["prior", "around_initial"])
def test_fit_passes_the_initialization_through(data, getkey, initialization):
    X, y = data
    key = getkey()
    result = steingp.fit(
        X, y, key=key, kernel=SquaredExponential(), likelihood=Gaussian(), num_steps=0, initialization=initialization
    )
    model = steingp.make_model(X, y, kernel=SquaredExponential(), likelihood=Gaussian())
    state = steingp.SteinGP(model, initialization=initialization).init(20, key=jax.random.split(key)[0])
    np.testing.assert_array_equal(ravel_pytree(result.particles)[0], ravel_pytree(state.particles)[0])


def test_bad_inputs_raise_clear_errors(data):
    X, y = data
    kernel, gaussian = SquaredExponential(), Gaussian()
    with pytest.raises(ValueError, match="`y` must have shape"):
        steingp.make_model(X, y[:-1], kernel=kernel, likelihood=gaussian)
    with pytest.raises(ValueError, match="`X` contains NaN"):
        steingp.make_model(np.where(X > 1, np.nan, X), y, kernel=kernel, likelihood=gaussian)
    with pytest.raises(ValueError, match="labels in"):
        steingp.make_model(X, y, kernel=kernel, likelihood=Bernoulli())
    with pytest.raises(ValueError, match="inducing_points"):
        steingp.make_model(X, y, kernel=kernel, likelihood=gaussian, inducing_points=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="`kernel`"):
        steingp.make_model(X, y, kernel=gaussian, likelihood=gaussian)
    conjugate = steingp.make_model(X, y, kernel=kernel, likelihood=gaussian)
    with pytest.raises(ValueError, match="batch_size"):
        steingp.SteinGP(conjugate, batch_size=4)
    sparse = steingp.make_model(X, y, kernel=kernel, likelihood=gaussian, inducing_points=X[:3])
    with pytest.raises(ValueError, match="batch_size"):
        steingp.SteinGP(sparse, batch_size=NUM_POINTS + 1)
    with pytest.raises(ValueError, match="initialization"):
        steingp.SteinGP(sparse, initialization="uniform")
    with pytest.raises(ValueError, match="num_particles"):
        steingp.SteinGP(sparse).init(0, key=jax.random.key(0))
    with pytest.raises(ValueError, match="shape"):
        steingp.make_model(
            X, y, kernel=SquaredExponential(lengthscale=Positive(1.0, prior=Gamma(-1.0, 2.0))), likelihood=gaussian
        )


def test_a_second_fit_on_new_data_of_the_same_size_compiles_nothing(data, backend_compilations):
    """`steingp.fit` again with another key and other targets of the same shape: no program
    is compiled again (the default optimizer is one object, not a new `optax.adam` whose
    functions a jitted call would hash anew)."""
    X, y = data
    settings = dict(kernel=SquaredExponential(), likelihood=Gaussian(), num_particles=4, num_steps=5)
    steingp.fit(X, y, key=jax.random.key(0), **settings)
    before = len(backend_compilations)
    steingp.fit(X, y + 0.5, key=jax.random.key(1), **settings)
    assert len(backend_compilations) == before
