"""Why the square-root GP (SRGP) accepts fewer samples than the GP on Hartmann-3 at η = 0.5d
(`bes_acceptance.py`, the minimum coordinate): the probability, under each fitted predictive,
of f(x) < f⁻ − 2η₋ at uniform points of the unit cube.

Same protocol as `bes_acceptance.py` (N_train = 5d uniform points, −f standardised, exact
f⁺ and f⁻, c = f⁺ + 2η₊, `bo.fit_surrogate`). For the GP, P(f < t) = Φ((t − μ)/σ); for the
SRGP, f = c − ½h² with h ~ N(μ_h, σ_h²), so P(f < t) = P(|h| > √(2(c − t))). Printed per
quantity: the median and 10–90 % range over seeds of the predictive sd (GP; SRGP moment-matched)
and of the largest tail probability over the points.

Usage:
    python benchmarks/bes_lower_tail.py --function hartmann3 --seeds 30
"""

import jax

jax.config.update("jax_enable_x64", True)

import argparse  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _bounded_samples import standardised_training_set  # noqa: E402
from jax.scipy.stats import norm  # noqa: E402

from gpcompose import bo, bounded, gp  # noqa: E402
from gpcompose.problems import optimization_functions  # noqa: E402


def lower_tail(key, function, eta_per_dimension, num_points):
    """(GP sd, SRGP sd, largest GP tail probability, largest SRGP tail probability) for one seed,
    the sds as medians over `num_points` uniform points."""
    dimension = function.dimension
    eta = eta_per_dimension * dimension
    data_key, points_key = jax.random.split(key)
    X, y, f_plus, f_minus, _ = standardised_training_set(data_key, function, 5 * dimension)
    offset = bounded.square_root_offset(bounded.Bounds(f_plus, f_minus, eta, eta))
    used = jnp.ones(X.shape[0], bool)
    points = jax.random.uniform(points_key, (num_points, dimension))
    threshold = f_minus - 2.0 * eta

    gp_mean, gp_variance = bo.fit_surrogate(X, y, used, None, 100).predict(points)
    gp_tail = norm.cdf((threshold - gp_mean) / jnp.sqrt(gp_variance))

    square_root = bo.fit_surrogate(X, y, used, offset, 100).posterior
    root_mean, root_variance = gp.predict(square_root.root, points)
    _, matched_variance = bounded.predict_moment_matched(square_root, points)
    root_threshold = jnp.sqrt(2.0 * (offset - threshold))
    root_sd = jnp.sqrt(root_variance)
    root_tail = norm.sf((root_threshold - root_mean) / root_sd) + norm.cdf((-root_threshold - root_mean) / root_sd)
    return jnp.stack(
        [
            jnp.median(jnp.sqrt(gp_variance)),
            jnp.median(jnp.sqrt(matched_variance)),
            jnp.max(gp_tail),
            jnp.max(root_tail),
        ]
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--function", default="hartmann3")
    parser.add_argument("--eta-per-dimension", type=float, default=0.5)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--points", type=int, default=4000)
    args = parser.parse_args()
    function = optimization_functions()[args.function]
    keys = jax.random.split(jax.random.key(7), args.seeds)
    one = jax.jit(jax.vmap(lambda key: lower_tail(key, function, args.eta_per_dimension, args.points)))
    rows = np.asarray(one(keys))
    names = ("GP sd (median over points)", "SRGP sd, moment-matched", "max P(f < f⁻ − 2η₋), GP", "same, SRGP")
    print(f"{args.function}, η = {args.eta_per_dimension}d, {args.seeds} seeds: median [10 %, 90 %] over seeds")
    for name, column in zip(names, rows.T):
        print(f"  {name}: {np.median(column):.3g} [{np.quantile(column, 0.1):.3g}, {np.quantile(column, 0.9):.3g}]")


if __name__ == "__main__":
    main()
