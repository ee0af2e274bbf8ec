import equinox as eqx
from jaxtyping import Array, Bool, Float, Int

from ..active_learning import AbstractLearnerState, Evaluations


class BOState(AbstractLearnerState):
    """A Bayesian-optimisation run (maximisation).

    `evaluations` holds every evaluation, the given ones first, failed ones included: inputs
    scaled to the unit cube [0, 1]^D (Nguyen, Deisenroth & Osborne 2021, Sec. 5), values in
    raw units. The bounds f⁺, f⁻ and their looseness η₊, η₋ are in raw units; an η of None
    means the learner's default in standardised units.
    """

    evaluations: Evaluations
    lower: Float[Array, " D"]
    upper: Float[Array, " D"]
    f_plus: Float[Array, ""] | None
    f_minus: Float[Array, ""] | None
    eta_plus: Float[Array, ""] | None
    eta_minus: Float[Array, ""] | None

    @property
    def dimension(self) -> int:
        """The input dimension D."""
        return self.lower.shape[-1]

    def scale_to_unit(self, x: Float[Array, " D"]) -> Float[Array, " D"]:
        """Map raw inputs to the unit cube: u = (x − lower)/(upper − lower)."""
        return (x - self.lower) / (self.upper - self.lower)

    def scale_from_unit(self, u: Float[Array, " D"]) -> Float[Array, " D"]:
        """Map unit-cube inputs back to raw units: x = lower + (upper − lower) u."""
        return self.lower + (self.upper - self.lower) * u


class BOAskInfo(eqx.Module):
    """Diagnostics of one `ask`: whether the point is from the uniform initial design
    (`design`), the acquisition's value at it (`value`, in the acquisition's own units on
    standardised outputs; NaN for design points and random search), for bounded entropy
    search the number of accepted samples (`num_accepted`, −1 otherwise) and whether EI
    chose the point instead (`fell_back`), and the number of evaluations above the
    square-root GP's offset c that its fit clamped (`num_clamped`, 0 without it)."""

    design: Bool[Array, ""]
    value: Float[Array, ""]
    num_accepted: Int[Array, ""]
    fell_back: Bool[Array, ""]
    num_clamped: Int[Array, ""]


class BOUpdateInfo(eqx.Module):
    """`BO.update` changes nothing (the surrogate is refitted in `ask`), so it reports nothing."""


class BOResult(eqx.Module):
    """Outcome of a BO run: the best evaluation (`x_best`, `y_best`), every successful
    evaluation (`X`, `y`, the given ones included, in the original space and sign) and the
    number of evaluations after `init` that failed."""

    x_best: Float[Array, " D"]
    y_best: Float[Array, ""]
    X: Float[Array, "N D"]
    y: Float[Array, " N"]
    num_failed: int = eqx.field(static=True)
