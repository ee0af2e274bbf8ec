import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float

from .._jit import public_jit
from .._validation import check_inputs, check_targets
from ..kernels import AbstractKernel
from ..likelihoods import AbstractSuperGaussianLikelihood
from ..means import AbstractMean
from ._local import expected_squared_h
from ._state import AACIState
from ._variational import NaturalGaussian, inducing_factor, project


def augmented_elbo_terms(
    variational: NaturalGaussian,
    kernel: AbstractKernel,
    likelihood: AbstractSuperGaussianLikelihood,
    mean: AbstractMean,
    Z: Float[Array, "M D"],
    X: Float[Array, "N D"],
    y: Float[Array, " N"],
    scale: Float[Array, ""],
):
    """(L_aug, marginal mean, marginal variance, result) for a (mini)batch; see `augmented_elbo`."""
    projection = project(kernel, mean, Z, inducing_factor(kernel, Z), X)
    marginal_mean, marginal_variance, result = variational.marginals(projection)
    data_term = (
        likelihood.log_normalizer()
        + likelihood.linear_coefficient(y) * marginal_mean
        + likelihood.log_phi(expected_squared_h(likelihood, y, marginal_mean, marginal_variance))
    )
    return scale * jnp.sum(data_term) - variational.kl_to_prior(), marginal_mean, marginal_variance, result


def _inputs(state: AACIState, X, y, num_data):
    X = check_inputs(X, "X", dimension=state.inducing_inputs.shape[1])
    y = state.likelihood.targets(check_targets(y, "y", X.shape[0]))
    num_data = X.shape[0] if num_data is None else num_data
    return X, y, jnp.asarray(num_data / X.shape[0], X.dtype)


@public_jit(static_argnames=("num_data",))
def augmented_elbo(
    state: AACIState, X: Float[ArrayLike, "N D"], y: Float[ArrayLike, " N"], *, num_data: int | None = None
) -> Float[Array, ""]:
    """The collapsed augmented ELBO (Galy-Fajou, Wenzel & Opper 2020, App. A.4.2, there written for
    μ₀ = 0 and h = f; this is its general form):

        L_aug = (N/|B|) Σ_i [log C + g_i E f_i + log φ(E_q h_i²)] − KL[q(v) ‖ p(v)],

    i.e. the full augmented ELBO with the optimal q(ω_i) = π(ω | c_i), c_i² = E_q h_i², substituted.
    `X`, `y` are all the data or a minibatch of a data set of size `num_data`.
    Differentiable in every hyperparameter of the state's kernel, likelihood and mean.
    """
    X, y, scale = _inputs(state, X, y, num_data)
    value, *_ = augmented_elbo_terms(
        state.variational, state.kernel, state.likelihood, state.mean, state.inducing_inputs, X, y, scale
    )
    return value


@public_jit(static_argnames=("num_data",))
def standard_elbo(
    state: AACIState,
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    num_data: int | None = None,
) -> Float[Array, ""]:
    """The ELBO of the original (non-augmented) model at the same q(f):

        L_std = (N/|B|) Σ_i E_q[log p(y_i | f_i)] − KL[q(v) ‖ p(v)],

    with the expectations by the likelihood's `expected_log_prob` (Gauss–Legendre on each side
    of the kink of |h|, `split_gauss_legendre_nodes`). L_std − L_aug = Σ_i (E_q log φ(h_i²) −
    log φ(E_q h_i²)) ≥ 0 (Galy-Fajou et al. 2020, App. A.4.3; ≥ 0 by Jensen since log φ is convex).
    """
    X, y, scale = _inputs(state, X, y, num_data)
    projection = project(
        state.kernel, state.mean, state.inducing_inputs, inducing_factor(state.kernel, state.inducing_inputs), X
    )
    marginal_mean, marginal_variance, _ = state.variational.marginals(projection)
    expected = state.likelihood.expected_log_prob(y, marginal_mean, marginal_variance)
    return scale * jnp.sum(expected) - state.variational.kl_to_prior()
