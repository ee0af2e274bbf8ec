import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

from .._linalg import cholesky_solve
from .._observations import centred_targets, check_new_inputs
from ..gp import ExactPosterior
from ..kernels import RandomFourierFeatures, random_features
from ._base import AbstractSamples


class PathwiseSamples(AbstractSamples):
    """Decoupled (pathwise) samples of an exact GP posterior (Wilson et al. 2020;
    Nguyen et al. 2021, App. B.3, eqs. 17–18):

        g_m(x) = m(x) + φ_m(x)ᵀ w_m + k(x, X) v_m,
        v_m = (K + D)⁻¹ (y − m(X) − Φ_m w_m − ε_m),  w_m ~ N(0, I_F),  ε_m ~ N(0, D),

    with φ_m random Fourier features of the prior kernel (`kernels.random_features`).
    The prior part is approximate (F features); the update uses the exact kernel. The
    noise draw ε_m, which the paper's eq. 17 omits, makes the sample covariance equal
    the posterior covariance k(x, x′) − k(x, X)(K + D)⁻¹k(X, x′) as F → ∞.

    `features` is one basis shared by all samples (`shared_features`) or a batch of M
    bases (leading axis M on its arrays).
    """

    posterior: ExactPosterior
    features: RandomFourierFeatures
    prior_weights: Float[Array, "M F"]
    update_weights: Float[Array, "M C"]
    shared_features: bool = eqx.field(static=True)

    @property
    def num_samples(self) -> int:
        return self.prior_weights.shape[0]

    def _prior_values(self, X: Float[Array, "Q D"]) -> Float[Array, "M Q"]:
        if self.shared_features:
            return self.prior_weights @ self.features(X).T
        return jax.vmap(lambda features, weights: features(X) @ weights)(self.features, self.prior_weights)

    def _cross(self, X: Float[Array, "Q D"]) -> Float[Array, "C Q"]:
        observations = self.posterior.observations
        cross = self.posterior.kernel.cross(observations.inputs, X)
        return jnp.where(observations.mask[:, None], cross, 0.0)

    def __call__(self, X: Float[ArrayLike, "Q D"]) -> Float[Array, "M Q"]:
        X = check_new_inputs(self.posterior.observations, X, "X")
        update = self.update_weights @ self._cross(X)
        return self.posterior.mean(X)[None, :] + self._prior_values(X) + update

    def evaluate(self, index: Int[Array, ""], x: Float[Array, " D"]) -> Float[Array, ""]:
        X = x[None, :]
        if self.shared_features:
            features = self.features
        else:
            features = jax.tree_util.tree_map(lambda leaf: leaf[index], self.features)
        prior = features(X)[0] @ self.prior_weights[index]
        update = self._cross(X)[:, 0] @ self.update_weights[index]
        return self.posterior.mean(X)[0] + prior + update


@eqx.filter_jit
def pathwise(
    key: PRNGKeyArray,
    posterior: ExactPosterior,
    num_samples: int,
    num_features: int = 100,
    *,
    shared_features: bool = False,
) -> PathwiseSamples:
    """Draw `num_samples` pathwise posterior functions of an exact GP.

    **Arguments:**

    - `key`: PRNG key.
    - `posterior`: an `ExactPosterior` (`gp.condition`) whose kernel has a spectral
      density (squared exponential, Matérn).
    - `num_samples`: M; `num_features`: F, random Fourier features per basis (the
      l = 100 of Nguyen et al. 2021).
    - `shared_features`: one feature basis for all samples (cheaper; samples are then
      dependent through the basis) instead of a fresh basis per sample (eq. 18).

    **Returns:** a `PathwiseSamples`, callable on `(Q, D)` inputs → `(M, Q)` values.
    """
    if not isinstance(posterior, ExactPosterior):
        raise ValueError(f"`posterior` must be an ExactPosterior, got {type(posterior).__name__}.")
    if num_samples < 1 or num_features < 1:
        raise ValueError(f"`num_samples` and `num_features` must be ≥ 1, got {num_samples} and {num_features}.")
    observations = posterior.observations
    dimension = observations.inputs.shape[1]
    dtype = observations.inputs.dtype
    feature_key, weight_key, noise_key = jax.random.split(key, 3)
    if shared_features:
        features = random_features(posterior.kernel, feature_key, num_features, dimension)
        train_features = jnp.broadcast_to(
            features(observations.inputs), (num_samples, observations.capacity, num_features)
        )
    else:
        keys = jax.random.split(feature_key, num_samples)
        features = eqx.filter_vmap(lambda k: random_features(posterior.kernel, k, num_features, dimension))(keys)
        train_features = jax.vmap(lambda f: f(observations.inputs))(features)
    prior_weights = jax.random.normal(weight_key, (num_samples, num_features), dtype)
    standard_noise = jax.random.normal(noise_key, (num_samples, observations.capacity), dtype)
    noise = jnp.sqrt(observations.noise_variance)[None, :] * standard_noise
    prior_at_data = jnp.einsum("mcf,mf->mc", train_features, prior_weights)
    residual = centred_targets(posterior.mean, observations)[None, :] - prior_at_data - noise
    residual = jnp.where(observations.mask[None, :], residual, 0.0)
    update_weights = cholesky_solve(posterior.factor.lower, residual.T).T
    return PathwiseSamples(posterior, features, prior_weights, update_weights, shared_features)
