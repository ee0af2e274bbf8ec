"""Operations on whole pytrees of parameters (kernels, means, likelihoods, …)."""

from collections.abc import Callable
from typing import TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, ArrayLike, Bool, Float, PyTree

from ._parameter import AbstractParameter
from ._positive import Positive
from ._real import Real

Tree = TypeVar("Tree")


def is_parameter(node) -> bool:
    """True for a hyperparameter leaf (an `AbstractParameter`): the `is_leaf` of the tree
    functions here, so that a parameter is never split into its fields."""
    return isinstance(node, AbstractParameter)


def value_of(x: AbstractParameter | Float[ArrayLike, "*shape"]) -> Float[Array, "*shape"]:
    """The constrained value of a parameter, or `x` itself as an array."""
    return x.value if isinstance(x, AbstractParameter) else jnp.asarray(x)


def as_positive(x) -> AbstractParameter:
    """Field converter: wrap a plain number or array into `Positive`, keep parameters."""
    return x if isinstance(x, AbstractParameter) else Positive(x)


def positive_converter(name: str) -> Callable[[object], AbstractParameter]:
    """Field converter `as_positive` for the field `name`: a value that is not > 0 (a
    negative number, zero, NaN) raises a `ValueError` that names `name`."""

    def convert(x) -> AbstractParameter:
        if isinstance(x, AbstractParameter):
            return x
        try:
            return Positive(x)
        except ValueError as error:
            raise ValueError(f"`{name}` must be > 0 (a Positive parameter), got {jnp.asarray(x)}.") from error

    return convert


def as_real(x) -> AbstractParameter:
    """Field converter: wrap a plain number or array into `Real`, keep parameters."""
    return x if isinstance(x, AbstractParameter) else Real(x)


def log_prior(tree: PyTree) -> Float[Array, ""]:
    """Σ of every parameter's prior in its unconstrained coordinate (with log-Jacobians).

    Parameters without a prior contribute 0 (a flat prior on the unconstrained value).
    """
    nodes = [n for n in jax.tree_util.tree_leaves(tree, is_leaf=is_parameter) if is_parameter(n)]
    if not nodes:
        return jnp.zeros(())
    return sum(node.log_prior() for node in nodes)


def satisfies_constraints(tree: PyTree) -> Bool[Array, ""]:
    """Whether every parameter of `tree` `satisfies_constraint` (True for a tree without
    parameters): a fit that would return a parameter outside its constraint checks this."""
    nodes = [n for n in jax.tree_util.tree_leaves(tree, is_leaf=is_parameter) if is_parameter(n)]
    return jnp.all(jnp.asarray([node.satisfies_constraint() for node in nodes], dtype=bool))


def trainable_spec(tree: PyTree) -> PyTree[bool]:
    """Filter spec marking the unconstrained leaves of non-`Fixed` parameters."""
    return jax.tree_util.tree_map(
        lambda node: node.trainable_spec() if is_parameter(node) else False,
        tree,
        is_leaf=is_parameter,
    )


def partition(tree: Tree) -> tuple[Tree, Tree]:
    """Split into (trainable, rest) with `eqx.partition`; rejoin with `eqx.combine`."""
    return eqx.partition(tree, trainable_spec(tree))


def flatten(tree: Tree) -> tuple[Float[Array, " P"], Callable[[Float[Array, " P"]], Tree]]:
    """Ravel the trainable leaves into one vector.

    **Returns:** `(vector, unflatten)` where `unflatten(vector)` rebuilds the whole tree
    (non-trainable leaves are taken from `tree`). SVGD particles and optimistix iterates
    are such vectors.
    """
    trainable, rest = partition(tree)
    vector, unravel = ravel_pytree(trainable)

    def unflatten(new_vector: Float[Array, " P"]) -> Tree:
        return eqx.combine(unravel(new_vector), rest)

    return vector, unflatten
