import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._jit import public_jit
from .._linalg import solve_triangular
from .._observations import check_new_inputs
from ._posterior import ExactPosterior


def _projections(posterior: ExactPosterior, X_new: Float[Array, "Q D"]):
    """k(X, X_new) on used rows and V = L⁻¹ k(X, X_new)."""
    observations = posterior.observations
    cross = posterior.kernel.cross(observations.inputs, X_new)
    cross = jnp.where(observations.mask[:, None], cross, 0.0)
    return cross, solve_triangular(posterior.factor.lower, cross)


@public_jit()
def predict(posterior: ExactPosterior, X_new: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Latent (noise-free) predictive mean and variance at `X_new`.

    μ(x) = m(x) + k(x, X)(K + D)⁻¹(y − m(X)),  s²(x) = k(x, x) − ‖L⁻¹k(X, x)‖²
    (Rasmussen & Williams 2006, eqs. 2.25–2.26). Variances are clamped at 0.
    """
    X_new = check_new_inputs(posterior.observations, X_new, "X_new")
    cross, projected = _projections(posterior, X_new)
    mean = posterior.mean(X_new) + cross.T @ posterior.weights
    variance = posterior.kernel.diagonal(X_new) - jnp.sum(projected**2, axis=0)
    return mean, jnp.maximum(variance, 0.0)


@public_jit()
def predict_covariance(
    posterior: ExactPosterior, X_new: Float[ArrayLike, "Q D"]
) -> tuple[Float[Array, " Q"], Float[Array, "Q Q"]]:
    """Latent predictive mean and full covariance k(X*, X*) − Vᵀ V at `X_new`."""
    X_new = check_new_inputs(posterior.observations, X_new, "X_new")
    cross, projected = _projections(posterior, X_new)
    mean = posterior.mean(X_new) + cross.T @ posterior.weights
    covariance = posterior.kernel.gram(X_new) - projected.T @ projected
    return mean, covariance


@public_jit()
def lookahead_variance(
    posterior: ExactPosterior,
    X_query: Float[ArrayLike, "Q D"],
    x: Float[ArrayLike, " D"],
    noise_variance: Float[ArrayLike, ""],
) -> Float[Array, " Q"]:
    """Latent variance at `X_query` after a hypothetical observation at `x`, without refitting.

    s⋆²(x′; x) = s²(x′) − C(x′, x)² / (s²(x) + σ²_x), where C is the posterior
    covariance; it does not depend on the unseen value and never exceeds s²(x′).

    The projections L⁻¹k(X, X_query) do not depend on `x` and are solved apart from x's: under
    `vmap` over `x` (a search over candidates) they stay one unbatched solve, and inside a
    loop over `x` they are loop-invariant.
    """
    X_query = check_new_inputs(posterior.observations, X_query, "X_query")
    x = check_new_inputs(posterior.observations, jnp.atleast_2d(x), "x")
    _, query_projected = _projections(posterior, X_query)
    point_projected = _projections(posterior, x)[1][:, 0]
    prior_cross = posterior.kernel.cross(X_query, x)[:, 0]
    covariance = prior_cross - query_projected.T @ point_projected
    query_variance = posterior.kernel.diagonal(X_query) - jnp.sum(query_projected**2, axis=0)
    point_variance = posterior.kernel.evaluate(x[0], x[0]) - jnp.sum(point_projected**2)
    denominator = jnp.maximum(point_variance, 0.0) + noise_variance
    return jnp.maximum(query_variance - covariance**2 / denominator, 0.0)
