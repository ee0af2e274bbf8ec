"""Reading a batch of states (the output of `jax.vmap`) one member at a time."""

import jax
from jaxtyping import PyTree


def unstack(batched: PyTree) -> list[PyTree]:
    """The members of a batched pytree: `[tree_0, …, tree_{B−1}]`, each with the leading
    axis of every array leaf indexed out. For a batch of states from
    `jax.vmap(...)` over seeds: `[learner.result(state) for state in unstack(states)]`."""
    leaves = [leaf for leaf in jax.tree.leaves(batched) if hasattr(leaf, "shape")]
    if not leaves or any(leaf.ndim == 0 for leaf in leaves):
        raise ValueError("`unstack` needs a batched pytree: every array leaf must have a leading batch axis.")
    sizes = {leaf.shape[0] for leaf in leaves}
    if len(sizes) != 1:
        raise ValueError(f"the array leaves of the batch have different leading sizes {sorted(sizes)}.")
    (size,) = sizes
    return [
        jax.tree.map(lambda leaf, i=index: leaf[i] if hasattr(leaf, "shape") else leaf, batched)
        for index in range(size)
    ]
