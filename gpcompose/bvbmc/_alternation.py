"""How BVBMC alternates its acquisitions, as modules: the choices of `BVBMC.alternation`,
each picking which of the learner's `acquisitions` an iteration maximises (Naiff 2019,
thesis §7.2)."""

import abc

import equinox as eqx
import jax
from jaxtyping import Array, Int, PRNGKeyArray


class AbstractAlternation(eqx.Module):
    """A rule for the acquisition of an iteration: `alternation(num_acquisitions,
    num_evaluations, key)` is its index in `BVBMC.acquisitions`."""

    @abc.abstractmethod
    def __call__(self, num_acquisitions: int, num_evaluations: Int[Array, ""], key: PRNGKeyArray) -> Int[Array, ""]:
        """The index, in 0 … `num_acquisitions` − 1, of the acquisition used after
        `num_evaluations` evaluations; `key` is this iteration's."""


class RandomAlternation(AbstractAlternation):
    """Uniformly at random, with `key` (the thesis's experiments, §7.2)."""

    def __call__(self, num_acquisitions, num_evaluations, key):
        return jax.random.randint(key, (), 0, num_acquisitions)


class CyclicAlternation(AbstractAlternation):
    """In turn: the number of evaluations so far modulo the number of acquisitions [ours]."""

    def __call__(self, num_acquisitions, num_evaluations, key):
        return num_evaluations % num_acquisitions
