import abc
import math
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from .._validation import check_key
from ._gaussian import factor_gaussian_log_prob, gaussian_entropy, gaussian_log_prob


def first_free_slot(mask: Bool[Array, " K"]) -> Array:
    """Index of the first inactive component (K if every slot is active)."""
    return jnp.where(jnp.all(mask), mask.shape[0], jnp.argmin(mask))


def logits_after_adding(weights: Float[Array, " K"], slot, weight) -> Float[Array, " K"]:
    """Log-weights when a component of weight `weight` joins at `slot` and the others shrink by 1 − w."""
    new_weights = (1.0 - weight) * weights
    new_weights = new_weights.at[slot].set(weight)
    return jnp.log(jnp.where(new_weights > 0, new_weights, 1.0))


class AbstractGaussianMixture(eqx.Module):
    """q(x) = Σ_k w_k N(x; μ_k, Σ_k) on a fixed number K of component slots.

    Weights are a softmax of unconstrained `logits` over the active slots (`mask`), so
    components can be added and pruned under `jit` without changing shapes. Subclasses
    define how the component means and covariances are parameterised: diagonal families
    define `component_variances` only; families with full Σ_k also override
    `component_scales` with lower Cholesky factors.
    """

    logits: eqx.AbstractVar[Float[Array, " K"]]
    mask: eqx.AbstractVar[Bool[Array, " K"]]

    @property
    @abc.abstractmethod
    def component_means(self) -> Float[Array, "K D"]:
        """μ_k."""

    @property
    @abc.abstractmethod
    def component_variances(self) -> Float[Array, "K D"]:
        """Marginal variances (Σ_k)_{dd} (the whole of Σ_k for diagonal families)."""

    @property
    def component_scales(self) -> Float[Array, "K D"] | Float[Array, "K D D"]:
        """Square roots of the Σ_k: standard deviations (K, D) for diagonal families, lower
        Cholesky factors L_k (K, D, D), Σ_k = L_k L_kᵀ, for full ones."""
        return jnp.sqrt(self.component_variances)

    @property
    def component_covariances(self) -> Float[Array, "K D"] | Float[Array, "K D D"]:
        """Σ_k as diagonals (K, D) for diagonal families, as matrices (K, D, D) for full ones."""
        scales = self.component_scales
        return self.component_variances if scales.ndim == 2 else scales @ jnp.swapaxes(scales, 1, 2)

    def scale_noise(self, component: Array, noise: Float[Array, " D"]) -> Float[Array, " D"]:
        """Σ_k^{1/2} ε for component `component`: σ_k ⊙ ε (diagonal) or L_k ε (full)."""
        scale = self.component_scales[component]
        return scale * noise if scale.ndim == 1 else scale @ noise

    @property
    def num_components(self) -> int:
        """K, the number of component slots (active or not; see `mask`)."""
        return self.logits.shape[0]

    @property
    def dimension(self) -> int:
        """The dimension D of the support."""
        return self.component_means.shape[1]

    @property
    def weights(self) -> Float[Array, " K"]:
        """w = softmax(logits) over the active components (0 on inactive ones)."""
        return jnp.where(self.mask, jax.nn.softmax(self.logits, where=self.mask), 0.0)

    @property
    def log_weights(self) -> Float[Array, " K"]:
        """log w (−∞ on inactive components)."""
        return jnp.where(self.mask, jax.nn.log_softmax(self.logits, where=self.mask), -jnp.inf)

    def component_log_prob(self, x: Float[Array, " D"]) -> Float[Array, " K"]:
        """log N(x; μ_k, Σ_k) for every component (a full Σ_k = L_k L_kᵀ through its factor)."""
        scales = self.component_scales
        if scales.ndim == 2:
            return jax.vmap(gaussian_log_prob, in_axes=(None, 0, 0))(x, self.component_means, self.component_variances)
        return jax.vmap(factor_gaussian_log_prob, in_axes=(None, 0, 0))(x, self.component_means, scales)

    def log_prob(self, x: Float[Array, "*batch D"]) -> Float[Array, "*batch"]:
        """log q(x) = logsumexp_k(log w_k + log N(x; μ_k, Σ_k)) for one point or a batch."""
        x = jnp.asarray(x)
        if x.shape[-1:] != (self.dimension,):
            raise ValueError(f"`x` must have a last axis of size {self.dimension}, got shape {x.shape}.")
        single = lambda point: logsumexp(self.log_weights + self.component_log_prob(point))
        flat = jax.vmap(single)(x.reshape(-1, self.dimension))
        return flat.reshape(x.shape[:-1])

    def stratified_sample(self, key: PRNGKeyArray, num_per_component: int) -> Float[Array, "K S D"]:
        """Reparameterised draws x_{k,s} = μ_k + Σ_k^{1/2} ε_{k,s}, `num_per_component` per component.

        Differentiable in the means and scales; with `expectation` the weights enter as
        Σ_k w_k (1/S) Σ_s f(x_{k,s}), so the estimate is differentiable in them too
        (BVBMC thesis eq. 5.34).
        """
        return self._at_noise(self._stratified_noise(key, num_per_component))

    def _stratified_noise(self, key: PRNGKeyArray, num_per_component: int) -> Float[Array, "K S D"]:
        """ε_{k,s} ~ N(0, I), `num_per_component` per component."""
        shape = (self.num_components, num_per_component, self.dimension)
        return jax.random.normal(check_key(key), shape, self.component_means.dtype)

    def _at_noise(self, noise: Float[Array, "K S D"]) -> Float[Array, "K S D"]:
        """x_{k,s} = μ_k + Σ_k^{1/2} ε_{k,s}."""
        per_component = jax.vmap(self.scale_noise, in_axes=(None, 0))
        offsets = jax.vmap(per_component)(jnp.arange(self.num_components), noise)
        return self.component_means[:, None, :] + offsets

    def expectation(
        self, function: Callable[[Float[Array, " D"]], Float[Array, ""]], key: PRNGKeyArray, num_per_component: int
    ) -> Float[Array, ""]:
        """Stratified reparameterised Monte Carlo estimate of E_q[f(x)]."""
        samples = self.stratified_sample(key, num_per_component)
        values = jax.vmap(jax.vmap(function))(samples)
        return jnp.sum(self.weights * jnp.mean(values, axis=1))

    def sample(self, key: PRNGKeyArray, num_samples: int) -> Float[Array, "S D"]:
        """`num_samples` independent draws from q (component chosen at random per draw).

        Differentiable in the means and scales but not in the weights; use
        `expectation` for gradients with respect to the weights.
        """
        component_key, noise_key = jax.random.split(check_key(key))
        components = jax.random.categorical(component_key, self.log_weights, shape=(num_samples,))
        noise = jax.random.normal(noise_key, (num_samples, self.dimension), self.component_means.dtype)
        return self.component_means[components] + jax.vmap(self.scale_noise)(components, noise)

    def mean(self) -> Float[Array, " D"]:
        """Σ_k w_k μ_k."""
        return self.weights @ self.component_means

    def covariance(self) -> Float[Array, "D D"]:
        """Σ_k w_k (Σ_k + μ_k μ_kᵀ) − μ̄ μ̄ᵀ (BVBMC thesis eq. 5.28)."""
        means = self.component_means
        mean = self.mean()
        centred = means - mean[None, :]
        between = (self.weights[:, None] * centred).T @ centred
        covariances = self.component_covariances
        if covariances.ndim == 2:
            return between + jnp.diag(self.weights @ covariances)
        return between + jnp.einsum("k,kde->de", self.weights, covariances)

    def marginal_log_prob(self, values: Float[Array, " N"], dimension: int) -> Float[Array, " N"]:
        """log density of the 1-D marginal of coordinate `dimension` at `values`."""
        means = self.component_means[:, dimension]
        variances = self.component_variances[:, dimension]
        terms = -0.5 * (
            (values[:, None] - means[None, :]) ** 2 / variances[None, :] + jnp.log(2 * math.pi * variances[None, :])
        )
        return logsumexp(self.log_weights[None, :] + terms, axis=1)

    def entropy(self, key: PRNGKeyArray, num_per_component: int) -> Float[Array, ""]:
        """H[q] = −Σ_k w_k E_k[log q] by stratified reparameterised Monte Carlo with a control
        variate (differentiable).

        In component k, x = μ_k + Σ_k^{1/2} ε and log N(x; μ_k, Σ_k) = −½‖ε‖² − ½ log|2πΣ_k|, whose
        mean −H[N(μ_k, Σ_k)] is known; taking it as the control variate (Owen 2013, §8.9) gives

            E_k[log q] = E_ε[log q(x) + ½‖ε‖²] − D/2,

        exact for a single Gaussian and free of the χ²-distributed noise of ½‖ε‖² that dominates
        the plain estimate −(1/S) Σ_s log q(x_{k,s}) when components overlap little. The term
        ½‖ε‖² does not depend on the mixture, so the pathwise derivatives in the means and
        scales are the plain estimator's; in the weights the variance is lower.
        """
        noise = self._stratified_noise(key, num_per_component)
        log_densities = jax.vmap(jax.vmap(self.log_prob))(self._at_noise(noise))
        per_component = jnp.mean(log_densities + 0.5 * jnp.sum(noise**2, axis=-1), axis=1) - 0.5 * self.dimension
        return -jnp.sum(self.weights * per_component)

    def entropy_bounds(self) -> tuple[Float[Array, ""], Float[Array, ""]]:
        """Deterministic bounds on H[q] (Huber et al. 2008):

        lower = −Σ_i w_i log Σ_j w_j N(μ_i; μ_j, Σ_i + Σ_j)       (Jensen)
        upper = Σ_i w_i [−log w_i + ½ log|2πe Σ_i|].
        """
        means = self.component_means
        covariances = self.component_covariances
        pair_log_prob = jax.vmap(
            lambda mean_i, cov_i: jax.vmap(lambda mean_j, cov_j: gaussian_log_prob(mean_i, mean_j, cov_i + cov_j))(
                means, covariances
            )
        )(means, covariances)
        inner = logsumexp(self.log_weights[None, :] + pair_log_prob, axis=1)
        weights = self.weights
        lower = -jnp.sum(jnp.where(self.mask, weights * inner, 0.0))
        component_entropy = jax.vmap(gaussian_entropy)(covariances)
        upper = jnp.sum(
            jnp.where(self.mask, weights * (component_entropy - jnp.where(self.mask, self.log_weights, 0.0)), 0.0)
        )
        return lower, upper

    def moment_matched(self) -> tuple[Float[Array, " D"], Float[Array, "D D"]]:
        """Mean and covariance of the Gaussian with the same first two moments as q."""
        return self.mean(), self.covariance()

    @abc.abstractmethod
    def clip_to_box(self, lower: Float[Array, " D"], upper: Float[Array, " D"]) -> "AbstractGaussianMixture":
        """The mixture with every component mean clipped to [lower, upper] and every
        component standard deviation capped at the box's width upper − lower, per coordinate.

        These are VBMC's bounds on its variational parameters with the box of the training
        inputs (PyVBMC `VariationalPosterior.get_bounds`: μ in [min X, max X], log scale
        ≤ log(max X − min X)): no component sits, or spreads, where the GP surrogate has no
        data and only extrapolates its prior mean.
        """

    def prune(self, threshold: float | Float[Array, ""]) -> "AbstractGaussianMixture":
        """Deactivate components whose weight is below `threshold` (the largest always stays)."""
        weights = self.weights
        keep = self.mask & ((weights >= threshold) | (weights == jnp.max(weights)))
        return eqx.tree_at(lambda mixture: mixture.mask, self, keep)
