import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from gpcompose._select import select_tree


class Pair(eqx.Module):
    value: jnp.ndarray
    label: str = eqx.field(static=True)
    scale: float = 1.0  # a non-array leaf


def test_select_tree_picks_array_leaves_by_the_flag_and_keeps_the_first_trees_other_leaves():
    first, second = Pair(jnp.arange(3.0), "a", 2.0), Pair(-jnp.arange(3.0), "a", 3.0)
    chosen = select_tree(jnp.asarray(False), first, second)
    np.testing.assert_array_equal(chosen.value, -jnp.arange(3.0))
    assert chosen.scale == 2.0


def test_select_tree_under_vmap_selects_per_batch_member():
    flags = jnp.array([True, False])
    chosen = jax.vmap(select_tree)(flags, {"x": jnp.ones((2, 2))}, {"x": jnp.zeros((2, 2))})
    np.testing.assert_array_equal(chosen["x"], [[1.0, 1.0], [0.0, 0.0]])
