"""Ground-truth tools shared by the `reference_*.py` scripts: NUTS on an unconstrained density,
and log Z by importance sampling with a multivariate t proposal fitted to the NUTS samples.

- `run_nuts`: numpyro NUTS with a dense mass matrix on a `potential` U(z) = −log p̃(z), several
  chains run one after another; split R-hat and effective sample sizes from
  `numpyro.diagnostics`.
- `importance_sampling`: proposal q = t_ν(m, S) with m, S the mean and covariance of the samples
  (so q's covariance is ν/(ν − 2) S), log Ẑ = log (1/N) Σₙ p̃(zₙ)/q(zₙ). The Monte Carlo standard
  error is the delta-method one, SE(log Ẑ) ≈ sd(w)/(mean(w) √N); the spread of the estimates of
  20 disjoint batches, sd/√20, is reported next to it.
"""

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special
import scipy.stats
from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
from numpyro.infer import MCMC, NUTS

DEGREES_OF_FREEDOM = 5.0
NUM_BATCHES = 20


def run_nuts(potential, key, initial, num_warmup, num_samples, target_accept_probability=0.9):
    """NUTS chains from the rows of `initial` (num_chains, D); samples have shape (chains, draws, D)."""
    kernel = NUTS(potential_fn=jax.jit(potential), dense_mass=True, target_accept_prob=target_accept_probability)
    mcmc = MCMC(
        kernel,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=initial.shape[0],
        chain_method="sequential",
        progress_bar=False,
    )
    mcmc.run(key, init_params=jnp.asarray(initial), extra_fields=("diverging", "num_steps"))
    samples = np.asarray(mcmc.get_samples(group_by_chain=True))
    extra = mcmc.get_extra_fields(group_by_chain=True)
    return {
        "samples": samples,
        "split_r_hat": split_gelman_rubin(samples),
        "effective_sample_size": effective_sample_size(samples),
        "divergences": int(np.sum(extra["diverging"])),
        "mean_leapfrog_steps": float(np.mean(extra["num_steps"])),
        "num_chains": int(initial.shape[0]),
        "num_warmup": int(num_warmup),
        "num_samples_per_chain": int(num_samples),
        "dense_mass": True,
        "target_accept_prob": target_accept_probability,
    }


