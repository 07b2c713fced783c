"""`ci` lists a notebook's findings in cell order, as `check` does: a record's line restarts in every cell,
so sorting by line alone put cell 2's line 3 before cell 1's line 7."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CELL_1 = (
    "import warp as wp\n\n\n\n\n@wp.kernel\ndef a(x: wp.array(dtype=float)):\n    x[0] = wp.sqroot(1.0)\n"
)
CELL_2 = "@wp.kernel\ndef b(x: wp.array(dtype=float)):\n    x[0] = wp.sqroot(2.0)\n"


def _notebook(*sources: str) -> str:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None}
        for s in sources
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _cells(command: str, path: Path) -> list[tuple[int, int]]:
    done = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", command, str(path), "--output-format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=path.parent,
    )
    assert done.returncode == 1, done.stderr
    return [(r["location"]["cell"], r["location"]["line"]) for r in json.loads(done.stdout)["results"]]


def test_ci_lists_a_notebooks_findings_in_cell_order(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(CELL_1, CELL_2), encoding="utf-8")
    expected = [(1, 8), (2, 3)]
    assert _cells("check", path) == expected
    assert _cells("ci", path) == expected
