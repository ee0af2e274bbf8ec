import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from ._omega_samplers import sample_inverse_gaussian
from ._super_gaussian import AbstractSuperGaussianLikelihood, classification_targets, root_of_square, safe_root


class BayesianSVM(AbstractSuperGaussianLikelihood):
    """The Bayesian SVM pseudo-likelihood (Polson & Scott 2011), y ∈ {−1, 1}:

        p(y | f) = e^{(y f − 1) − |1 − y f|} = e^{−2 max(1 − y f, 0)},

    Galy-Fajou, Wenzel & Opper 2020, Table 1 (its "full form" is garbled there, as
    exp((yf − 1) − 1 − yf); the form above is the one consistent with its g, h and φ): C = e^{−1},
    g = y, h = 1 − y f, φ(r) = e^{−√r}; π(ω | c) = IG(mean 1/(2c), shape 1/2) and ω̄ = 1/(2c).
    It is not normalised in y, so it has no class probabilities.
    """

    def targets(self, y: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        return classification_targets(y)

    def log_normalizer(self) -> Float[Array, ""]:
        return jnp.asarray(-1.0)

    def linear_coefficient(self, y: Float[Array, "*batch"]) -> Float[Array, "*batch"]:
        return y

    def affine_coefficients(self, y: Float[Array, "*batch"]) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
        return jnp.ones_like(y), -y

    def log_phi(self, r: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        return -root_of_square(jnp.asarray(r))

    def mean_omega(self, c_squared: Float[ArrayLike, "*batch"]) -> Float[Array, "*batch"]:
        return 1 / (2 * safe_root(jnp.asarray(c_squared)))

    def sample_omega(self, key: PRNGKeyArray, c_squared: Float[ArrayLike, " n"]) -> Float[Array, " n"]:
        c_squared = jnp.asarray(c_squared)
        return sample_inverse_gaussian(key, self.mean_omega(c_squared), jnp.full_like(c_squared, 0.5))
