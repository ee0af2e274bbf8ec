"""The acquisitions of `bo.BO`, one module each: bounded entropy search (Nguyen, Deisenroth
& Osborne 2021, Sec. 4) and the baselines of its Sec. 5: EI, UCB, MES, Thompson sampling,
ERM and random search. Each says which bounds it needs and how it proposes a point."""

import abc
from typing import ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ..acquisition import (
    BoundedEntropySearchCache,
    bounded_entropy_search,
    log_expected_regret,
    max_value_entropy_search,
    upper_confidence_bound,
)
from ..bounded import Bounds, RootPriorMean, accepted, check_root_center, log_weights, square_root_offset
from ._context import Proposal, ProposalContext


class AbstractAcquisition(eqx.Module):
    """How `bo.BO` chooses the next point once the initial design is done.

    A subclass implements `propose(context, sample_key, search_key) -> Proposal` on the
    surrogate fitted to the evaluations so far (`ProposalContext`, unit cube and standardised
    units). It may override `check_bounds` (a `ValueError` naming the bound it needs, raised
    by `BO.init`), `surrogate_offset` (fit the square-root GP instead of a GP) and set
    `uses_surrogate = False` (no fit at all).
    """

    uses_surrogate: ClassVar[bool] = True

    def check_bounds(self, has_f_plus: bool, has_f_minus: bool) -> None:
        """`ValueError` when a bound this acquisition needs was not given."""

    def surrogate_offset(self, bounds: Bounds | None) -> tuple[Float[Array, ""] | None, RootPriorMean]:
        """The offset c of the square-root GP f = c − ½h² to fit (None: a GP on f) and the
        prior center of h (`bounded.root_prior_mean`)."""
        return None, "data"

    @abc.abstractmethod
    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        """The next point in the unit cube; `sample_key` draws posterior samples,
        `search_key` seeds the multistart search."""


def _check_sampling(num_samples: int, num_features: int) -> None:
    for name, value in (("num_samples", num_samples), ("num_features", num_features)):
        if value < 1:
            raise ValueError(f"`{name}` must be positive, got {value}.")


class _AbstractSquareRootAcquisition(AbstractAcquisition):
    """An acquisition that uses the square-root GP f = c − ½h², c = f⁺ + 2η₊ (Sec. 3.3) when
    f⁺ is given and its field `square_root` is True."""

    square_root: eqx.AbstractVar[bool]
    square_root_center: eqx.AbstractVar[RootPriorMean]

    def surrogate_offset(self, bounds: Bounds | None) -> tuple[Float[Array, ""] | None, RootPriorMean]:
        if self.square_root and bounds is not None and bounds.f_plus is not None:
            return square_root_offset(bounds), self.square_root_center
        return None, self.square_root_center


class BoundedEntropySearch(_AbstractSquareRootAcquisition):
    """Bounded entropy search (BES; Nguyen, Deisenroth & Osborne 2021, Sec. 4, Alg. 2): the
    point most informative about the maximisers of M pathwise samples weighted by how well
    their extrema match f⁺ and f⁻ (`acquisition.bounded_entropy_search`). Needs f⁺, f⁻ or both.

    Falls back to EI when no sample is accepted (App. C.2) and also when BES is nowhere
    positive: its closed form (1/M) Σ p_x log(p_x/p) is not a full KL divergence and is ≤ 0 when
    every g_m⁺ is far from μ(x_m⁺), and then its argmax changes nothing (often a point already
    evaluated).
    """

    num_samples: int = eqx.field(static=True, default=200)  # M, as in Nguyen et al. 2021, Sec. 5
    num_features: int = eqx.field(static=True, default=100)  # l random Fourier features per sample (Sec. 5)
    # Accepted samples (`bounded.accepted`, Sec. 3.2; none: EI fallback): each extremum within 2η of its bound
    # ("coordinate") or both jointly ("mahalanobis"); the paper does not say which.
    acceptance_rule: Literal["coordinate", "mahalanobis"] = eqx.field(static=True, default="coordinate")
    square_root: bool = eqx.field(static=True, default=True)  # the square-root GP when f⁺ is given (Sec. 3.3)
    # Prior center of the square-root GP's h: "data" (f prior mean 0) or "bound" (f prior mean c); not in the paper.
    square_root_center: RootPriorMean = eqx.field(static=True, default="data")

    def __check_init__(self):
        _check_sampling(self.num_samples, self.num_features)
        check_root_center(self.square_root_center, "square_root_center")
        if self.acceptance_rule not in ("coordinate", "mahalanobis"):
            raise ValueError(f"`acceptance_rule` must be 'coordinate' or 'mahalanobis', got {self.acceptance_rule!r}.")

    def check_bounds(self, has_f_plus: bool, has_f_minus: bool) -> None:
        if not (has_f_plus or has_f_minus):
            raise ValueError(
                "BoundedEntropySearch needs `f_plus`, `f_minus` or both; without bounds choose another "
                "acquisition, e.g. `bo.BO(acquisition=bo.ExpectedImprovement())`."
            )

    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        surrogate, bounds = context.surrogate, context.bounds
        extrema = context.extrema(sample_key, self.num_samples, self.num_features)
        weights = log_weights(bounds, extrema)
        is_accepted = accepted(bounds, extrema, rule=self.acceptance_rule)
        mean, variance = surrogate.predict(extrema.x_max)
        cache = BoundedEntropySearchCache(extrema.x_max, extrema.value_max, weights, mean, variance)

        def entropy_search(u):
            return bounded_entropy_search(cache, surrogate.lookahead_variance(extrema.x_max, u))

        found = context.maximize(search_key, entropy_search, jnp.concatenate([context.inputs, extrema.x_max]))
        informative = jnp.any(is_accepted) & (found.value > 0)

        def expected_improvement():
            fallback = context.maximize(search_key, context.expected_improvement(), context.inputs)
            return fallback.x, fallback.value

        x, value = jax.lax.cond(informative, lambda: (found.x, found.value), expected_improvement)
        return Proposal(x, value, jnp.sum(is_accepted).astype(jnp.int32), ~informative)


