"""Checkpoint files of an active-learning run: a JSON header line, then the Equinox
serialisation of the learner and its state (never pickle)."""

import json
import os
import pathlib

import equinox as eqx
import jax
import numpy as np
from jaxtyping import PRNGKeyArray

from ._learner import AbstractActiveLearner, AbstractLearnerState

FORMAT = "gpcompose-checkpoint/1"


def _leaf_shapes(tree) -> list[list]:
    """[shape, dtype] of every array leaf of `tree` (arrays or `jax.ShapeDtypeStruct`s)."""
    leaves = jax.tree.leaves(eqx.filter(tree, lambda leaf: hasattr(leaf, "shape") and hasattr(leaf, "dtype")))
    return [[list(leaf.shape), str(np.dtype(leaf.dtype))] for leaf in leaves]


def _library_version() -> str:
    from .. import __version__

    return __version__


def _header(learner: AbstractActiveLearner, state: AbstractLearnerState, key: PRNGKeyArray | None) -> dict:
    if key is not None and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key_record = {"impl": str(jax.random.key_impl(key)), "data": np.asarray(jax.random.key_data(key)).tolist()}
    elif key is not None:
        key_record = {"impl": None, "data": np.asarray(key).tolist()}
    else:
        key_record = None
    return {
        "format": FORMAT,
        "library_version": _library_version(),
        "method": type(learner).__name__,
        "configuration": str(jax.tree.structure(learner)),
        "state_leaves": _leaf_shapes(state),
        "num_evaluations": int(state.evaluations.num_evaluations),
        "budget": int(state.evaluations.budget),
        "key": key_record,
    }


def save_checkpoint(
    path: str | os.PathLike,
    learner: AbstractActiveLearner,
    state: AbstractLearnerState,
    key: PRNGKeyArray | None = None,
) -> None:
    """Write `learner`, `state` and the run's `key` to `path` (replaced atomically, so an
    interruption mid-write leaves the previous checkpoint intact)."""
    path = pathlib.Path(path)
    temporary = path.with_name(path.name + ".partial")
    with open(temporary, "wb") as file:
        file.write((json.dumps(_header(learner, state, key)) + "\n").encode())
        eqx.tree_serialise_leaves(file, (learner, state))
    os.replace(temporary, path)


def read_checkpoint_header(path: str | os.PathLike) -> dict:
    """The JSON header of a checkpoint file (method, library version, shapes, progress)."""
    with open(path, "rb") as file:
        line = file.readline()
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)!r} is not a gpcompose checkpoint file.")
    return header


def load_checkpoint(
    path: str | os.PathLike, learner: AbstractActiveLearner, like: AbstractLearnerState, *, budget: int | None = None
) -> tuple[AbstractActiveLearner, AbstractLearnerState, PRNGKeyArray | None]:
    """`(learner, state, key)` saved at `path` by `save_checkpoint` or `run_black_box`.

    `learner` and `like` give the structure to load into: the learner configured as the
    saved run was, and a state of the same data sizes, e.g.
    `eqx.filter_eval_shape(learner.init, X, y, ..., budget=...)` (no computation; any
    budget). A checkpoint of another method, of a learner with other settings (the static
    ones included), or of a state with other shapes or dtypes raises `ValueError` saying
    which differs. `budget`: the budget of the loaded run, by default the saved one; another
    one extends (or shortens) the run (`learner.with_budget`), so that driving it on runs
    the extra evaluations; a budget below the evaluations already made raises `ValueError`.
    """
    header = read_checkpoint_header(path)
    method = type(learner).__name__
    if header["method"] != method:
        raise ValueError(f"the checkpoint {os.fspath(path)!r} is of a {header['method']} run, not of a {method} run.")
    if header["configuration"] != str(jax.tree.structure(learner)):
        raise ValueError(
            f"the checkpoint {os.fspath(path)!r} was written by a {method} with other settings: "
            f"saved {header['configuration']}, given {jax.tree.structure(learner)}."
        )
    saved_budget = header.get("budget")
    if not isinstance(saved_budget, int):
        raise ValueError(
            f"the checkpoint {os.fspath(path)!r} records no budget: it was written by an earlier gpcompose, "
            "whose states this version does not read."
        )
    if budget is None:
        budget = saved_budget
    elif budget < header["num_evaluations"]:
        raise ValueError(
            f"the checkpoint {os.fspath(path)!r} holds {header['num_evaluations']} evaluations, more than "
            f"the `budget` of {budget}: pass a budget ≥ {header['num_evaluations']}."
        )
    # the structure of the saved state: `like` with the saved budget's buffers
    like = eqx.filter_eval_shape(learner.with_budget, like, saved_budget)
    shapes = _leaf_shapes(like)
    if header["state_leaves"] != shapes:
        differ = [
            f"leaf {index}: saved {saved}, expected {wanted}"
            for index, (saved, wanted) in enumerate(zip(header["state_leaves"], shapes))
            if saved != wanted
        ]
        if len(header["state_leaves"]) != len(shapes):
            differ.insert(0, f"saved {len(header['state_leaves'])} arrays, expected {len(shapes)}")
        raise ValueError(
            f"the checkpoint {os.fspath(path)!r} holds a state of other shapes than `like` "
            f"(other data sizes): {'; '.join(differ[:3])}."
        )
    with open(path, "rb") as file:
        file.readline()
        learner, state = eqx.tree_deserialise_leaves(file, (learner, like))
    if saved_budget != budget:
        state = learner.with_budget(state, budget)
    record = header["key"]
    if record is None:
        key = None
    elif record["impl"] is None:
        key = jax.numpy.asarray(record["data"], jax.numpy.uint32)
    else:
        key = jax.random.wrap_key_data(jax.numpy.asarray(record["data"], jax.numpy.uint32), impl=record["impl"])
    return learner, state, key
