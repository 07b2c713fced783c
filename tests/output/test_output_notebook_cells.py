"""A notebook's records name their cell in the pylint, JUnit, rdjson, GitLab and SARIF outputs,
through the real `check` command on a notebook nbformat wrote."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import nbformat
import pytest

KERNEL_CELL = "@wp.kernel\ndef scale(x: wp.array(dtype=wp.float16)):\n    i = wp.tid()\n    x[i] = x[i] * 2.0"
PY_SOURCE = "import warp as wp\n\n\n" + KERNEL_CELL + "\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Scale"),
        nbformat.v4.new_code_cell("%matplotlib inline\nimport warp as wp"),
        nbformat.v4.new_code_cell(KERNEL_CELL),
    ]
    nbformat.write(nb, str(tmp_path / "nb.ipynb"))
    (tmp_path / "k.py").write_text(PY_SOURCE)
    return tmp_path


def check(cwd: Path, output_format: str, *paths: str) -> str:
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", *paths, "--output-format", output_format],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    return p.stdout


def test_pylint_names_the_cell_in_the_message(workspace: Path) -> None:
    lines = check(workspace, "pylint", "nb.ipynb", "k.py").splitlines()
    assert lines[0].startswith("nb.ipynb:4: [WH003] cell 3: `x[i] * 2.0` mixes float16 and float32")
    assert lines[1].startswith("k.py:7: [WH003] `x[i] * 2.0`")  # a .py file's line is unchanged


def test_junit_names_the_cell_in_the_testcase(workspace: Path) -> None:
    root = ET.fromstring(check(workspace, "junit", "nb.ipynb", "k.py"))
    cases = {c.get("classname"): c for c in root.iter("testcase")}
    cell_case = cases["nb.ipynb"]
    assert cell_case.get("name") == "nb.ipynb:cell 3:4:12 WH003"
    assert cell_case.get("line") == "4"
    failure = cell_case.find("failure")
    assert failure is not None and failure.text is not None
    assert failure.text.startswith("nb.ipynb:cell 3:4:12: WH003 [error]")
    assert cases["k.py"].get("name") == "k.py:7:12 WH003"


def test_rdjson_names_the_cell_and_offers_no_suggestion_into_the_json(workspace: Path) -> None:
    document: dict[str, Any] = json.loads(check(workspace, "rdjson", "nb.ipynb", "k.py"))
    by_path = {d["location"]["path"]: d for d in document["diagnostics"]}
    cell = by_path["nb.ipynb"]
    assert cell["message"].startswith("cell 3: `x[i] * 2.0`")
    assert cell["location"]["range"]["start"] == {"line": 4, "column": 12}
    assert "suggestions" not in cell  # its edit is in the cell, not in the notebook's JSON text
    plain = by_path["k.py"]
    assert plain["message"].startswith("`x[i] * 2.0`") and plain["suggestions"]


def test_gitlab_names_the_cell_in_the_description(workspace: Path) -> None:
    issues: list[dict[str, Any]] = json.loads(check(workspace, "gitlab", "nb.ipynb", "k.py"))
    by_path = {i["location"]["path"]: i for i in issues}
    assert by_path["nb.ipynb"]["description"].startswith("WH003: cell 3: `x[i] * 2.0`")
    assert by_path["nb.ipynb"]["location"]["lines"] == {"begin": 4, "end": 4}
    assert by_path["k.py"]["description"].startswith("WH003: `x[i] * 2.0`")
    # the fingerprint reads the cell's line: same rule and line text as in k.py, another path
    assert by_path["nb.ipynb"]["fingerprint"] != by_path["k.py"]["fingerprint"]


def test_sarif_fix_regions_name_the_cell(workspace: Path) -> None:
    log: dict[str, Any] = json.loads(check(workspace, "sarif", "nb.ipynb"))
    (result,) = log["runs"][0]["results"]
    (replacement,) = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["deletedRegion"]["properties"] == {"cell": 3}
    assert replacement["deletedRegion"]["startLine"] == 4
