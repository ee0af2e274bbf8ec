"""The sampling step shared by the bounded-sampling benchmarks (`bes_acceptance.py`,
`bes_sampling.py`): an ML-II GP (or square-root GP) on points of the unit cube, its pathwise
samples and their extrema on the cube."""

import jax.numpy as jnp

from gpcompose import bo, sampling


def samples_and_extrema(sample_key, search_key, X, y, offset, settings, root_centre="data"):
    """Fit `bo.fit_surrogate` to (X, y) in [0, 1]^d (the SRGP with c = `offset` and prior centre
    `root_centre`, or the GP if None), draw `num_samples` pathwise samples with `num_features` random features and find
    their maxima and minima by `sampling.sample_extrema` on the unit cube.

    `settings` = (num_samples, num_features, num_candidates, num_starts, num_steps).
    **Returns:** (samples, extrema).
    """
    num_samples, num_features, num_candidates, num_starts, num_steps = settings
    surrogate = bo.fit_surrogate(X, y, jnp.ones(X.shape[0], bool), offset, 100, root_centre)
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
