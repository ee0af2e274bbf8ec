import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._jit import public_jit
from .._validation import check_inputs, check_targets
from ..likelihoods import BayesianSVM
from ._state import AACIState
from ._variational import inducing_factor, project


@public_jit()
def predict(state: AACIState, X_new: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Latent predictive mean and variance of q(f(x*)) = ∫ p(f* | v) q(v) dv:
    μ₀(x*) + A* m and k** − ‖A*‖² + A* S A*ᵀ with A* = K_*Z L⁻ᵀ (the standard SVGP/GP predictive)."""
    X_new = check_inputs(X_new, "X_new", dimension=state.inducing_inputs.shape[1])
    projection = project(
        state.kernel, state.mean, state.inducing_inputs, inducing_factor(state.kernel, state.inducing_inputs), X_new
    )
    mean, variance, _ = state.variational.marginals(projection)
    return mean, variance


@public_jit()
def predict_y(state: AACIState, X_new: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
    """Predictive mean and variance of y* for the regression likelihoods (symmetric noise around f):
    E y* = E f*, Var y* = Var f* + Var[y | f] (`observation_variance`)."""
    mean, variance = predict(state, X_new)
    return mean, variance + state.likelihood.observation_variance()


@public_jit()
def log_predictive_density(
    state: AACIState, X_new: Float[ArrayLike, "Q D"], y_new: Float[ArrayLike, " Q"]
) -> Float[Array, " Q"]:
    """log p(y* | data) ≈ log E_q[p(y* | f*)] per point, in log space with the quadrature of
    `standard_elbo` (the negative of the held-out NLL of Galy-Fajou et al. 2020, §5)."""
    mean, variance = predict(state, X_new)
    y_new = state.likelihood.targets(check_targets(y_new, "y_new", mean.shape[0]))
    return state.likelihood.log_predictive_density(y_new, mean, variance)


def class_probability(state: AACIState, X_new: Float[ArrayLike, "Q D"]) -> Float[Array, " Q"]:
    """P(y* = 1 | data) = E_q[p(y* = 1 | f*)] for a normalised classification likelihood (Logistic)."""
    if isinstance(state.likelihood, BayesianSVM):
        raise ValueError("The Bayesian SVM pseudo-likelihood is not normalised and has no class probabilities.")
    X_new = check_inputs(X_new, "X_new", dimension=state.inducing_inputs.shape[1])
    ones = jnp.ones((X_new.shape[0],), X_new.dtype)
    return jnp.exp(log_predictive_density(state, X_new, ones))