class ExpectedImprovement(AbstractAcquisition):
    """Expected improvement over the best evaluation (Mockus 1978; Jones, Schonlau & Welch 1998), maximised
    in log space (`acquisition.log_expected_improvement`)."""

    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        found = context.maximize(search_key, context.expected_improvement(), context.inputs)
        return Proposal.of(found.x, found.value)


class UpperConfidenceBound(AbstractAcquisition):
    """GP-UCB μ(x) + √β_t σ(x) (Srinivas et al. 2010) with β_t = log t, t the number of
    successful evaluations (`acquisition.upper_confidence_bound`)."""

    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        dtype = context.inputs.dtype
        beta = jnp.log(jnp.maximum(jnp.sum(context.succeeded), 1).astype(dtype))

        def objective(u):
            mean, variance = context.surrogate.predict(u[None, :])
            return upper_confidence_bound(mean[0], variance[0], beta)

        found = context.maximize(search_key, objective, context.inputs)
        return Proposal.of(found.x, found.value)


class MaxValueEntropySearch(AbstractAcquisition):
    """Max-value entropy search (Wang & Jegelka 2017) with the maxima of M pathwise samples
    (`acquisition.max_value_entropy_search`)."""

    num_samples: int = eqx.field(static=True, default=200)  # M, as for BES (Nguyen et al. 2021, Sec. 5)
    num_features: int = eqx.field(static=True, default=100)  # random Fourier features per sample

    def __check_init__(self):
        _check_sampling(self.num_samples, self.num_features)

    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        extrema = context.extrema(sample_key, self.num_samples, self.num_features)

        def objective(u):
            mean, variance = context.surrogate.predict(u[None, :])
            return max_value_entropy_search(mean[0], variance[0], extrema.value_max)

        found = context.maximize(search_key, objective, jnp.concatenate([context.inputs, extrema.x_max]))
        return Proposal.of(found.x, found.value)


class ThompsonSampling(AbstractAcquisition):
    """Thompson sampling: the maximiser of one pathwise posterior sample; `value` is that
    sample's maximum."""

    num_features: int = eqx.field(static=True, default=100)  # random Fourier features of the sample

    def __check_init__(self):
        _check_sampling(1, self.num_features)

    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        extrema = context.extrema(sample_key, 1, self.num_features)
        return Proposal.of(extrema.x_max[0], extrema.value_max[0])


class ExpectedRegretMinimization(_AbstractSquareRootAcquisition):
    """Expected regret minimisation with a known optimum f⁺ (Nguyen & Osborne 2020), maximising
    −log E[(f⁺ − f(x))₊] (`acquisition.log_expected_regret`). Needs f⁺."""

    square_root: bool = eqx.field(static=True, default=True)  # the square-root GP f = c − ½h² (Sec. 3.3)
    # Prior center of the square-root GP's h: "data" (f prior mean 0) or "bound" (f prior mean c); not in the paper.
    square_root_center: RootPriorMean = eqx.field(static=True, default="data")

    def __check_init__(self):
        check_root_center(self.square_root_center, "square_root_center")

    def check_bounds(self, has_f_plus: bool, has_f_minus: bool) -> None:
        if not has_f_plus:
            raise ValueError("ExpectedRegretMinimization needs `f_plus` (the known optimum).")

    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        optimum = context.bounds.f_plus

        def objective(u):
            mean, variance = context.surrogate.predict(u[None, :])
            return -log_expected_regret(mean[0], variance[0], optimum)

        found = context.maximize(search_key, objective, context.inputs)
        return Proposal.of(found.x, found.value)


class RandomSearch(AbstractAcquisition):
    """Uniform random points in the box (no surrogate is fitted)."""

    uses_surrogate: ClassVar[bool] = False

    def propose(self, context: ProposalContext, sample_key: PRNGKeyArray, search_key: PRNGKeyArray) -> Proposal:
        x = jax.random.uniform(search_key, (context.dimension,), context.inputs.dtype)
        return Proposal.of(x, jnp.asarray(jnp.nan, x.dtype))
