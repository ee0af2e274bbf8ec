"""What an acquisition of `bo.BO` sees when it proposes a point, and what it returns."""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from ..acquisition import MultistartResult, log_expected_improvement, maximize_on_box
from ..bounded import Bounds
from ..sampling import sample_extrema
from ._surrogate import Surrogate


class ProposalContext(eqx.Module):
    """The data, the fitted surrogate and the search settings of one proposal, in the unit
    cube [0, 1]^D and in standardised output units (mean 0, sd 1 over the successful
    evaluations).

    `inputs` holds every row of the evaluation buffer (failed rows at their inputs, which the
    surrogate fits as censored observations; free rows are placeholders; `succeeded` marks the
    successful rows). `surrogate` is None for an acquisition with `uses_surrogate` False;
    `bounds` is None when neither f⁺ nor f⁻ was given; `best` is the largest successful
    standardised value.
    """

    inputs: Float[Array, "C D"]
    succeeded: Bool[Array, " C"]
    surrogate: Surrogate | None
    bounds: Bounds | None
    best: Float[Array, ""]
    num_candidates: int = eqx.field(static=True)
    num_starts: int = eqx.field(static=True)
    search_steps: int = eqx.field(static=True)
    extrema_steps: int = eqx.field(static=True)

    @property
    def dimension(self) -> int:
        """The input dimension D."""
        return self.inputs.shape[1]

    def maximize(
        self,
        key: PRNGKeyArray,
        objective: Callable[[Float[Array, " D"]], Float[Array, ""]],
        extra: Float[Array, "E D"],
    ) -> MultistartResult:
        """Maximise `objective` on the unit cube from `num_candidates` uniform candidates and
        the `extra` ones, with `num_starts` Adam restarts of `search_steps` steps
        (`acquisition.maximize_on_box`)."""
        unit_lower = jnp.zeros(self.dimension, self.inputs.dtype)
        unit_upper = jnp.ones(self.dimension, self.inputs.dtype)
        return maximize_on_box(
            key,
            objective,
            unit_lower,
            unit_upper,
            num_candidates=self.num_candidates,
            num_starts=self.num_starts,
            num_steps=self.search_steps,
            extra_candidates=extra,
        )

    def extrema(self, key: PRNGKeyArray, num_samples: int, num_features: int):
        """The maximisers and maxima on the unit cube of `num_samples` pathwise samples of the
        surrogate with `num_features` random Fourier features, searched in single precision
        with `num_starts` Adam restarts of `extrema_steps` steps, then polished by Newton steps
        (`sampling.sample_extrema`)."""
        sample_key, search_key = jax.random.split(key)
        samples = self.surrogate.samples(sample_key, num_samples, num_features)
        unit_lower = jnp.zeros(self.dimension, self.inputs.dtype)
        return sample_extrema(
            search_key,
            samples,
            unit_lower,
            unit_lower + 1.0,
            num_candidates=self.num_candidates,
            num_starts=self.num_starts,
            num_steps=self.extrema_steps,
        )

    def expected_improvement(self) -> Callable[[Float[Array, " D"]], Float[Array, ""]]:
        """u ↦ log EI(u) over `best` on the surrogate."""

        def objective(u):
            mean, variance = self.surrogate.predict(u[None, :])
            return log_expected_improvement(mean[0], variance[0], self.best)

        return objective


class Proposal(eqx.Module):
    """An acquisition's choice: the point `x` in the unit cube, the acquisition's `value`
    there (NaN for random search), and for bounded entropy search the number of accepted
    samples (`num_accepted`, −1 for the other acquisitions) and whether EI chose the point
    instead (`fell_back`)."""

    x: Float[Array, " D"]
    value: Float[Array, ""]
    num_accepted: Int[Array, ""]
    fell_back: Bool[Array, ""]

    @classmethod
    def of(cls, x: Float[Array, " D"], value: Float[Array, ""]) -> "Proposal":
        """The proposal of an acquisition other than bounded entropy search."""
        return cls(x, jnp.asarray(value, x.dtype), jnp.asarray(-1, jnp.int32), jnp.zeros((), bool))
