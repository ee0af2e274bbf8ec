"""Every ```python block of README.md and of docs/**/*.md runs.

A file's blocks form one test: they run in order in one namespace, as one script, so a later
block uses the names of the earlier ones. Each runs in a fresh temporary working directory (a
block may write a file, a checkpoint say), with JAX's default type promotion rather than the
suite's strict one (tests/conftest.py), since that is what a reader who copies the block gets.
A traceback names the file and the line of the Markdown source.

A file with a block marked `<!-- slow -->` on the line before its fence is marked `slow`
(`pytest -m "not slow"` leaves it out); the default run runs every file.

Warnings: a `DeprecationWarning`, `PendingDeprecationWarning` or `FutureWarning` fails the test
(a block that uses an outdated API); other warnings are what the block shows its reader (the
`RuntimeWarning` of an interrupted run, say) and are not errors here.
"""

import pathlib
import re
import warnings

import jax
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)
SLOW_MARK = "<!-- slow -->"
OUTDATED_API = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def code_blocks(path):
    """`[(first line number, code, slow)]` of the ```python blocks of a Markdown file."""
    text = path.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start("code")) + 1
        preceding = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        blocks.append((line, match["code"], preceding == SLOW_MARK))
    return blocks


def documentation_files():
    """README.md and every page under docs/ that holds a ```python block."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [path for path in paths if code_blocks(path)]


def _parameter(path):
    marks = [pytest.mark.slow] if any(slow for _, _, slow in code_blocks(path)) else []
    return pytest.param(path, id=str(path.relative_to(ROOT)), marks=marks)


def test_the_documentation_has_code_blocks():
    names = {str(path.relative_to(ROOT)) for path in documentation_files()}
    assert {"README.md", "docs/getting-started.md"} <= names


@pytest.mark.parametrize("path", [_parameter(path) for path in documentation_files()])
def test_code_blocks_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    with (
        jax.numpy_dtype_promotion("standard"),
        jax.numpy_rank_promotion("allow"),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        for line, code, _ in code_blocks(path):
            # Blank lines in front put the block's lines at their line numbers in the file.
            exec(compile("\n" * (line - 1) + code, str(path), "exec"), namespace)
    outdated = [
        f"{warning.category.__name__}: {warning.message}"
        for warning in caught
        if issubclass(warning.category, OUTDATED_API)
    ]
    assert not outdated, outdated
