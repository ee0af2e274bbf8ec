import abc

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Complex, Float, PRNGKeyArray

from .._validation import as_floating, raise_if
from ._base import AbstractLikelihood
from ._laplace_inversion import sample_by_laplace_inversion
from ._split_gauss_legendre import split_gauss_legendre_nodes

# Gauss–Legendre nodes per panel of the Gaussian expectations (seven panels, 168 nodes).
SPLIT_DEGREE = 24


class AbstractSuperGaussianLikelihood(AbstractLikelihood):
    """A super-Gaussian likelihood (Galy-Fajou et al. 2020, eqs. 4–5, per datum):

        p(y | f) = C e^{g(y) f} φ(h²),   h = a₀(y) + a₁(y) f,

    with φ completely monotone on r ≥ 0 and φ(0) = 1. By Bernstein–Widder, φ(r) = ∫ e^{−rω} p(ω) dω
    for a probability density p(ω), so that given ω the likelihood is Gaussian in f:
    p(y | f, ω) = C e^{g f − h² ω}. In the paper's quadratic notation
    h² = α − β f + γ f² with α = a₀², β = −2 a₀ a₁, γ = a₁² (storing the affine form avoids
    the cancellation in α − βm + γ(m² + s)).

    Given f the auxiliary variable follows the tilted law π(ω | c) = e^{−c²ω} p(ω)/φ(c²) with
    c = |h|; its mean is ω̄(c²) = −d log φ(r)/dr at r = c² (Galy-Fajou et al. 2020, §3.3.1 and App. A.2).

    A new likelihood implements `log_normalizer` (log C), `linear_coefficient` (g),
    `affine_coefficients` ((a₀, a₁)) and `log_phi`; `log_prob`, `phi`, `mean_omega` and a generic
    `sample_omega` (Laplace-transform inversion) follow.
    `log_phi` must accept complex arguments with positive real part (principal branches) so that
    `phi` serves Laplace-transform inversion. Likelihoods whose φ involves √r override
    `mean_omega` with a closed form that is finite at c → 0, because the derivative of √r is
    not. Those with a known tilted law override `sample_omega` with an exact sampler.
    """

    @abc.abstractmethod
    def log_normalizer(self) -> Float[Array, ""]:
        """log C."""

    @abc.abstractmethod
    def linear_coefficient(self, y: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
        """g(y)."""

    @abc.abstractmethod
    def affine_coefficients(self, y: Float[Array, "*batch"]) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
        """(a₀(y), a₁(y)) with h(f, y) = a₀ + a₁ f."""

    @abc.abstractmethod
    def log_phi(self, r: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """log φ(r), numerically stable for r ≥ 0 and valid for complex r with Re r > 0 (in the
        dtype of `r`: parameters are cast to it)."""

    def phi(self, s: Complex[ArrayLike, "*batch"]) -> Complex[Array, "*batch"]:
        """φ(s) = exp(log φ(s)), also for complex s with Re s > 0 (for Laplace inversion)."""
        return jnp.exp(self.log_phi(s))

    def mean_omega(self, c_squared: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """ω̄ = E[ω | c] = −φ′(c²)/φ(c²) = −d log φ/dr at r = c², by forward-mode autodiff."""
        c_squared = jnp.asarray(c_squared)
        _, derivative = jax.jvp(self.log_phi, (c_squared,), (jnp.ones_like(c_squared),))
        return -derivative

    def sample_omega(self, key: PRNGKeyArray, c_squared: Float[ArrayLike, " n"]) -> Float[Array, " n"]:
        """One draw of ω_i ~ π(ω | c_i) per entry (the Gibbs ω-step, Galy-Fajou et al. 2020, Alg. 2).

        The default inverts the Laplace transform φ(s + c²)/φ(c²) numerically
        (`sample_by_laplace_inversion`; float64 only); the catalogue overrides it with exact samplers.
        """
        return sample_by_laplace_inversion(self.log_phi, key, jnp.asarray(c_squared))

    def observation_variance(self) -> Float[Array, ""]:
        """Var[y | f] for regression likelihoods (used for predictive variances of y)."""
        raise NotImplementedError(f"{type(self).__name__} is not a regression likelihood with a variance of y | f.")

    def squared_h(self, y: Float[ArrayLike, "*batch"], f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """h(f, y)²."""
        a0, a1 = self.affine_coefficients(jnp.asarray(y))
        return (a0 + a1 * jnp.asarray(f)) ** 2

    def expectation_nodes(
        self, y: Float[Array, "*batch"], mean: Float[Array, "*batch"], variance: Float[Array, "*batch"]
    ) -> tuple[Float[Array, "*batch K"], Float[Array, "*batch K"]]:
        """The rule of `split_gauss_legendre_nodes` with break points where h = a₀ + a₁ f = 0
        (the kink of log φ(h²) when φ involves √r = |h|; harmless for smooth φ) and at
        distances 1/|a₁| (the width of the likelihood in f) around it."""
        a0, a1 = self.affine_coefficients(self.targets(y))
        safe_a1 = jnp.where(a1 != 0, a1, 1.0)
        kink = jnp.where(a1 != 0, -a0 / safe_a1, mean)
        return split_gauss_legendre_nodes(kink, 1 / jnp.abs(safe_a1), mean, variance, SPLIT_DEGREE)

    def log_prob(self, y: Float[ArrayLike, "*batch"], f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """log p(y | f) = log C + g(y) f + log φ(h(f, y)²)."""
        y = self.targets(y)
        f = jnp.asarray(f)
        return self.log_normalizer() + self.linear_coefficient(y) * f + self.log_phi(self.squared_h(y, f))


@jax.custom_jvp
def root_of_square(r: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
    """√r for r = h² ≥ 0, the |h| inside φ(h²), with derivative 1/(2√r) for r > 0 and 0 at
    r = 0. Chained with dr/dh = 2h = 0 this gives d|h|/dh = 0 at the kink h = 0 (a
    subgradient; the exact derivative for smooth φ such as the logistic's) instead of
    ∞ · 0 = NaN."""
    return jnp.sqrt(r)


@root_of_square.defjvp
def _root_of_square_jvp(primals, tangents):
    (r,), (tangent,) = primals, tangents
    value = jnp.sqrt(r)
    positive = value > 0
    return value, jnp.where(positive, tangent / (2 * jnp.where(positive, value, 1.0)), 0.0)


def safe_root(c_squared: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
    """c = √max(c², tiny): finite and positive at c² = 0, for closed forms that divide by c."""
    return jnp.sqrt(jnp.maximum(c_squared, jnp.finfo(c_squared.dtype).tiny))


def classification_targets(y: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
    """Labels in {−1, 1}: {0, 1} labels are converted (0 → −1); any other value is an error
    (`raise_if`: a `ValueError` for concrete labels, `eqx.error_if` inside `jit`)."""
    y = as_floating(y, "y")
    converted = jnp.where(y == 0, -jnp.ones_like(y), y)
    mixed = jnp.any(y == 0) & jnp.any(y == -1)
    bad = mixed | ~jnp.all((converted == 1) | (converted == -1))
    return raise_if(converted, bad, "`y` must hold class labels in {-1, 1} or in {0, 1}.")
