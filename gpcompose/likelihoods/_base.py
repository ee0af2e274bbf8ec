import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._validation import as_floating

# Nodes of the 1-D Gauss–Hermite rule used by the default Gaussian expectations; exact for
# integrands that are polynomials of degree < 2 × 20 in f.
GAUSS_HERMITE_DEGREE = 20


def gaussian_expectation_nodes(
    mean: Float[Array, "*batch"], variance: Float[Array, "*batch"]
) -> tuple[Float[Array, "*batch K"], Float[Array, "*ones K"]]:
    """Nodes f_k and log-weights log w_k with E_{f~N(m, v)}[g(f)] ≈ Σ_k w_k g(f_k).

    From the physicists' Gauss–Hermite rule (x_k, h_k) for ∫ e^{−x²} g(x) dx:
    f_k = m + √(2v) x_k and w_k = h_k/√π.
    """
    hermite_nodes, hermite_weights = np.polynomial.hermite.hermgauss(GAUSS_HERMITE_DEGREE)
    dtype = jnp.result_type(mean, variance)
    # Leading singleton axes keep the broadcasting explicit (rank promotion may be disabled).
    node_shape = (1,) * mean.ndim + (GAUSS_HERMITE_DEGREE,)
    nodes = jnp.asarray(hermite_nodes, dtype).reshape(node_shape)
    log_weights = jnp.asarray(np.log(hermite_weights / np.sqrt(np.pi)), dtype).reshape(node_shape)
    # The floor keeps the derivative of √v finite at v = 0 (nodes then collapse onto m).
    scale = jnp.sqrt(2 * jnp.maximum(variance, jnp.finfo(dtype).tiny))
    return mean[..., None] + scale[..., None] * nodes, log_weights


class AbstractLikelihood(eqx.Module):
    """An observation model p(y | f) for a latent function value f.

    `log_prob(y, f)` is elementwise and broadcasts over `y` and `f`; models sum it over
    data points themselves (with an N/|B| factor when they minibatch). The Gaussian
    expectations `expected_log_prob` and `log_predictive_density` default to a 20-node
    Gauss–Hermite rule; subclasses override them with closed forms where one exists.
    """

    @abc.abstractmethod
    def log_prob(self, y: Float[ArrayLike, "*batch"], f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """log p(y | f), elementwise."""

    def targets(self, y: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """The observations in the form the likelihood uses, checked: a real floating array
        (integers promoted, complex refused: `ValueError`); classification likelihoods also
        check their labels (a `ValueError` for concrete `y`, `eqx.error_if` for traced `y`)."""
        return as_floating(y, "y")

    def expectation_nodes(
        self, y: Float[Array, "*batch"], mean: Float[Array, "*batch"], variance: Float[Array, "*batch"]
    ) -> tuple[Float[Array, "*batch K"], Float[Array, "*batch K"]]:
        """Nodes and log-weights of the rule behind `expected_log_prob` and
        `log_predictive_density`: E_{f~N(m, v)}[g(f)] ≈ Σ_k w_k g(f_k) for the functions
        g of f that this likelihood produces at `y` (Gauss–Hermite by default; likelihoods
        with a kink in f override it)."""
        return gaussian_expectation_nodes(mean, variance)

    def expected_log_prob(
        self, y: Float[ArrayLike, "*batch"], mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> Float[Array, "*batch"]:
        """E_{f~N(m, v)}[log p(y | f)], elementwise (the data term of variational and
        sparse-whitened objectives; Hensman et al. 2015)."""
        y, mean, variance = jnp.asarray(y), jnp.asarray(mean), jnp.asarray(variance)
        nodes, log_weights = self.expectation_nodes(y, mean, variance)
        return jnp.sum(jnp.exp(log_weights) * self.log_prob(y[..., None], nodes), axis=-1)

    def log_predictive_density(
        self, y: Float[ArrayLike, "*batch"], mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> Float[Array, "*batch"]:
        """log ∫ p(y | f) N(f; m, v) df, elementwise, computed in log space (log-sum-exp
        over the quadrature nodes)."""
        y, mean, variance = jnp.asarray(y), jnp.asarray(mean), jnp.asarray(variance)
        nodes, log_weights = self.expectation_nodes(y, mean, variance)
        return jax.nn.logsumexp(log_weights + self.log_prob(y[..., None], nodes), axis=-1)

    def predictive_moments(
        self, mean: Float[ArrayLike, "*batch"], variance: Float[ArrayLike, "*batch"]
    ) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
        """Mean and variance of y when f ~ N(m, v), elementwise."""
        raise NotImplementedError(f"{type(self).__name__} does not define `predictive_moments`.")

    def sample(self, key: PRNGKeyArray, f: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        """One draw of y ~ p(y | f) per element of `f`."""
        raise NotImplementedError(f"{type(self).__name__} does not define `sample`.")
