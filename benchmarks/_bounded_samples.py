"""What the bounded-sampling benchmarks (`bes_acceptance.py`, `bes_sampling.py`,
`bes_lower_tail.py`) share: the standardised training set of a test function on the unit
cube, and the sampling step (an ML-II GP or square-root GP on it, its pathwise samples and
their extrema on the cube)."""

import jax
import jax.numpy as jnp

from gpcompose import bo, sampling


def standardised_training_set(key, function, num_train, negated=True):
    """`num_train` uniform points X of [0, 1]^d and the sampled function g at them, standardised by
    its mean and sd there. The functions are minimisation benchmarks and the document maximises,
    so g = −f by default (f⁺ = −min f, f⁻ = −max f); `negated=False` samples f itself (f⁺ = max f,
    f⁻ = min f).

    **Returns:** (X, y, f⁺, f⁻, values), the bounds exact and in the units of y, and `values`
    mapping points of the unit cube to g there in the same units.
    """
    lower, upper = jnp.asarray(function.lower), jnp.asarray(function.upper)
    sign = -1.0 if negated else 1.0

    def raw(unit_points):
        return sign * jax.vmap(function)(lower[None, :] + (upper - lower)[None, :] * unit_points)

    X = jax.random.uniform(key, (num_train, lower.shape[0]))
    y = raw(X)
    location, scale = jnp.mean(y), jnp.std(y)
    highest, lowest = (-function.minimum, -function.maximum) if negated else (function.maximum, function.minimum)

    def values(unit_points):
        return (raw(unit_points) - location) / scale

    return X, (y - location) / scale, (highest - location) / scale, (lowest - location) / scale, values


def samples_and_extrema(sample_key, search_key, X, y, offset, settings, root_center="data"):
    """Fit `bo.fit_surrogate` to (X, y) in [0, 1]^d (the SRGP with c = `offset` and prior centre
    `root_center`, or the GP if None), draw `num_samples` pathwise samples with `num_features` random features and find
    their maxima and minima by `sampling.sample_extrema` on the unit cube.

    `settings` = (num_samples, num_features, num_candidates, num_starts, num_steps).
    **Returns:** (samples, extrema).
    """
    num_samples, num_features, num_candidates, num_starts, num_steps = settings
    surrogate = bo.fit_surrogate(X, y, jnp.ones(X.shape[0], bool), offset, 100, root_center)
    samples = surrogate.samples(sample_key, num_samples, num_features)
    unit = jnp.zeros(X.shape[1], X.dtype)
    extrema = sampling.sample_extrema(
        search_key,
        samples,
        unit,
        unit + 1.0,
        num_candidates=num_candidates,
        num_starts=num_starts,
        num_steps=num_steps,
    )
    return samples, extrema
