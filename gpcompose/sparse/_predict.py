import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._jit import public_jit
from .._linalg import solve_triangular
from .._observations import check_new_inputs
from ._posterior import SparsePosterior


def _whitened(posterior: SparsePosterior, X_new: Float[Array, "Q D"]):
    """a = L⁻¹ k(Z, X_new) and b = L_S⁻¹ a."""
    cross = posterior.kernel.cross(posterior.inducing_inputs, X_new)
    cross = jnp.where(posterior.inducing_mask[:, None], cross, 0.0)
    a = solve_triangular(posterior.inducing_factor.lower, cross)
    return a, solve_triangular(posterior.inner_lower, a)


def _mean_and_variance_parts(posterior: SparsePosterior, X_new: Float[ArrayLike, "Q D"]):
    """μ(x) and the two parts of s²(x): the Nyström residual k(x, x) − ‖a‖² and ‖b‖²."""
    X_new = check_new_inputs(posterior.observations, X_new, "X_new")
    a, b = _whitened(posterior, X_new)
    mean = posterior.mean(X_new) + b.T @ posterior.inner_weights
    return mean, posterior.kernel.diagonal(X_new) - jnp.sum(a**2, axis=0), jnp.sum(b**2, axis=0)


@public_jit()
def predict(
    posterior: SparsePosterior, X_new: Float[ArrayLike, "Q D"]
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Latent predictive mean and variance of the SGPR posterior (Li et al. 2023, eqs. S9–S10, C.4).

    μ(x) = m(x) + bᵀc,  s²(x) = k(x, x) − ‖a‖² + ‖b‖²,  a = L⁻¹k(Z, x), b = L_S⁻¹a,
    c = L_S⁻¹ r. (The printed C.4 mean carries m(Z) terms that cancel exactly.)
    """
    mean, residual, inducing_variance = _mean_and_variance_parts(posterior, X_new)
    return mean, jnp.maximum(residual + inducing_variance, 0.0)


@public_jit()
def predict_mean(posterior: SparsePosterior, X_new: Float[ArrayLike, "Q D"]) -> Float[Array, " Q"]:
    """Latent predictive mean alone: μ(x) = m(x) + k(x, Z) v with v = L⁻ᵀ L_S⁻ᵀ c
    (`SparsePosterior.mean_weights`), the mean of `predict` associated the other way. It
    solves nothing against the Q new inputs, so it costs O(QM) where `predict` costs O(QM²)
    for the variance's triangular solves: for a caller that reads only the mean (a check of
    the mean at many points)."""
    X_new = check_new_inputs(posterior.observations, X_new, "X_new")
    cross = posterior.kernel.cross(posterior.inducing_inputs, X_new)
    cross = jnp.where(posterior.inducing_mask[:, None], cross, 0.0)
    return posterior.mean(X_new) + posterior.mean_weights @ cross


@public_jit()
def reducible_variance(
    posterior: SparsePosterior, X_new: Float[ArrayLike, "Q D"]
) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Latent mean and the part of the latent variance that new data can remove [ours].

    The SGPR variance s² = ‖b‖² + r has two parts: ‖b‖² (uncertainty of the inducing
    values, which observations reduce) and the Nyström residual r = k(x, x) − ‖a‖² (prior
    variance that Z does not span). With the jitter ε in L = chol(K_ZZ + εI), r stays
    near ε even at an inducing input, and adding x itself to Z only lowers it to
    rε/(r + ε) (Schur complement of the bordered K_ZZ + εI). The reducible variance is

        s²_red(x) = ‖b‖² + r²/(r + ε),

    s² without that floor. The floor matters where the data are dense: there ε can exceed
    ‖b‖², so s² is flat and an uncertainty acquisition would pick the same point again
    after evaluating it.
    """
    mean, residual, inducing_variance = _mean_and_variance_parts(posterior, X_new)
    residual = jnp.maximum(residual, 0.0)
    jitter = posterior.inducing_factor.jitter
    denominator = jnp.where(residual + jitter > 0, residual + jitter, 1.0)  # 0/0 only with ε = 0 and r = 0
    return mean, inducing_variance + residual**2 / denominator


@public_jit()
def predict_covariance(
    posterior: SparsePosterior, X_new: Float[ArrayLike, "Q D"]
) -> tuple[Float[Array, " Q"], Float[Array, "Q Q"]]:
    """Latent predictive mean and covariance k(X*, X*) − AᵀA + BᵀB."""
    X_new = check_new_inputs(posterior.observations, X_new, "X_new")
    a, b = _whitened(posterior, X_new)
    mean = posterior.mean(X_new) + b.T @ posterior.inner_weights
    covariance = posterior.kernel.gram(X_new) - a.T @ a + b.T @ b
    return mean, covariance


@public_jit()
def lookahead_variance(
    posterior: SparsePosterior,
    X_query: Float[ArrayLike, "Q D"],
    x: Float[ArrayLike, " D"],
    noise_variance: Float[ArrayLike, ""],
) -> Float[Array, " Q"]:
    """Latent variance at `X_query` after a hypothetical observation at `x` (Z fixed).

    Sherman–Morrison on S′ = S + v vᵀ, v = L⁻¹k(Z, x)/σ_x (the rank-1 update of Li, Clarté &
    Acerbi 2023, App. C.5, case 2, with σ_x⁻¹ where the paper prints σ_x):
        s⋆²(x′; x) = s²(x′) − (b′ᵀ b_x)² / (σ²_x + ‖b_x‖²),  b = L_S⁻¹ L⁻¹ k(Z, ·).
    """
    X_query = check_new_inputs(posterior.observations, X_query, "X_query")
    x = check_new_inputs(posterior.observations, jnp.atleast_2d(x), "x")
    a, b = _whitened(posterior, jnp.concatenate([X_query, x]))
    query_b, point_b = b[:, :-1], b[:, -1]
    query_variance = posterior.kernel.diagonal(X_query) - jnp.sum(a[:, :-1] ** 2, axis=0) + jnp.sum(query_b**2, axis=0)
    reduction = (query_b.T @ point_b) ** 2 / (noise_variance + jnp.sum(point_b**2))
    return jnp.maximum(query_variance - reduction, 0.0)