def importance_sampling(log_target_batch, samples, to_original, rng, num_proposals, batch_size):
    """log Z of exp(`log_target_batch`) (a function of a (B, D) batch) by importance sampling
    with a t proposal fitted to `samples` (N, D); also the weighted mean of `to_original(z)`."""
    proposal = scipy.stats.multivariate_t(
        loc=np.mean(samples, axis=0), shape=np.cov(samples, rowvar=False), df=DEGREES_OF_FREEDOM
    )
    log_weights, batch_means = [], []
    for _ in range(num_proposals // batch_size):
        z = proposal.rvs(size=batch_size, random_state=rng)
        log_weight = np.asarray(log_target_batch(jnp.asarray(z))) - proposal.logpdf(z)
        log_weights.append(log_weight)
        batch_weights = np.exp(log_weight - scipy.special.logsumexp(log_weight))
        batch_means.append(batch_weights @ np.asarray(to_original(z)))
    log_weights = np.concatenate(log_weights)
    num = log_weights.shape[0]
    log_z = scipy.special.logsumexp(log_weights) - np.log(num)
    weights = np.exp(log_weights - np.max(log_weights))
    # The weighted mean: each batch's self-normalised mean, weighted by that batch's total weight.
    batch_totals = np.array([np.sum(batch) for batch in np.split(weights, num // batch_size)])
    mean = (batch_totals / np.sum(batch_totals)) @ np.stack(batch_means)
    batch_estimates = [
        scipy.special.logsumexp(batch) - np.log(batch.shape[0]) for batch in np.array_split(log_weights, NUM_BATCHES)
    ]
    return {
        "log_normaliser": float(log_z),
        "standard_error_delta_method": float(np.std(weights) / (np.mean(weights) * np.sqrt(num))),
        "standard_error_batches": float(np.std(batch_estimates, ddof=1) / np.sqrt(NUM_BATCHES)),
        "num_proposals": int(num),
        "effective_sample_size": float(np.sum(weights) ** 2 / np.sum(weights**2)),
        "max_normalised_weight": float(np.max(weights) / np.sum(weights)),
        "finite_fraction": float(np.mean(np.isfinite(log_weights))),
        "proposal_degrees_of_freedom": DEGREES_OF_FREEDOM,
        "weighted_mean": mean,
    }


class StudentTMixture:
    """q(x) = Σ_k π_k t_ν(x; μ_k, S_k), a proposal for `adaptive_importance_sampling`."""

    def __init__(self, weights, locations, shapes, degrees_of_freedom=DEGREES_OF_FREEDOM):
        self.weights = np.asarray(weights) / np.sum(weights)
        self.components = [
            scipy.stats.multivariate_t(loc=location, shape=shape, df=degrees_of_freedom)
            for location, shape in zip(locations, shapes)
        ]

    def rvs(self, size, rng):
        counts = rng.multinomial(size, self.weights)
        draws = [
            component.rvs(size=count, random_state=rng).reshape(count, -1)
            for component, count in zip(self.components, counts)
            if count > 0
        ]
        return rng.permutation(np.concatenate(draws))

    def logpdf(self, points):
        terms = [np.log(weight) + component.logpdf(points) for weight, component in zip(self.weights, self.components)]
        return scipy.special.logsumexp(np.stack(terms), axis=0)


def fit_gaussian_mixture(points, weights, num_components, rng, num_iterations=200):
    """Weighted EM for a Gaussian mixture: (mixing weights, means, covariances). Each covariance
    gets 1e-6 of the overall covariance's diagonal added, so that no component collapses."""
    weights = weights / np.sum(weights)
    overall_mean = weights @ points
    overall_covariance = ((points - overall_mean) * weights[:, None]).T @ (points - overall_mean)
    floor = 1e-6 * np.diag(np.diag(overall_covariance))
    means = points[rng.choice(points.shape[0], num_components, replace=False, p=weights)]
    covariances = np.stack([overall_covariance] * num_components)
    mixing = np.full(num_components, 1.0 / num_components)
    for _ in range(num_iterations):
        log_responsibility = np.stack(
            [
                np.log(mixing[k]) + scipy.stats.multivariate_normal.logpdf(points, means[k], covariances[k])
                for k in range(num_components)
            ],
            axis=1,
        )
        responsibility = np.exp(log_responsibility - scipy.special.logsumexp(log_responsibility, axis=1)[:, None])
        mass = weights[:, None] * responsibility
        totals = np.sum(mass, axis=0)
        mixing = totals / np.sum(totals)
        means = (mass.T @ points) / totals[:, None]
        for k in range(num_components):
            centred = points - means[k]
            covariances[k] = (centred * mass[:, k : k + 1]).T @ centred / totals[k] + floor
    return mixing, means, covariances


def adaptive_importance_sampling(
    log_target_batch,
    initial_proposal,
    rng,
    num_rounds,
    num_per_round,
    num_final,
    num_components,
    defensive_weight=0.1,
    batch_size=10_000,
):
    """Population Monte Carlo: each round fits a Gaussian mixture (weighted EM) to the weighted
    draws of all rounds so far and proposes from the t mixture with those means and covariances,
    mixed with `initial_proposal` at weight `defensive_weight` (so the weights stay bounded where
    the fit misses mass). log Z and the moments come from the `num_final` draws of the last
    proposal alone, so that they are plain importance-sampling estimates."""

    def draw(proposal, num):
        points = proposal.rvs(num, rng)
        log_target = np.concatenate(
            [
                np.asarray(log_target_batch(jnp.asarray(chunk)))
                for chunk in np.array_split(points, max(1, num // batch_size))
            ]
        )
        return points, log_target - proposal.logpdf(points)

    proposal = initial_proposal
    pool_points, pool_log_weights, history = [], [], []
    for _ in range(num_rounds):
        points, log_weights = draw(proposal, num_per_round)
        pool_points.append(points)
        pool_log_weights.append(log_weights)
        all_log_weights = np.concatenate(pool_log_weights)
        weights = np.exp(all_log_weights - np.max(all_log_weights))
        history.append(
            float(
                np.sum(np.exp(log_weights - np.max(log_weights))) ** 2
                / np.sum(np.exp(2 * (log_weights - np.max(log_weights))))
            )
        )
        mixing, means, covariances = fit_gaussian_mixture(np.concatenate(pool_points), weights, num_components, rng)
        fitted = StudentTMixture(mixing, means, covariances)
        proposal = _DefensiveMixture(fitted, initial_proposal, defensive_weight)
    points, log_weights = draw(proposal, num_final)
    num = points.shape[0]
    log_z = scipy.special.logsumexp(log_weights) - np.log(num)
    weights = np.exp(log_weights - np.max(log_weights))
    normalised = weights / np.sum(weights)
    mean = normalised @ points
    covariance = ((points - mean) * normalised[:, None]).T @ (points - mean)
    batch_estimates = [
        scipy.special.logsumexp(batch) - np.log(batch.shape[0]) for batch in np.array_split(log_weights, NUM_BATCHES)
    ]
    summary = {
        "log_normaliser": float(log_z),
        "standard_error_delta_method": float(np.std(weights) / (np.mean(weights) * np.sqrt(num))),
        "standard_error_batches": float(np.std(batch_estimates, ddof=1) / np.sqrt(NUM_BATCHES)),
        "num_proposals": int(num),
        "effective_sample_size": float(1.0 / np.sum(normalised**2)),
        "max_normalised_weight": float(np.max(normalised)),
        "finite_fraction": float(np.mean(np.isfinite(log_weights))),
        "adaptation_effective_sample_sizes": history,
        "num_rounds": num_rounds,
        "num_per_round": num_per_round,
        "num_components": num_components,
        "defensive_weight": defensive_weight,
        "proposal_degrees_of_freedom": DEGREES_OF_FREEDOM,
    }
    return points, normalised, mean, covariance, summary


class _DefensiveMixture:
    """(1 − ε) q_fitted + ε q_initial."""

    def __init__(self, fitted, initial, defensive_weight):
        self.fitted, self.initial, self.defensive_weight = fitted, initial, defensive_weight

    def rvs(self, size, rng):
        num_initial = rng.binomial(size, self.defensive_weight)
        draws = [self.fitted.rvs(size - num_initial, rng)]
        if num_initial > 0:
            draws.append(self.initial.rvs(num_initial, rng))
        return rng.permutation(np.concatenate(draws))

    def logpdf(self, points):
        return np.logaddexp(
            np.log1p(-self.defensive_weight) + self.fitted.logpdf(points),
            np.log(self.defensive_weight) + self.initial.logpdf(points),
        )
