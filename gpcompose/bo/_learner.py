"""Bounded Bayesian optimisation as an active learner (Nguyen, Deisenroth & Osborne 2021,
Alg. 2): `init`/`ask`/`tell`/`result` on a fixed-capacity buffer of evaluations, driven by
`gpcompose.run_black_box` or `gpcompose.run_traceable`."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, PRNGKeyArray

from .._jit import public_jit
from .._validation import as_floating, check_box
from ..active_learning import AbstractActiveLearner, Evaluations, repeats_failure, require_single_run
from ._acquisitions import AbstractAcquisition, ExpectedImprovement
from ._propose import propose
from ._state import BOAskInfo, BOResult, BOState, BOUpdateInfo


def _optional_scalar(value, name: str, dtype):
    if value is None:
        return None
    value = jnp.asarray(as_floating(value, name), dtype)
    if value.shape != ():
        raise ValueError(f"`{name}` must be a scalar, got shape {value.shape}.")
    if not isinstance(value, jax.core.Tracer) and not bool(jnp.isfinite(value)):
        raise ValueError(f"`{name}` must be finite, got {value}.")
    return value


def _check_bounds(f_plus, f_minus, eta_plus, eta_minus, dtype) -> tuple:
    """The bounds as scalars of `dtype`; `ValueError` for a non-finite bound, η ≤ 0 or f⁻ ≥ f⁺."""
    f_plus, f_minus = _optional_scalar(f_plus, "f_plus", dtype), _optional_scalar(f_minus, "f_minus", dtype)
    eta_plus = _optional_scalar(eta_plus, "eta_plus", dtype)
    eta_minus = _optional_scalar(eta_minus, "eta_minus", dtype)
    for eta, name in ((eta_plus, "eta_plus"), (eta_minus, "eta_minus")):
        if eta is not None and not isinstance(eta, jax.core.Tracer) and not bool(eta > 0):
            raise ValueError(f"`{name}` must be strictly positive, got {eta}.")
    concrete = not any(isinstance(v, jax.core.Tracer) for v in (f_plus, f_minus))
    if f_plus is not None and f_minus is not None and concrete and not bool(f_minus < f_plus):
        raise ValueError(f"`f_minus` ({f_minus}) must be smaller than `f_plus` ({f_plus}).")
    return f_plus, f_minus, eta_plus, eta_minus


def _clip_to_unit(u):
    """`u` clipped to the unit cube, its non-finite coordinates left as they are (so that a
    row at an infinite input is not stored on the cube's face)."""
    return jnp.where(jnp.isfinite(u), jnp.clip(u, 0.0, 1.0), u)


class BO(AbstractActiveLearner[BOState]):
    """Bayesian optimisation (maximisation) of an expensive function on a box, with
    approximate bounds f⁺ ≥ max f and f⁻ ≤ min f when they are known (Nguyen, Deisenroth &
    Osborne 2021).

    Inputs are scaled to the unit cube and outputs standardised (Sec. 5). Until
    `initial_design_size` evaluations have succeeded, `ask` proposes uniform points; then it
    refits the surrogate (a GP, or the square-root GP f = c − ½h² for acquisitions that use f⁺)
    by ML-II and returns the maximiser of the `acquisition`. `update` does nothing. A failed
    evaluation (the target raised, or returned NaN or ±inf) at x is fitted as an observation
    at the lowest successful value, ỹ(x) = min_n y_n (a censored observation,
    `active_learning.censor_failures`), so that the acquisition moves away from it.

    The default acquisition is expected improvement, which needs no bounds (Ax's default on
    BoTorch is of this kind too, log noisy expected improvement). Bounded entropy search, the
    method of the paper, is chosen explicitly, `BO(acquisition=BoundedEntropySearch())`, and
    needs `f_plus`, `f_minus` or both in `init` (a `ValueError` naming them otherwise); an
    acquisition that does not use the bounds (EI, UCB, MES, Thompson sampling, random search)
    ignores any that are given.

    Static fields: changing one recompiles; the state's arrays do not.
    """

    # The acquisition: expected improvement (default), bounded entropy search (needs f⁺ or f⁻), or another baseline.
    acquisition: AbstractAcquisition = eqx.field(default_factory=ExpectedImprovement)
    # Successful evaluations (the given ones included) before the model is used; None: max(d, 2) (the paper: d).
    initial_design_size: int | None = eqx.field(static=True, default=None)
    # Default looseness of f⁺ and f⁻ when η₊, η₋ are not given: η² per input dimension, standardised units (Sec. 5).
    eta_plus_squared_per_dimension: float = eqx.field(static=True, default=0.02)
    eta_minus_squared_per_dimension: float = eqx.field(static=True, default=0.5)
    # Multistart search of every acquisition and of the samples' maxima; not given by the paper, sized for CPU runs.
    num_candidates: int = eqx.field(static=True, default=500)  # uniform candidates per search
    num_starts: int = eqx.field(static=True, default=5)  # Adam restarts from the best candidates
    search_steps: int = eqx.field(static=True, default=50)  # Adam steps per restart
    extrema_steps: int = eqx.field(static=True, default=25)  # Adam steps per restart on a sample (BES, MES, TS)
    fit_steps: int = eqx.field(static=True, default=100)  # BFGS steps of the ML-II fit of the surrogate

    def __check_init__(self):
        if not isinstance(self.acquisition, AbstractAcquisition):
            raise ValueError(
                f"`acquisition` must be an acquisition module such as `bo.ExpectedImprovement()`, "
                f"got {self.acquisition!r}."
            )
        for name in ("num_candidates", "num_starts", "fit_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"`{name}` must be positive, got {getattr(self, name)}.")
        if self.num_starts > self.num_candidates:
            raise ValueError(f"`num_starts` ({self.num_starts}) must not exceed `num_candidates`.")
        for name in ("search_steps", "extrema_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"`{name}` must be ≥ 0, got {getattr(self, name)}.")
        size = self.initial_design_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
            raise ValueError(f"`initial_design_size` must be None or a positive int, got {size!r}.")

    def design_size(self, dimension: int) -> int:
        """The number of successful evaluations before the model is used."""
        return max(dimension, 2) if self.initial_design_size is None else self.initial_design_size

    def init(
        self,
        X: Float[ArrayLike, "N D"],
        y: Float[ArrayLike, " N"],
        lower: Float[ArrayLike, " D"],
        upper: Float[ArrayLike, " D"],
        *,
        budget: int,
        f_plus: Float[ArrayLike, ""] | None = None,
        f_minus: Float[ArrayLike, ""] | None = None,
        eta_plus: Float[ArrayLike, ""] | None = None,
        eta_minus: Float[ArrayLike, ""] | None = None,
    ) -> BOState:
        """Start a maximisation on the box [`lower`, `upper`].

        **Arguments:**

        - `X`, `y`: the evaluations made so far, y = f(X) (N may be 0); a non-finite value
          marks a failed one, kept and fitted as censored at the lowest successful value
          (`active_learning.censor_failures`). Inputs outside the box are clipped to it.
        - `budget`: the number of evaluations the run makes after `init`, the initial design
          included.
        - `f_plus`, `f_minus`: approximate max and min of f (raw units); `eta_plus`,
          `eta_minus`: their looseness (sd, raw units; default: the learner's
          `eta_*_squared_per_dimension`).

        `ValueError` for bad shapes, lower ≥ upper, a non-finite bound, f⁻ ≥ f⁺, η ≤ 0, a
        budget that leaves no evaluation after the initial design, or an acquisition that
        needs a missing bound (bounded entropy search: f⁺ or f⁻; ERM: f⁺).
        """
        lower, upper = check_box(lower, upper)
        dtype = lower.dtype
        dimension = lower.shape[0]
        X, y = as_floating(X, "X").astype(dtype), as_floating(y, "y").astype(dtype)
        if X.ndim != 2 or X.shape[1] != dimension:
            raise ValueError(f"`X` must have shape (num_points, {dimension}), got shape {X.shape}.")
        if y.shape != (X.shape[0],):
            raise ValueError(f"`y` must have shape ({X.shape[0]},) to match X {X.shape}, got shape {y.shape}.")
        design = self.design_size(dimension)
        if isinstance(budget, bool) or not isinstance(budget, int) or X.shape[0] + budget <= design:
            raise ValueError(
                f"`budget` ({budget!r}) plus the {X.shape[0]} given evaluations must exceed the initial "
                f"design size ({design}), so that the model proposes at least one point."
            )
        bounds = _check_bounds(f_plus, f_minus, eta_plus, eta_minus, dtype)
        self.acquisition.check_bounds(bounds[0] is not None, bounds[1] is not None)
        u = (X - lower[None, :]) / (upper - lower)[None, :]
        usable = jnp.isfinite(y) & jnp.all(jnp.isfinite(u), axis=1)
        evaluations = Evaluations.start(_clip_to_unit(u), y, jnp.zeros_like(y), usable, budget)
        return BOState(evaluations, lower, upper, *bounds)

    @public_jit()
    def ask(self, state: BOState, key: PRNGKeyArray) -> tuple[Float[Array, " D"], BOAskInfo]:
        """The next point to evaluate (original space): uniform while fewer than the initial
        design size of evaluations succeeded, then the maximiser of the acquisition on the
        surrogate refitted by ML-II (Alg. 2), failed evaluations fitted as censored at the
        lowest successful value. Should the search return a failed evaluation's input
        (`active_learning.repeats_failure`), the uniform point is asked instead."""
        dtype = state.evaluations.values.dtype
        initial_key, model_key = jax.random.split(key)
        random_point = jax.random.uniform(initial_key, (state.dimension,), dtype)
        design = jnp.sum(state.evaluations.succeeded, dtype=jnp.int32) < self.design_size(state.dimension)
        design_info = BOAskInfo(
            jnp.ones((), bool),
            jnp.asarray(jnp.nan, dtype),
            jnp.asarray(-1, jnp.int32),
            jnp.zeros((), bool),
            jnp.zeros((), jnp.int32),
        )
        u, info = jax.lax.cond(design, lambda: (random_point, design_info), lambda: propose(self, state, model_key))
        evaluations = state.evaluations
        u = jnp.where(repeats_failure(u, evaluations.inputs, evaluations.censored), random_point, u)
        return state.scale_from_unit(u), info

    @public_jit()
    def record(
        self,
        state: BOState,
        x: Float[ArrayLike, " D"],
        y: Float[ArrayLike, ""],
        noise_sd: Float[ArrayLike, ""] | None = None,
    ) -> tuple[BOState, Bool[Array, ""]]:
        """Store the evaluation y = f(x) (original space); a NaN/±inf `y` is stored as failed,
        with its input, and fitted as censored at the lowest successful value (`ask`)."""
        if noise_sd is not None:
            raise ValueError(
                "bo.BO does not model per-evaluation noise: `noise_sd` must be None "
                "(the surrogate fits one noise variance to all evaluations)."
            )
        dtype = state.evaluations.values.dtype
        x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
        if x.shape != (state.dimension,) or y.shape != ():
            raise ValueError(f"`x` must have shape ({state.dimension},) and `y` be a scalar, got {x.shape}, {y.shape}.")
        u = state.scale_to_unit(x)
        good = jnp.isfinite(y) & jnp.all(jnp.isfinite(u))
        evaluations = state.evaluations.record(_clip_to_unit(u), y, jnp.zeros((), dtype), good)
        return eqx.tree_at(lambda s: s.evaluations, state, evaluations), good

    def update(self, state: BOState, key: PRNGKeyArray) -> tuple[BOState, BOUpdateInfo]:
        """Nothing: the surrogate is refitted in every `ask`."""
        return state, BOUpdateInfo()

    def progress_summary(self, state: BOState) -> dict[str, Array | tuple[Array, Array]]:
        """The best value so far (−∞ before the first success; of −f in `bo.minimize`) and the
        failed evaluations, for the progress display."""
        evaluations = state.evaluations
        best = jnp.max(jnp.where(evaluations.succeeded, evaluations.values, -jnp.inf))
        return {"best": best, **super().progress_summary(state)}

    def result(self, state: BOState) -> BOResult:
        """The `BOResult` of a (finished or unfinished) maximisation; for one run, not a batch."""
        require_single_run(state, "BO")
        evaluations = state.evaluations
        if not np.asarray(evaluations.succeeded).any():
            raise ValueError("BO.result: no evaluation has succeeded yet.")
        X, y = evaluations.succeeded_rows(jax.vmap(state.scale_from_unit)(evaluations.inputs), evaluations.values)
        best = int(np.argmax(np.asarray(y)))  # the best row taken in NumPy, as the rows were
        x_best, y_best = (jax.device_put(np.asarray(rows)[best]) for rows in (X, y))
        return BOResult(x_best, y_best, X, y, int(evaluations.num_failed))
