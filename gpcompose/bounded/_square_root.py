from typing import Literal, get_args

import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray

from .. import gp
from .._posterior_interface import AbstractPosterior
from .._validation import check_inputs, check_targets
from ..kernels import AbstractKernel
from ..means import AbstractMean, Constant
from ..parameters import AbstractParameter, Fixed
from ..sampling import AbstractSamples, PathwiseSamples, pathwise
from ._bounds import Bounds


class SquareRootPosterior(AbstractPosterior):
    """The square-root GP f(x) = c − ½ h(x)², h ~ GP (Nguyen et al. 2021, §3.3, eq. 5, after
    Gunter et al. 2014), conditioned on h_i = √(2(c − y_i)).

    `root` is the exact posterior of h; `offset` is c = f⁺ + 2η₊, an upper bound of every
    sample; `num_clamped` counts the observations with y_i > c, whose h_i was clamped
    to 0 (the paper does not cover data above c).
    """

    root: gp.ExactPosterior
    offset: Float[Array, ""]
    num_clamped: Int[Array, ""]

    def predict(self, X):
        """The linearised predictive of f (`predict_linearized`)."""
        return predict_linearized(self, X)

    def lookahead_variance(self, X_query, x, noise_variance):
        """The linearised f-variance after observing h at `x` (`square_root_lookahead_variance`)."""
        return square_root_lookahead_variance(self, X_query, x, noise_variance)

    def update(self, x, y, noise_variance):
        """The posterior with one more observation y of f at `x`: h = √(2 max(c − y, 0)) appended
        to the GP of h (rank-1) with h-space noise σ², clamped as in `condition_square_root`."""
        y = jnp.asarray(y, self.offset.dtype)
        h, clamped = square_root_targets(y[None], self.offset, jnp.ones((1,), bool))
        root = gp.update(self.root, x, h[0], noise_variance)
        return SquareRootPosterior(root, self.offset, self.num_clamped + clamped)


def square_root_offset(bounds: Bounds) -> Float[Array, ""]:
    """c = f⁺ + 2η₊: f⁺ lies within 2η₊ of max f with 95 % probability, so f ≤ c (§3.3)."""
    if bounds.f_plus is None:
        raise ValueError("The square-root GP needs an upper bound: `bounds.f_plus` is None.")
    return bounds.f_plus + 2.0 * bounds.eta_plus


def square_root_targets(
    y: Float[Array, " N"], offset: Float[Array, ""], mask: Bool[Array, " N"]
) -> tuple[Float[Array, " N"], Int[Array, ""]]:
    """h = √(2 max(c − y, 0)) and the number of used rows with y > c (clamped)."""
    gap = offset - y
    clamped = jnp.sum(mask & (gap < 0))
    return jnp.sqrt(2.0 * jnp.maximum(gap, 0.0)), clamped


RootPriorMean = Literal["data", "bound"]


def root_prior_mean(offset: Float[Array, ""], center: RootPriorMean = "data") -> Constant:
    """The fixed prior mean m_h of h; Nguyen et al. (2021) do not give one.

    - `"data"` (default): m_h = √(2c), for which f = c − ½h² has prior mean c − ½m_h² = 0, the
      mean of standardised data (our choice, after the predecessor code's √(2f*)).
    - `"bound"`: m_h = 0 (WSABI's zero-mean h), for which away from the data f has the linearised
      mean c and the exact mean c − ½k(x, x): the prior puts the unexplored region at the upper bound.
      Samples' maxima then land near c, which is what the paper's SRGP acceptance ratios (Table 1)
      need; see benchmarks/README.md.
    """
    check_root_center(center, "center")
    if center == "data":
        return Constant(Fixed(jnp.sqrt(2.0 * jnp.maximum(offset, 0.0))))
    return Constant(Fixed(jnp.zeros_like(offset)))


def check_root_center(center: str, name: str) -> None:
    """Raise a ValueError naming the argument `name` unless `center` is a `RootPriorMean`."""
    if center not in get_args(RootPriorMean):
        raise ValueError(f"`{name}` must be one of {get_args(RootPriorMean)}, got {center!r}.")


