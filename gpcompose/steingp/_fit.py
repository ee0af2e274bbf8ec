from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float, PRNGKeyArray

from .._progress import run_with_progress
from .._validation import as_floating, check_key
from ..kernels import AbstractKernel
from ..likelihoods import AbstractLikelihood, Gaussian
from ..svgd import AbstractParticleKernel, SVGDInfo
from ._algorithm import SteinGP
from ._conjugate import ConjugateModel
from ._default_priors import with_default_priors
from ._model import AbstractSteinGPModel
from ._result import SteinGPResult
from ._sparse import SparseWhitenedModel
from ._whitened import WhitenedModel


def _finite_matrix(array, name: str, num_columns: int | None = None) -> np.ndarray:
    array = np.asarray(as_floating(array, name))
    if array.ndim != 2 or (num_columns is not None and array.shape[1] != num_columns):
        expected = "(num_points, dimension)" if num_columns is None else f"(num_points, {num_columns})"
        raise ValueError(f"`{name}` must have shape {expected}, got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    return array


def make_model(
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    kernel: AbstractKernel,
    likelihood: AbstractLikelihood,
    inducing_points: Float[ArrayLike, "M D"] | None = None,
) -> AbstractSteinGPModel:
    """The SteinGP model for the data, chosen from the likelihood and `inducing_points`:

    - `inducing_points` given: `SparseWhitenedModel` (c), any likelihood, minibatchable;
    - a `Gaussian` likelihood: `ConjugateModel` (a), particles over hyperparameters only;
    - any other likelihood: `WhitenedModel` (b), particles over hyperparameters and N latents.

    Positive parameters without a prior get SteinGP's default Gamma(shape 1, scale 2) prior
    and the 10⁻⁶ + softplus constraint (`with_default_priors`). Raises `ValueError` for
    shape mismatches, non-finite data, and labels that the likelihood does not accept
    (`likelihood.targets`; a `Bernoulli` likelihood takes {0, 1}).
    """
    if not isinstance(kernel, AbstractKernel):
        raise ValueError(f"`kernel` must be an AbstractKernel, got {type(kernel).__name__}.")
    if not isinstance(likelihood, AbstractLikelihood):
        raise ValueError(f"`likelihood` must be an AbstractLikelihood, got {type(likelihood).__name__}.")
    X = _finite_matrix(X, "X")
    y = np.asarray(as_floating(y, "y"), X.dtype)
    if y.shape != (X.shape[0],):
        raise ValueError(f"`y` must have shape ({X.shape[0]},) to match X {X.shape}, got shape {y.shape}.")
    if not np.all(np.isfinite(y)):
        raise ValueError("`y` contains NaN or infinite values.")
    likelihood.targets(y)  # a classification likelihood's check of the labels
    kernel, likelihood = with_default_priors((kernel, likelihood))
    X, y = jnp.asarray(X), jnp.asarray(y)
    if inducing_points is not None:
        inducing_points = _finite_matrix(inducing_points, "inducing_points", X.shape[1])
        return SparseWhitenedModel(kernel, likelihood, X, y, jnp.asarray(inducing_points, X.dtype))
    if isinstance(likelihood, Gaussian):
        return ConjugateModel(kernel, likelihood, X, y)
    return WhitenedModel(kernel, likelihood, X, y)


def _progress_quantities(info: SVGDInfo) -> dict[str, Float[Array, ""]]:
    """The step's squared kernel Stein discrepancy, which falls as the particles settle."""
    return {"KSD²": info.squared_kernel_stein_discrepancy}


def fit(
    X: Float[ArrayLike, "N D"],
    y: Float[ArrayLike, " N"],
    *,
    key: PRNGKeyArray,
    kernel: AbstractKernel,
    likelihood: AbstractLikelihood,
    num_particles: int = 20,
    num_steps: int = 1000,
    inducing_points: Float[ArrayLike, "M D"] | None = None,
    batch_size: int | None = None,
    optimizer: optax.GradientTransformation | None = None,
    particle_kernel: AbstractParticleKernel | None = None,
    initialization: Literal["prior", "around_initial"] = "prior",
    progress: bool | None = None,
) -> SteinGPResult:
    """Fit a Stein variational GP: `num_steps` SVGD steps on `num_particles` particles.

    The model is chosen by `make_model` (conjugate, whitened or sparse), the loop is
    `gpcompose.run` over `SteinGP.step` (one compiled `lax.scan`).

    **Arguments:**

    - `X` `(N, D)`, `y` `(N,)`: training data (labels in {0, 1} for a `Bernoulli` likelihood).
    - `key`: PRNG key for the initial particles and the minibatches.
    - `kernel`, `likelihood`: the GP prior and observation model; their priors default to
      Gamma(1, 2) and give the initial particles, their values are the centre of the initial
      particles with `initialization="around_initial"`.
    - `num_particles` (J), `num_steps`: SVGD sizes.
    - `inducing_points` `(M, D)`: fixed inducing inputs; selects the sparse model.
    - `batch_size`: minibatch size for the sparse model's scores (N/|B| scaling).
    - `optimizer`, `particle_kernel`: as in `SteinGP` (defaults `optax.adam(0.05)`, `RBF()`).
    - `initialization`: as in `SteinGP`: `"prior"` (default; hyperparameters drawn from their
      priors, SteinGP App. 12) or `"around_initial"` (u₀ + N(0, I) around `kernel`'s and
      `likelihood`'s values).
    - `progress`: a bar of the steps done / `num_steps` and the squared kernel Stein
      discrepancy, moved from inside the scan by a host callback; None shows it only where
      stderr is a terminal, True or False force it on or off.

    **Returns:** a `SteinGPResult` (`particles`, `predict`, `log_predictive_density`, `sample`).
    """
    if not isinstance(num_steps, int) or num_steps < 0:
        raise ValueError(f"`num_steps` must be a non-negative int, got {num_steps!r}.")
    check_key(key)
    model = make_model(X, y, kernel=kernel, likelihood=likelihood, inducing_points=inducing_points)
    options = {}
    if optimizer is not None:
        options["optimizer"] = optimizer
    if particle_kernel is not None:
        options["kernel"] = particle_kernel
    algorithm = SteinGP(model, batch_size=batch_size, initialization=initialization, **options)
    initial_key, run_key = jax.random.split(key)
    state = algorithm.init(num_particles, key=initial_key)
    state, info = run_with_progress(
        algorithm, state, run_key, num_steps, quantities=_progress_quantities, progress=progress
    )
    return algorithm.result(state, info)
