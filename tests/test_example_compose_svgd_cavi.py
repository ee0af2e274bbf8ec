"""examples/compose_svgd_cavi.py (issue 9, example 3): a hand-written loop of CAVI steps inside
SVGD particles over kernel hyperparameters. With one particle it is CAVI with a gradient step
on the hyperparameters (gpcompose's own `CAVI(..., optimizer=...)`); with several, every
particle's ELBO improves and the particles stay apart."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import gpcompose
from gpcompose import aaci, likelihoods

from .examples_loader import load_example

example = load_example("compose_svgd_cavi")


def test_one_particle_is_cavi_with_a_gradient_step_on_the_hyperparameters():
    """J = 1: κ(θ, θ) = 1 and the repulsion vanishes, so the SVGD direction is the score
    ∇_θ(L_aug + log p(θ)) at the new q, and the loop is AACI Alg. 1 with an sgd step on the
    hyperparameters, which `CAVI(kernel, likelihood, optimizer=optax.sgd(ε))` computes by its own
    code path (`partition` of the model, not `flatten`). The particle starts at ℓ = 0.6, σ² = 1,
    where K's condition number is 1e8, so rounding of the two code paths may grow to ≈ 1e-8 in the
    whitened q (measured 2e-10 after 8 steps) but stays ≈ 1e-11 in θ and in the ELBO. A wrong
    score (a missing prior, a sign) moves θ by ε·|∇| ≈ 1e-2 per step."""
    X, y = example.make_data(jax.random.key(0), 16)
    optimizer = optax.sgd(0.5 / 16)
    drawn = example.init(jax.random.key(1), X, 1, optimizer)
    particles = jnp.array([[np.log(0.6), 0.0]])
    initial = example.MixedState(jax.vmap(example.with_particle)(drawn.cavi, particles), optimizer.init(particles))
    final, infos = example.run_loop(initial, jax.random.key(2), X, y, 8, optimizer)

    start = jax.tree.map(lambda leaf: leaf[0], initial.cavi)
    reference = aaci.CAVI(start.kernel, likelihoods.Logistic(), optimizer=optimizer)
    expected, expected_infos = gpcompose.run(reference, reference.init(X), jax.random.key(2), 8, X, y)
    mixed = jax.tree.map(lambda leaf: leaf[0], final.cavi)
    assert float(jnp.max(jnp.abs(example.particle_of(mixed) - particles[0]))) > 0.05  # the hyperparameters moved
    np.testing.assert_allclose(example.particle_of(mixed), example.particle_of(expected), rtol=1e-9)
    for a, b in zip(jax.tree.leaves(mixed.variational), jax.tree.leaves(expected.variational)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-8)
    np.testing.assert_allclose(infos.elbo[:, 0], expected_infos.elbo, rtol=1e-9)


def test_every_particle_improves_and_the_particles_stay_apart(tmp_path):
    outcome = example.run(jax.random.key(3), out_dir=tmp_path, smoke=True)
    assert (tmp_path / "compose_svgd_cavi.png").is_file()
    elbo = outcome["infos"].elbo
    assert np.all(np.isfinite(elbo)) and np.all(np.isfinite(outcome["infos"].squared_kernel_stein_discrepancy))
    assert np.all(elbo[-1] > elbo[0])
    particles = jax.vmap(example.particle_of)(outcome["final"].cavi)
    distances = jnp.linalg.norm(particles[:, None, :] - particles[None, :, :], axis=-1)
    assert float(jnp.min(distances + jnp.eye(particles.shape[0]))) > 1e-2
