"""docs/step-protocol.md's table of entry points is the code's: every listed signature matches
the function, and every row follows the protocol (the key second after the state in `step`
and `ask`, keyword-only in `init`, never in `tell` nor stored in a state; `step`, `ask` and
`tell` return a pair with their info)."""

import dataclasses
import importlib
import inspect
import pathlib
import re
import typing

import pytest

from gpcompose.active_learning import AbstractActiveLearner

PAGE = pathlib.Path(__file__).parent.parent / "docs" / "step-protocol.md"
CALL = re.compile(r"`(\w+)\(([^)]*)\)`")


def table_rows() -> list[dict[str, str]]:
    """The rows of the page's table of entry points, as {column: cell}."""
    lines = PAGE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| method |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))))
    return rows


def resolve(dotted: str):
    module, _, name = dotted.strip("`").rpartition(".")
    return getattr(importlib.import_module(module), name)


def documented_parameters(text: str) -> list[tuple[str, str]]:
    """(name, kind) of each parameter written in a call cell: `*` starts keyword-only ones."""
    parameters, keyword_only = [], False
    for token in (t.strip() for t in text.split(",") if t.strip()):
        if token == "*":
            keyword_only = True
        elif token.startswith("*"):
            parameters.append((token[1:], "VAR_POSITIONAL"))
        else:
            parameters.append((token, "KEYWORD_ONLY" if keyword_only else "POSITIONAL_OR_KEYWORD"))
    return parameters


def actual_parameters(function) -> list[tuple[str, str]]:
    signature = inspect.signature(function)
    return [(p.name, p.kind.name) for p in signature.parameters.values() if p.name != "self"]


ROWS = table_rows()
CALLS = [
    (row["method"], resolve(row["algorithm"]), name, arguments)
    for row in ROWS
    for column in ("init", "step / ask", "tell", "result")
    for name, arguments in CALL.findall(row[column])
]


def test_the_table_lists_every_method():
    methods = {row["method"] for row in ROWS}
    assert {"SVGD", "SteinGP", "CAVI", "SVI", "Gibbs", "Boosting", "SVBMC", "BVBMC", "BO"} <= methods


@pytest.mark.parametrize("method, algorithm, name, arguments", CALLS, ids=[f"{c[0]}.{c[2]}" for c in CALLS])
def test_signature_matches_the_table(method, algorithm, name, arguments):
    assert actual_parameters(getattr(algorithm, name)) == documented_parameters(arguments)


@pytest.mark.parametrize("method, algorithm, name, arguments", CALLS, ids=[f"{c[0]}.{c[2]}" for c in CALLS])
def test_signature_follows_the_protocol(method, algorithm, name, arguments):
    parameters = actual_parameters(getattr(algorithm, name))
    names = [p[0] for p in parameters]
    if name in ("step", "ask"):
        assert names[:2] == ["state", "key"] and parameters[1][1] == "POSITIONAL_OR_KEYWORD"
    elif name == "init":
        assert ("key", "POSITIONAL_OR_KEYWORD") not in parameters  # a key at init is keyword-only
    elif name == "tell":
        assert names[:3] == ["state", "x", "y"] and "key" not in names
    elif name == "result":
        assert names[0] == "state" and "key" not in names
    if name in ("step", "ask", "tell"):
        returned = typing.get_type_hints(getattr(algorithm, name)).get("return")
        assert typing.get_origin(returned) is tuple and len(typing.get_args(returned)) == 2, returned


@pytest.mark.parametrize("row", ROWS, ids=[row["method"] for row in ROWS])
def test_states_hold_no_key_and_learners_share_the_protocol(row):
    algorithm = resolve(row["algorithm"])
    state = resolve(row["state"])
    for field in dataclasses.fields(state):
        assert "key" not in field.name, f"{state.__name__}.{field.name} hides a key in the state"
    if "tell" in row["tell"]:
        assert issubclass(algorithm, AbstractActiveLearner)
        assert "tell" not in vars(algorithm), "tell comes from AbstractActiveLearner"


@pytest.mark.parametrize("row", ROWS, ids=[row["method"] for row in ROWS])
def test_info_types_of_the_table_exist(row):
    module = importlib.import_module(row["algorithm"].strip("`").rpartition(".")[0])
    for name in re.findall(r"[\w.]+", row["info"]):
        if "." in name:
            resolve(name)
        else:
            assert hasattr(module, name) or name == "TellInfo", f"{name} is not in {module.__name__}"