def condition_square_root(
    kernel: AbstractKernel,
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    noise_variance: Float[ArrayLike, "*N"] | AbstractParameter,
    offset: Float[ArrayLike, ""],
    *,
    mean: AbstractMean | None = None,
    mask: Bool[ArrayLike, " N"] | None = None,
    capacity: int | None = None,
) -> SquareRootPosterior:
    """Condition the square-root GP on data y (Alg. 1 lines 1–2): map h_i = √(2(c − y_i)) and
    condition a GP (`kernel`, `mean`, default `root_prior_mean(c)`) on (X, h) with the
    h-space noise `noise_variance`. Observations above c are clamped to h = 0 and counted
    in `num_clamped` instead of giving NaN.
    """
    X = check_inputs(X, "X")
    y = check_targets(y, "y", X.shape[0]).astype(X.dtype)
    offset = jnp.asarray(offset, X.dtype)
    if offset.shape != ():
        raise ValueError(f"`offset` must be a scalar, got shape {offset.shape}.")
    used = jnp.ones(y.shape, bool) if mask is None else jnp.asarray(mask, bool)
    h, num_clamped = square_root_targets(y, offset, used)
    mean = root_prior_mean(offset) if mean is None else mean
    root = gp.condition(kernel, mean, X, h, noise_variance, mask=mask, capacity=capacity)
    return SquareRootPosterior(root, offset, num_clamped)


def predict_linearized(
    posterior: SquareRootPosterior, X: Float[ArrayLike, "Q D"]
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """First-order (Taylor) predictive of f = c − ½h² around μ_h (Nguyen et al. 2021, eqs. 6–7, B.5):
    μ_f = c − ½ μ_h², σ_f² = μ_h² σ_h²."""
    root_mean, root_variance = gp.predict(posterior.root, X)
    return posterior.offset - 0.5 * root_mean**2, root_mean**2 * root_variance


def predict_moment_matched(
    posterior: SquareRootPosterior, X: Float[ArrayLike, "Q D"]
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Exact moments of f = c − ½h² for h ~ N(μ_h, σ_h²) (WSABI-M style; not in the
    paper): E f = c − ½(μ_h² + σ_h²), Var f = μ_h² σ_h² + ½ σ_h⁴."""
    root_mean, root_variance = gp.predict(posterior.root, X)
    mean = posterior.offset - 0.5 * (root_mean**2 + root_variance)
    return mean, root_mean**2 * root_variance + 0.5 * root_variance**2


def square_root_lookahead_variance(
    posterior: SquareRootPosterior,
    X_query: Float[ArrayLike, "Q D"],
    x: Float[ArrayLike, " D"],
    noise_variance: Float[ArrayLike, ""],
) -> Float[Array, " Q"]:
    """Linearised f-variance at `X_query` after observing h at `x` (noise σ_h²):
    μ_h(x′)² σ²_{h,x}(x′) (Nguyen et al. 2021, eq. 7, with the rank-1 look-ahead of h, §4)."""
    root_mean, _ = gp.predict(posterior.root, X_query)
    return root_mean**2 * gp.lookahead_variance(posterior.root, X_query, x, noise_variance)


class SquareRootSamples(AbstractSamples):
    """Samples g_m(x) = c − ½ h_m(x)² of the square-root GP from pathwise samples h_m of
    its root (Alg. 1 line 3); g_m ≤ c everywhere by construction."""

    root: PathwiseSamples
    offset: Float[Array, ""]

    @property
    def num_samples(self) -> int:
        return self.root.num_samples

    def __call__(self, X: Float[ArrayLike, "Q D"]) -> Float[Array, "M Q"]:
        return self.offset - 0.5 * self.root(X) ** 2

    def evaluate(self, index: Int[Array, ""], x: Float[Array, " D"]) -> Float[Array, ""]:
        return self.offset - 0.5 * self.root.evaluate(index, x) ** 2


def square_root_pathwise(
    key: PRNGKeyArray,
    posterior: SquareRootPosterior,
    num_samples: int,
    num_features: int = 100,
    *,
    shared_features: bool = False,
) -> SquareRootSamples:
    """`num_samples` pathwise samples of the square-root GP (`sampling.pathwise` on h)."""
    if not isinstance(posterior, SquareRootPosterior):
        raise ValueError(f"`posterior` must be a SquareRootPosterior, got {type(posterior).__name__}.")
    root = pathwise(key, posterior.root, num_samples, num_features, shared_features=shared_features)
    return SquareRootSamples(root, posterior.offset)
