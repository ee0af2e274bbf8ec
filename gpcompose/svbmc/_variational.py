"""The SVBMC variational posterior: initialisation, ELBO maximisation by Adam, and the
build-up that adds components until the ELBO stops improving (SVBMC §3.3, §A.5)."""

import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from ..mixtures import VBMCMixture
from ..quadrature import elbo
from ..sparse import SparsePosterior


def initial_mixture(
    X: Float[Array, "C D"],
    log_density: Float[Array, " C"],
    mask: Bool[Array, " C"],
    threshold: float,
    max_components: int,
) -> VBMCMixture:
    """One component at the mean and per-coordinate spread of the points whose surrogate
    log density is within `threshold` of the highest (other slots inactive)."""
    top = jnp.max(jnp.where(mask, log_density, -jnp.inf))
    high = (mask & (log_density >= top - threshold)).astype(X.dtype)
    count = jnp.sum(high)
    centre = high @ X / count
    variance = high @ (X - centre[None, :]) ** 2 / count
    spread = jnp.sqrt(jnp.maximum(variance, 1e-6 * jnp.max(variance) + 1e-12))
    dimension = X.shape[1]
    return VBMCMixture(
        logits=jnp.zeros((max_components,), X.dtype),
        means=jnp.zeros((max_components, dimension), X.dtype).at[0].set(centre),
        log_sigma=jnp.zeros((max_components,), X.dtype),
        log_lambda=jnp.log(spread),
        mask=jnp.zeros((max_components,), bool).at[0].set(True),
    )


def cosine_schedule(learning_rate: float, num_steps: int, final_fraction: float = 0.1):
    """η_t = η (f + (1 − f)(1 + cos(π t/T))/2), cast explicitly (strict dtype promotion)."""

    def schedule(count):
        progress = jnp.minimum(count.astype(jnp.result_type(float)) / max(num_steps, 1), 1.0)
        return learning_rate * (final_fraction + (1 - final_fraction) * 0.5 * (1 + jnp.cos(jnp.pi * progress)))

    return schedule


def optimise_mixture(
    posterior: SparsePosterior,
    mixture: VBMCMixture,
    key: PRNGKeyArray,
    *,
    width: Float[Array, " D"],
    num_steps: int,
    learning_rate: float,
    num_entropy_samples: int,
) -> VBMCMixture:
    """Stochastic gradient ascent (Adam, cosine-decayed step) on the surrogate ELBO
    E_f[∫ q f] + H[q] (sparse BQ + reparameterised entropy, fresh samples each step).

    Means are optimised in units of `width` so that one learning rate fits any scale;
    scales are optimised on the log scale and weights as logits. Non-finite gradients
    are zeroed so that a bad step cannot corrupt the mixture.
    """
    mask = mixture.mask

    def build(parameters):
        logits, scaled_means, log_sigma, log_lambda = parameters
        return VBMCMixture(logits, scaled_means * width[None, :], log_sigma, log_lambda, mask)

    def loss(parameters, step_key):
        return -elbo(posterior, build(parameters), step_key, num_entropy_samples)[0]

    optimiser = optax.adam(cosine_schedule(learning_rate, num_steps))
    parameters = (mixture.logits, mixture.means / width[None, :], mixture.log_sigma, mixture.log_lambda)

    def step(carry, step_key):
        parameters, optimiser_state = carry
        gradient = jax.grad(loss)(parameters, step_key)
        gradient = jax.tree_util.tree_map(lambda g: jnp.where(jnp.isfinite(g), g, 0.0), gradient)
        with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 step counts and floats
            updates, optimiser_state = optimiser.update(gradient, optimiser_state)
        return (optax.apply_updates(parameters, updates), optimiser_state), None

    keys = jax.random.split(key, num_steps)
    (parameters, _), _ = jax.lax.scan(step, (parameters, optimiser.init(parameters)), keys)
    return build(parameters)


def add_components(
    mixture: VBMCMixture,
    count: Array,
    X: Float[Array, "C D"],
    log_density: Float[Array, " C"],
    eligible: Bool[Array, " C"],
) -> VBMCMixture:
    """Add `count` components, one at a time, each at the eligible point where the
    surrogate most exceeds the mixture (argmax f̄(x) − log q(x)), with the mean scale
    of the current components and weight 1/(K + 1) [ours; the document does not say
    where new components go]. Stops early when the mixture has no free slot."""

    def add_one(_, current):
        gap = jnp.where(eligible, log_density - current.log_prob(X), -jnp.inf)
        best = jnp.argmax(gap)
        active = current.mask.astype(X.dtype)
        sigma = jnp.exp(active @ current.log_sigma / jnp.sum(active))
        weight = 1.0 / (jnp.sum(active) + 1.0)
        has_room = ~jnp.all(current.mask) & jnp.isfinite(gap[best])
        return jax.lax.cond(has_room, lambda m: m.add_component(weight, X[best], sigma), lambda m: m, current)

    return jax.lax.fori_loop(0, count, add_one, mixture)


def stage_sizes(max_components: int) -> list[int]:
    """Components added per build-up stage: K doubles (1, 2, 4, …) up to K_max."""
    sizes, total = [], 1
    while total < max_components:
        added = min(total, max_components - total)
        sizes.append(added)
        total += added
    return sizes


def build_up(
    posterior: SparsePosterior,
    mixture: VBMCMixture,
    key: PRNGKeyArray,
    X: Float[Array, "C D"],
    log_density: Float[Array, " C"],
    eligible: Bool[Array, " C"],
    *,
    width: Float[Array, " D"],
    num_steps: int,
    learning_rate: float,
    num_entropy_samples: int,
    comparison_samples: int,
    tolerance: float,
) -> VBMCMixture:
    """Grow and optimise the mixture until the ELBO gain of a stage is below `tolerance`
    or K = K_max (SVBMC §3.3: "until the change in KL falls below a threshold"; ΔKL =
    −ΔELBO for a fixed target). K doubles per stage; a stage that does not improve the
    ELBO (compared with common random numbers) is discarded."""
    optimise_key, compare_key, stages_key = jax.random.split(key, 3)

    def optimise(current, step_key):
        return optimise_mixture(
            posterior,
            current,
            step_key,
            width=width,
            num_steps=num_steps,
            learning_rate=learning_rate,
            num_entropy_samples=num_entropy_samples,
        )

    def score(current):
        return elbo(posterior, current, compare_key, comparison_samples)[0]

    mixture = optimise(mixture, optimise_key)
    sizes = jnp.asarray(stage_sizes(mixture.num_components), jnp.int32)

    def stage(carry, inputs):
        current, current_score, done = carry
        count, stage_key = inputs

        def grow(current):
            grown = optimise(add_components(current, count, X, log_density, eligible), stage_key)
            return grown, score(grown)

        grown, grown_score = jax.lax.cond(done, lambda m: (m, current_score), grow, current)
        accept = ~done & (grown_score > current_score)
        current = jax.tree_util.tree_map(lambda new, old: jnp.where(accept, new, old), grown, current)
        done = done | (grown_score - current_score < tolerance)
        return (current, jnp.where(accept, grown_score, current_score), done), None

    if sizes.shape[0] == 0:
        return mixture
    stage_keys = jax.random.split(stages_key, sizes.shape[0])
    (mixture, _, _), _ = jax.lax.scan(stage, (mixture, score(mixture), jnp.asarray(False)), (sizes, stage_keys))
    return mixture
