"""examples/tour.py (issue 9, `make demo`): the tour runs each listed example's `run`, logs its
progress, and writes a summary table (Markdown and JSON) beside the examples' plots.

The five examples themselves have smoke tests of their own (`test_example_<name>.py`, checked
here to exist for every name in the tour), so the tour's machinery runs on a stand-in example
written into `tmp_path`: running the real five again would double the suite's longest tests."""

import json
import pathlib
import sys

import jax

from .examples_loader import load_example

tour = load_example("tour")

STAND_IN = """
import pathlib


def run(key, *, out_dir, smoke=False):
    path = pathlib.Path(out_dir) / "stand_in.png"
    path.write_bytes(b"png")
    return {"method": "Stand-in", "problem": "none", "metric": "mean |error|", "value": 0.25,
            "reference": "0; |bias| small", "seconds": 1.5, "png": str(path), "smoke": smoke}
"""


def test_every_example_of_the_tour_has_a_smoke_test():
    tests = pathlib.Path(__file__).resolve().parent
    for name in tour.TOUR:
        assert (tour.EXAMPLES_DIR / f"{name}.py").is_file(), name
        assert (tests / f"test_example_{name}.py").is_file(), name


def test_tour_runs_the_examples_and_writes_the_summary(tmp_path, monkeypatch):
    (tmp_path / "tour_stand_in.py").write_text(STAND_IN)
    monkeypatch.syspath_prepend(str(tmp_path))
    out_dir = tmp_path / "out"
    log = []
    rows = tour.run_tour(
        jax.random.key(0), out_dir=out_dir, smoke=True, names=("tour_stand_in",) * 2, log=lambda *a, **k: log.append(a)
    )
    sys.modules.pop("tour_stand_in", None)
    assert [row["smoke"] for row in rows] == [True, True]
    assert len(log) == 4 and log[0][0].startswith("[1/2] tour_stand_in") and "mean |error| = 0.25" in log[1][0]

    table = tour.write_summary(rows, 3.25, out_dir)
    lines = table.splitlines()
    assert lines[0] == "| method | problem | metric | value | reference | seconds |"
    # the "|" inside cells is escaped, so every row has the header's six columns
    assert lines[2] == "| Stand-in | none | mean \\|error\\| | 0.25 | 0; \\|bias\\| small | 1.5 |"
    assert (out_dir / "summary.md").read_text() == table + "\n\nTotal wall time 3.2 s.\n"
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["total_seconds"] == 3.25
    assert summary["rows"][0] == {
        "method": "Stand-in",
        "problem": "none",
        "metric": "mean |error|",
        "value": 0.25,
        "reference": "0; |bias| small",
        "seconds": 1.5,
        "png": str(out_dir / "stand_in.png"),
    }
