import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Bool, Float

from .._errors import RESULTS
from .._jit import public_jit
from .._linalg import CholeskyFactor, cholesky, solve_triangular
from .._observations import Observations, centred_targets, make_observations, padded_gram, with_capacity
from .._posterior_interface import AbstractGaussianPosterior
from .._validation import check_inputs, raise_if, require_finite
from ..kernels import AbstractKernel
from ..means import AbstractMean
from ..parameters import AbstractParameter, value_of


class SparsePosterior(AbstractGaussianPosterior):
    """Heteroskedastic SGPR (Titsias 2009) in the stable form of Li, Clarté & Acerbi 2023, App. C.3–C.4.

    With inducing inputs Z, D = diag(σ²_n) and ȳ = y − m(X):
        L   = chol(K_ZZ + εI),       R = L⁻¹ K_ZX D^{−1/2}         (M × N, not stored)
        L_S = chol(I + R Rᵀ),        r = R D^{−1/2} ȳ = L⁻¹ K_ZX D⁻¹ ȳ
    Predictions and the collapsed ELBO need only L, L_S and r (plus O(N) sums over the
    data), so appending an observation is a rank-1 update of L_S and r.
    Unused inducing slots are identity rows of L and L_S; unused data rows have D⁻¹ = 0.

    ε = `inducing_jitter` · mean(diag K_ZZ) (`condition`'s argument, default
    `INDUCING_JITTER`; more if the factorisation needs it). `inducing_factor.jitter`
    records the total, which `add_inducing_point` reuses.
    """

    kernel: AbstractKernel
    mean: AbstractMean
    observations: Observations
    inducing_inputs: Float[Array, "M D"]
    inducing_mask: Bool[Array, " M"]
    inducing_factor: CholeskyFactor
    inner_lower: Float[Array, "M M"]
    projected_residual: Float[Array, " M"]
    result: RESULTS

    @property
    def inner_weights(self) -> Float[Array, " M"]:
        """c = L_S⁻¹ r."""
        return solve_triangular(self.inner_lower, self.projected_residual)

    @property
    def mean_weights(self) -> Float[Array, " M"]:
        """v = L⁻ᵀ L_S⁻ᵀ c, so that the SGPR mean is m(x) + k(x, Z) v (the bᵀc of `predict`,
        with b = L_S⁻¹ L⁻¹ k(Z, x), associated the other way)."""
        inner = solve_triangular(self.inner_lower, self.inner_weights, transpose=True)
        return solve_triangular(self.inducing_factor.lower, inner, transpose=True)

    # The methods of `AbstractPosterior` are the module's functions (`sparse.predict`, …),
    # imported on call: those modules import this one.
    def predict(self, X):
        """`sparse.predict(self, X)`."""
        from ._predict import predict

        return predict(self, X)

    def reducible_predict(self, X):
        """`sparse.reducible_variance(self, X)`: the variance less the floor that the jitter of
        K_ZZ leaves even at an inducing input, which no observation removes."""
        from ._predict import reducible_variance

        return reducible_variance(self, X)

    def lookahead_variance(self, X_query, x, noise_variance):
        """`sparse.lookahead_variance(self, X_query, x, noise_variance)`."""
        from ._predict import lookahead_variance

        return lookahead_variance(self, X_query, x, noise_variance)

    def update(self, x, y, noise_variance):
        """`sparse.update(self, x, y, noise_variance)` (the inducing inputs unchanged)."""
        from ._update import update

        return update(self, x, y, noise_variance)

    def with_capacity(self, capacity: int) -> "SparsePosterior":
        """The same posterior with a data buffer of `capacity` rows (`update` fills free
        rows): free rows, which carry no precision, are added or dropped at the end."""
        return eqx.tree_at(lambda posterior: posterior.observations, self, with_capacity(self.observations, capacity))

    def with_inducing_capacity(self, capacity: int) -> "SparsePosterior":
        """The same posterior with `capacity` inducing slots (`add_inducing_point` fills free
        ones): free slots, identity rows of L and L_S with zero r, added or dropped at the end.
        Dropping a used slot raises."""
        padding = capacity - self.inducing_mask.shape[0]
        if padding < 0:
            mask = raise_if(
                self.inducing_mask,
                jnp.any(self.inducing_mask[capacity:]),
                f"`capacity` ({capacity}) would drop used inducing slots.",
            )
            keep = slice(0, capacity)
            inducing_inputs, inducing_mask = self.inducing_inputs[keep], mask[keep]
            lower, inner_lower = self.inducing_factor.lower[keep, keep], self.inner_lower[keep, keep]
            projected_residual = self.projected_residual[keep]
        else:
            identity = jnp.eye(padding, dtype=self.inner_lower.dtype)
            inducing_inputs = jnp.pad(self.inducing_inputs, ((0, padding), (0, 0)))
            inducing_mask = jnp.pad(self.inducing_mask, (0, padding))
            lower = jax.scipy.linalg.block_diag(self.inducing_factor.lower, identity)
            inner_lower = jax.scipy.linalg.block_diag(self.inner_lower, identity)
            projected_residual = jnp.pad(self.projected_residual, (0, padding))
        factor = CholeskyFactor(lower, self.inducing_factor.jitter, self.inducing_factor.result)
        return SparsePosterior(
            self.kernel,
            self.mean,
            self.observations,
            inducing_inputs,
            inducing_mask,
            factor,
            inner_lower,
            projected_residual,
            self.result,
        )

    @property
    def support(self):
        """The inducing inputs Z and the mask of the used inducing slots."""
        return self.inducing_inputs, self.inducing_mask

    def functional_moments(self, cross):
        """(bᵀ c, aᵀa − bᵀb) with a = L⁻¹ cᵀ, b = L_S⁻¹ a, c = L_S⁻¹ r: the SGPR mean and the
        covariance reduction K_ZZ⁻¹ − Σ = L⁻ᵀ(I − S⁻¹)L⁻¹ applied to cross-covariances c
        with f(Z) (Li, Clarté & Acerbi 2023, eqs. S14–S15).

        The mean is computed as c·v (`mean_weights`), which solves nothing against the K
        cross-covariances: a caller that uses only the mean (a gradient step on the ELBO's
        expected log joint) then costs O(KM) per call, not the O(KM²) of a and b, which
        only the reduction reads."""
        a = solve_triangular(self.inducing_factor.lower, cross.T)
        b = solve_triangular(self.inner_lower, a)
        return cross @ self.mean_weights, a.T @ a - b.T @ b


