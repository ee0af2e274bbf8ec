import equinox as eqx
import jax.numpy as jnp
import optax
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._progress import run_with_progress
from .._validation import check_inputs, check_key, check_targets
from ..kernels import AbstractKernel
from ..likelihoods import AbstractSuperGaussianLikelihood
from ..means import AbstractMean, Zero
from ..sparse import select_inducing_points
from ._cavi import CAVI
from ._predict import class_probability, log_predictive_density, predict, predict_y
from ._state import AACIInfo, AACIState
from ._svi import SVI, decaying_step_size


class AACIResult(eqx.Module):
    """The outcome of `fit`: the final `state`, the augmented ELBO after every step (`elbo`, a
    minibatch estimate when minibatching) and the stacked step `infos`, with prediction methods."""

    state: AACIState
    elbo: Float[Array, " T"]
    infos: AACIInfo

    def predict(self, X_new: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Latent mean and variance (`aaci.predict`)."""
        return predict(self.state, X_new)

    def predict_y(self, X_new: Float[ArrayLike, "Q D"]) -> tuple[Float[Array, " Q"], Float[Array, " Q"]]:
        """Predictive mean and variance of y (regression likelihoods; `aaci.predict_y`)."""
        return predict_y(self.state, X_new)

    def class_probability(self, X_new: Float[ArrayLike, "Q D"]) -> Float[Array, " Q"]:
        """P(y = 1) (Logistic; `aaci.class_probability`)."""
        return class_probability(self.state, X_new)

    def log_predictive_density(
        self, X_new: Float[ArrayLike, "Q D"], y_new: Float[ArrayLike, " Q"]
    ) -> Float[Array, " Q"]:
        """log p(y* | data) per point (`aaci.log_predictive_density`)."""
        return log_predictive_density(self.state, X_new, y_new)


def _progress_quantities(info: AACIInfo) -> dict[str, Float[Array, ""]]:
    """The augmented ELBO after the step."""
    return {"ELBO": info.elbo}


def fit(
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    key: PRNGKeyArray,
    likelihood: AbstractSuperGaussianLikelihood,
    kernel: AbstractKernel,
    inducing_points: Float[ArrayLike, "M D"] | int | None = None,
    batch_size: int | None = None,
    num_steps: int = 100,
    mean: AbstractMean | None = None,
    optimizer: optax.GradientTransformation | None = None,
    step_size=None,
    progress: bool | None = None,
) -> AACIResult:
    """Fit a GP with a super-Gaussian likelihood by augmented conjugate inference.

    Without `inducing_points` and `batch_size` this runs full-GP `CAVI`; otherwise `SVI` with
    inducing inputs `inducing_points` (an `(M, D)` array, or an int M: M training inputs chosen by
    greedy variance selection, `sparse.select_inducing_points`; default: all of `X`) and minibatches
    of `batch_size`. `step_size` defaults to 1 on full batches and to `decaying_step_size` on
    minibatches. `optimizer` (optax) trains the hyperparameters on the augmented ELBO.
    The `num_steps` steps run under one `lax.scan` (`gpcompose.run`). `progress`: a bar of
    the steps done and the ELBO, moved from inside the scan by a host callback (None: only
    where stderr is a terminal).
    """
    check_key(key)
    X = check_inputs(X, "X")
    y = check_targets(y, "y", X.shape[0])
    if not isinstance(likelihood, AbstractSuperGaussianLikelihood):
        raise ValueError(f"`likelihood` must be an AbstractSuperGaussianLikelihood, got {type(likelihood).__name__}.")
    if not bool(jnp.all(jnp.isfinite(X))) or not bool(jnp.all(jnp.isfinite(y))):
        raise ValueError("`X` and `y` must be finite.")
    y = likelihood.targets(y)  # labels checked (a `ValueError`) and {0, 1} converted to {−1, 1}
    mean = Zero() if mean is None else mean
    if inducing_points is None and batch_size is None:
        algorithm = CAVI(kernel, likelihood, mean, optimizer)
        state = algorithm.init(X)
    else:
        if inducing_points is None:
            Z = X
        elif isinstance(inducing_points, int):
            indices, _ = select_inducing_points(
                kernel, X, 1.0, jnp.ones((X.shape[0],), bool), max_points=inducing_points, min_points=inducing_points
            )
            Z = X[indices]
        else:
            Z = check_inputs(inducing_points, "inducing_points", dimension=X.shape[1])
        if step_size is None:
            step_size = 1.0 if batch_size is None else decaying_step_size
        algorithm = SVI(kernel, likelihood, mean, optimizer, batch_size, step_size)
        state = algorithm.init(Z)
    state, infos = run_with_progress(
        algorithm, state, key, num_steps, X, y, quantities=_progress_quantities, progress=progress
    )
    return AACIResult(state, infos.elbo, infos)
