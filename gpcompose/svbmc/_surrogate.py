"""The SVBMC surrogate: a GP with squared-exponential ARD kernel and negative-quadratic
mean on the log density (Li, Clarté & Acerbi 2023, §3.2–3.3), its hyperprior, and its two fits: exact-GP
MAP on a small subset (initialisation) and SGPR MAP with the inducing inputs fixed."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from .. import gp, sparse
from .._maximize import maximize
from .._observations import input_span
from .._select import select_tree
from ..kernels import SquaredExponential
from ..means import NegativeQuadratic
from ..parameters import Interval, Positive, Real, log_prior, partition
from ..priors import LogScale, Normal, StudentT


class Surrogate(eqx.Module):
    """Kernel and mean of the GP model of the log density (noise is known, not fitted)."""

    kernel: SquaredExponential
    mean: NegativeQuadratic

    def coordinate_scales(self) -> "Surrogate":
        """The widths of the hyperprior (`initial_surrogate`) in each unconstrained
        coordinate, shaped like the trainable part of the surrogate: the `coordinate_scales`
        of its MAP fits (`maximize`). The Student-t scales of log ℓ_d and log σ_f², the normal
        scales of m₀ and μ_d, and the Student-t scale of log ω_d for ω_d's coordinate (the
        logit of ω_d / its cap, which moves as log ω_d where ω_d is well below the cap)."""
        trainable, _ = partition(self)
        widths = (  # (the parameter, its prior's width in its unconstrained coordinate)
            (lambda s: s.kernel.lengthscale, lambda prior: prior.base.scale),
            (lambda s: s.kernel.variance, lambda prior: prior.base.scale),
            (lambda s: s.mean.maximum, lambda prior: prior.scale),
            (lambda s: s.mean.location, lambda prior: prior.scale),
            (lambda s: s.mean.scale, lambda prior: prior.base.scale),
        )
        for parameter_of, width_of in widths:
            parameter = parameter_of(self)
            unconstrained = parameter.unconstrained
            width = jnp.broadcast_to(width_of(parameter.prior), unconstrained.shape).astype(unconstrained.dtype)
            trainable = eqx.tree_at(lambda s: parameter_of(s).unconstrained, trainable, width)
        return trainable


def plausible_box(
    X: Float[Array, "C D"], y: Float[Array, " C"], mask: Bool[Array, " C"], threshold: Float[Array, ""]
) -> tuple[Float[Array, " D"], Float[Array, " D"]]:
    """Centre and width of the box spanned by the high-density points, y ≥ max y − threshold.

    It plays the role of VBMC's plausible bounds (PLB, PUB), which a post-process user
    does not give. Falls back to all used points where the high-density points span
    (almost) nothing in a coordinate.
    """
    y_max = jnp.max(jnp.where(mask, y, -jnp.inf))
    high = mask & (y >= y_max - threshold)
    high_lower, high_upper = input_span(X, high)
    all_lower, all_upper = input_span(X, mask)
    narrow = (high_upper - high_lower) <= 1e-6 * (all_upper - all_lower)
    lower = jnp.where(narrow, all_lower, high_lower)
    upper = jnp.where(narrow, all_upper, high_upper)
    width = jnp.maximum(upper - lower, 1e-3)
    return 0.5 * (lower + upper), width


def initial_surrogate(
    center: Float[Array, " D"],
    width: Float[Array, " D"],
    y_max: Float[Array, ""],
    y_scale: Float[Array, ""],
    threshold: Float[Array, ""],
    scale_cap: float = 1.0,
) -> Surrogate:
    """Starting hyperparameters and hyperprior (VBMC-style, Acerbi 2020 Supp. B.1):

    - log ℓ_d ~ Student-t(ν = 3, log(√(D/6)·width_d), ½ log 10³) (PyVBMC's length prior);
    - log σ_f² ~ Student-t(3, 2 log max(y_scale, 1), 2 log 10) [ours: broad];
    - m₀ ~ N(y_max, (2 y_scale + 1)²), μ ~ N(centre, width²) [ours];
    - log ω_d ~ Student-t(3, log ω̂_d, log 10), ω̂ = width/(2√(2θ)) — the scale of a
      Gaussian whose log density drops by θ over half the box — truncated to
      0 < ω_d < `scale_cap`·width_d (an `Interval` parameter) [ours].

    Why the bound: without it the subset MAP can flatten the quadratic in a coordinate
    (ω_d many times the box width, with a large σ_f² and m₀ well below y_max, the kernel
    then carrying the shape); the prior mean no longer falls off away from the data in that
    coordinate, and the mixture then sits where the surrogate has no data, with an ELBO
    above log Z and a large Bayesian-quadrature sd. The bound keeps the mean falling by at
    least ½·(distance/(cap·width))² away from μ.
    """
    dimension = center.shape[0]
    dtype = center.dtype

    def constant(value):  # explicit dtype: no weakly typed leaves (they would retrace on reload)
        return jnp.asarray(value, dtype)

    lengthscale = math.sqrt(dimension / 6.0) * width
    output_variance = jnp.maximum(y_scale, 1.0) ** 2
    scale_bound = scale_cap * width
    quadratic_scale = jnp.minimum(width / (2.0 * jnp.sqrt(2.0 * threshold)), 0.5 * scale_bound)
    degrees = constant(3.0)
    kernel = SquaredExponential(
        lengthscale=Positive(
            lengthscale, prior=LogScale(StudentT(degrees, jnp.log(lengthscale), constant(0.5 * math.log(1e3))))
        ),
        variance=Positive(
            output_variance,
            prior=LogScale(StudentT(degrees, jnp.log(output_variance), constant(2 * math.log(10)))),
        ),
    )
    mean = NegativeQuadratic(
        maximum=Real(y_max, prior=Normal(y_max, 2.0 * y_scale + 1.0)),
        location=Real(center, prior=Normal(center, width)),
        scale=Interval(
            quadratic_scale,
            upper=scale_bound,
            prior=LogScale(StudentT(degrees, jnp.log(quadratic_scale), constant(math.log(10)))),
        ),
    )
    return Surrogate(kernel, mean)


def _exact_objective(surrogate: Surrogate, data) -> Float[Array, ""]:
    X, y, noise_variance, mask = data
    posterior = gp.condition(surrogate.kernel, surrogate.mean, X, y, noise_variance, mask=mask)
    return gp.log_marginal_likelihood(posterior)


def _sparse_objective(surrogate: Surrogate, data) -> Float[Array, ""]:
    X, y, noise_variance, mask, Z, inducing_mask = data
    posterior = sparse.condition(
        surrogate.kernel, surrogate.mean, X, y, noise_variance, Z, mask=mask, inducing_mask=inducing_mask
    )
    return sparse.elbo(posterior)


def _num_used(mask: Bool[Array, " C"], dtype) -> Float[Array, ""]:
    """The number of used points (at least 1): the `scale` of both MAP fits, so that BFGS
    works on a per-point objective and its first step is O(1) (see `maximize`)."""
    return jnp.maximum(jnp.sum(mask.astype(dtype)), 1.0)


def with_lengthscale_scaled(surrogate: Surrogate, factor: float) -> Surrogate:
    """The surrogate with every lengthscale multiplied by `factor` (priors unchanged)."""
    lengthscale = surrogate.kernel.lengthscale
    return eqx.tree_at(
        lambda s: s.kernel.lengthscale.unconstrained, surrogate, lengthscale.inverse(factor * lengthscale.value)
    )


def first_near_best(values: Float[Array, " S"]) -> Int[Array, ""]:
    """Index of the first value within a relative 1e-6 of the largest. Fits that reach the
    same optimum differ there by rounding only, and a tie broken by rounding would make the
    choice (and the fitted values, to BFGS tolerance) differ between batched and single
    programs."""
    top = jnp.max(values)
    return jnp.argmax(values >= top - 1e-6 * jnp.abs(top))


def fit_exact(
    surrogate: Surrogate, X, y, noise_variance, mask, *, max_steps: int, lengthscale_factors: tuple[float, ...]
) -> Surrogate:
    """MAP of log marginal likelihood + log hyperprior of an exact GP (Li, Clarté & Acerbi 2023, eqs. S5–S6,
    with the printed sign of ½ log det corrected); used on the ≤ 300-point subset.

    BFGS starts from `surrogate` with its lengthscales scaled by each of
    `lengthscale_factors` (vmapped), and the fit with the highest objective is kept [ours;
    VBMC's gplite restarts its hyperparameter fits too]. One start can end at a degenerate
    local optimum (a lengthscale collapsed towards 0 and a quadratic mean whose maximum lies
    far above y_max) where a shorter start reaches a much higher objective. A single start
    is fitted without the batch axis, which would only add to the compiled program.
    """
    data = (X, y, noise_variance, mask)
    scale = _num_used(mask, y.dtype)

    def one(start):
        fit = maximize(_exact_objective, start, data, max_steps=max_steps, scale=scale)
        return fit.params, fit.value, fit.finite

    if len(lengthscale_factors) == 1:
        params, _, finite = one(with_lengthscale_scaled(surrogate, lengthscale_factors[0]))
        return select_tree(finite, params, surrogate)
    starts = [with_lengthscale_scaled(surrogate, factor) for factor in lengthscale_factors]
    stacked = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *starts)
    params, values, finite = eqx.filter_vmap(one)(stacked)
    values = jnp.where(finite, values, -jnp.inf)
    best = first_near_best(values)
    chosen = jax.tree_util.tree_map(lambda leaf: leaf[best], params)
    return select_tree(finite[best], chosen, surrogate)


def conditioned_objective(surrogate: Surrogate, posterior: sparse.SparsePosterior) -> Float[Array, ""]:
    """Collapsed SGPR bound + log hyperprior of `posterior`, the sparse GP conditioned with
    `surrogate`'s hyperparameters: the score that compares hyperparameters."""
    return sparse.elbo(posterior) + log_prior(surrogate)


def sparse_objective(surrogate: Surrogate, X, y, noise_variance, mask, Z, inducing_mask) -> Float[Array, ""]:
    """`conditioned_objective` of the sparse GP with inducing inputs Z on (X, y)."""
    return _sparse_objective(surrogate, (X, y, noise_variance, mask, Z, inducing_mask)) + log_prior(surrogate)


def fit_sparse(surrogate: Surrogate, X, y, noise_variance, mask, Z, inducing_mask, *, max_steps: int) -> Surrogate:
    """MAP of the collapsed SGPR bound + log hyperprior with Z fixed (Li et al. 2023, §3.3; the
    paper leaves the prior and optimiser open — we mirror the exact-GP step), BFGS
    preconditioned by the hyperprior's widths (`Surrogate.coordinate_scales`) [ours]. From the
    identity, BFGS creeps along the flat direction in which m₀ and σ_f² trade off (m₀ is in
    the log density's units and μ in the inputs', the others are logarithms), doubling its
    step there one line search at a time; preconditioned, the fits reach their optimum in
    fewer steps."""
    data = (X, y, noise_variance, mask, Z, inducing_mask)
    fit = maximize(
        _sparse_objective,
        surrogate,
        data,
        max_steps=max_steps,
        scale=_num_used(mask, y.dtype),
        coordinate_scales=surrogate.coordinate_scales(),
    )
    return fit.params_or(surrogate)
