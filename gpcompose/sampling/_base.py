import abc

import equinox as eqx
from jaxtyping import Array, Float, Int


class AbstractSamples(eqx.Module):
    """A batch of M random functions g_1, …, g_M of x ∈ R^D (posterior samples).

    `samples(X)` evaluates all of them at the rows of `X`; `samples.evaluate(m, x)`
    evaluates sample `m` at one point, which is what a per-sample search (`vmap` over
    `m`) differentiates.
    """

    @property
    @abc.abstractmethod
    def num_samples(self) -> int:
        """M."""

    @abc.abstractmethod
    def __call__(self, X: Float[Array, "Q D"]) -> Float[Array, "M Q"]:
        """g_m(X[q]) for every sample m and row q."""

    @abc.abstractmethod
    def evaluate(self, index: Int[Array, ""], x: Float[Array, " D"]) -> Float[Array, ""]:
        """g_index(x) for one sample and one point."""