INDUCING_JITTER = 1e-6
"""Default relative jitter ε/mean(diag K_ZZ) that `condition` adds to K_ZZ
(GPflow's default jitter is 1e-6; Li, Clarté & Acerbi 2023 do not state theirs). Without
it, greedily selected inducing inputs with small noise σ²_tot ≪ σ_f² can make K_ZZ so
ill-conditioned that L⁻¹ amplifies rounding, and the posterior mean can then lie far above
every observation."""


def inducing_factor_with_jitter(
    gram: Float[Array, "M M"], inducing_mask: Bool[Array, " M"], relative_jitter: float
) -> CholeskyFactor:
    """chol(K_ZZ + ε I) on the used slots (identity rows stay identity), with
    ε = relative_jitter · mean(diag K_ZZ)."""
    used_diagonal = jnp.where(inducing_mask, jnp.diag(gram), 0.0)
    scale = jnp.sum(used_diagonal) / jnp.maximum(jnp.sum(inducing_mask.astype(gram.dtype)), 1.0)
    jitter = jax.lax.stop_gradient(relative_jitter * scale)
    factor = cholesky(gram + jnp.diag(jnp.where(inducing_mask, jitter, 0.0)))
    return CholeskyFactor(factor.lower, factor.jitter + jitter, factor.result)


def noise_precision(observations: Observations) -> Float[Array, " C"]:
    """D⁻¹ on used rows, zero on unused ones."""
    return jnp.where(observations.mask, 1.0 / observations.noise_variance, 0.0)


def inducing_cross(posterior_kernel, inducing_inputs, inducing_mask, inputs, mask):
    """K_ZX with rows of unused inducing slots and columns of unused data rows set to 0."""
    cross = posterior_kernel.cross(inducing_inputs, inputs)
    return jnp.where(inducing_mask[:, None] & mask[None, :], cross, 0.0)


@public_jit(static_argnames=("capacity",))
def condition(
    kernel: AbstractKernel,
    mean: AbstractMean,
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    noise_variance: Float[ArrayLike, "*N"] | AbstractParameter,
    Z: Float[ArrayLike, "M D"],
    *,
    mask: Bool[ArrayLike, " N"] | None = None,
    capacity: int | None = None,
    inducing_mask: Bool[ArrayLike, " M"] | None = None,
    inducing_jitter: float = INDUCING_JITTER,
) -> SparsePosterior:
    """Condition a sparse GP on observations with per-row noise, inducing inputs `Z`.

    **Arguments:** as `gp.condition`, plus `Z` `(M, D)` and an optional `inducing_mask`
    (False marks free inducing slots that `add_inducing_point` can fill later), and
    `inducing_jitter`, the ε of K_ZZ + εI relative to mean(diag K_ZZ) (0: the exact
    Nyström factor, with which Z = X reproduces the exact GP to rounding).
    Cost O(N M²).
    """
    observations = make_observations(kernel, mean, X, y, value_of(noise_variance), mask, capacity)
    Z = check_inputs(Z, "Z", dimension=observations.inputs.shape[1]).astype(observations.inputs.dtype)
    if Z.shape[0] == 0:
        raise ValueError(f"`Z` has no rows (shape {Z.shape}): a sparse GP needs at least one inducing input.")
    if inducing_mask is None:
        inducing_mask = jnp.ones((Z.shape[0],), bool)
    else:
        inducing_mask = jnp.asarray(inducing_mask, bool)
        if inducing_mask.shape != (Z.shape[0],):
            raise ValueError(f"`inducing_mask` must have shape ({Z.shape[0]},), got shape {inducing_mask.shape}.")
    Z = require_finite(jnp.where(inducing_mask[:, None], Z, 0.0), "Z")

    inducing_factor = inducing_factor_with_jitter(padded_gram(kernel, Z, inducing_mask), inducing_mask, inducing_jitter)
    cross = inducing_cross(kernel, Z, inducing_mask, observations.inputs, observations.mask)
    whitened_cross = solve_triangular(inducing_factor.lower, cross)
    precision = noise_precision(observations)
    scaled = whitened_cross * jnp.sqrt(precision)[None, :]
    inner = jnp.eye(Z.shape[0], dtype=Z.dtype) + scaled @ scaled.T
    inner_factor = cholesky(inner)
    projected_residual = whitened_cross @ (precision * centred_targets(mean, observations))
    result = RESULTS.where(inner_factor.result == RESULTS.successful, inducing_factor.result, inner_factor.result)
    return SparsePosterior(
        kernel,
        mean,
        observations,
        Z,
        inducing_mask,
        inducing_factor,
        inner_factor.lower,
        projected_residual,
        result,
    )
