import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from jaxtyping import Array, Float

from .._errors import RESULTS
from ..parameters import log_prior, partition
from ._local import expected_squared_h, natural_targets
from ._objectives import augmented_elbo_terms
from ._state import AACIInfo, AACIState
from ._variational import NaturalGaussian, inducing_factor, project


def natural_step(
    state: AACIState,
    X: Float[Array, "B D"],
    y: Float[Array, " B"],
    scale: Float[Array, ""],
    step_size: Float[Array, ""],
    optimizer: optax.GradientTransformation | None,
) -> tuple[AACIState, AACIInfo]:
    """One AACI update on a (mini)batch (Galy-Fajou, Wenzel & Opper 2020, Alg. 1 with Z = X, s = 1,
    ρ = 1; otherwise their Alg. 3 with the corrections listed in `SVI`):

    1. local: c_i² = E_q h_i² under the current q (with the Titsias variance term) and ω̄_i = ω̄(c_i²);
    2. global: η ← (1 − ρ) η + ρ η̂(ω̄) in natural parameters (`natural_targets`);
    3. hyperparameters (if `optimizer` is given): one optax step on −(L_aug + log prior) with the
       new q held fixed (Galy-Fajou et al. 2020, §5.3, train the kernel with ADAM; here every non-`Fixed`
       parameter of the kernel, likelihood and mean).
    """
    projection = project(
        state.kernel, state.mean, state.inducing_inputs, inducing_factor(state.kernel, state.inducing_inputs), X
    )
    marginal_mean, marginal_variance, marginal_result = state.variational.marginals(projection)
    mean_omega = state.likelihood.mean_omega(expected_squared_h(state.likelihood, y, marginal_mean, marginal_variance))
    target = natural_targets(state.likelihood, y, projection, mean_omega, scale)
    variational = jax.tree.map(lambda old, new: (1 - step_size) * old + step_size * new, state.variational, target)

    model = (state.kernel, state.likelihood, state.mean)

    def objective(trainable, rest):
        kernel, likelihood, mean = eqx.combine(trainable, rest)
        value, *_ = augmented_elbo_terms(variational, kernel, likelihood, mean, state.inducing_inputs, X, y, scale)
        return value, value + log_prior((kernel, likelihood, mean))

    trainable, rest = partition(model)
    if optimizer is None:
        elbo, _ = objective(trainable, rest)
        optimizer_state = state.optimizer_state
    else:

        def loss(trainable):
            value, penalised = objective(trainable, rest)
            return -penalised, value

        gradient, elbo = jax.grad(loss, has_aux=True)(trainable)
        with jax.numpy_dtype_promotion("standard"):  # optax mixes int32 step counts and floats
            updates, optimizer_state = optimizer.update(gradient, state.optimizer_state, trainable)
            trainable = optax.apply_updates(trainable, updates)
        model = eqx.combine(trainable, rest)
    kernel, likelihood, mean = model
    result = RESULTS.where(projection.result == RESULTS.successful, marginal_result, projection.result)
    new_state = AACIState(
        variational, kernel, likelihood, mean, state.inducing_inputs, optimizer_state, state.num_steps + 1
    )
    return new_state, AACIInfo(elbo, jnp.asarray(step_size, elbo.dtype), result)


def initial_state(kernel, likelihood, mean, Z, optimizer) -> AACIState:
    """q(v) = N(0, I) (the prior, m = μ₀ and S = K; the paper leaves the initial q unspecified) and a
    fresh optimiser state."""
    optimizer_state = None if optimizer is None else optimizer.init(partition((kernel, likelihood, mean))[0])
    state = AACIState(
        NaturalGaussian.standard(Z.shape[0], Z.dtype),
        kernel,
        likelihood,
        mean,
        Z,
        optimizer_state,
        jnp.zeros((), jnp.int32),
    )
    return strong_types(state)


def strong_types(tree):
    """`tree` with weakly typed array leaves (from Python numbers) made strong, so that the state a
    step returns has exactly the types of the state it received and a jitted step compiles once."""
    return jax.tree.map(lambda leaf: jnp.asarray(leaf, dtype=leaf.dtype) if eqx.is_array(leaf) else leaf, tree)
