"""Notebooks (.ipynb) through `check`, `--fix`, `ci --static-only` and the output formats.

The notebooks are written by nbformat itself (as Jupyter writes them) and, for the layout tests,
by hand in other layouts (source as one string, 2-space indentation, non-ASCII text)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from warp_harness.engine import analyse_notebook
from warp_harness.notebooks import (
    NotebookError,
    join_cells,
    mask_cell,
    read_notebook,
    source_spans,
    write_cells,
)
from warp_harness.output.model import FileResult
from warp_harness.record import Location

KERNEL_CELL = (
    "@wp.kernel\n"
    "def scale(x: wp.array(dtype=wp.float16), n: wp.array(dtype=int)):\n"
    "    i = wp.tid()\n"
    "    x[i] = x[i] * 2.0\n"
    "    n[i] = 2.0"
)


def write_notebook(path: Path, cells: list[tuple[str, str]], language: str = "python") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": language}
    nb.metadata["custom"] = {"keep": [1, 2, "ü"]}
    for kind, source in cells:
        if kind == "code":
            cell = nbformat.v4.new_code_cell(source)
            cell.outputs = [nbformat.v4.new_output("stream", text="out ü\n")]
            cell.execution_count = 7
        else:
            cell = nbformat.v4.new_markdown_cell(source)
        nb.cells.append(cell)
    nbformat.write(nb, str(path))
    return path


def demo(path: Path) -> Path:
    return write_notebook(
        path,
        [
            ("markdown", "# Scaling\nSome text `x = %y`."),
            ("code", "%matplotlib inline\nimport warp as wp\n!nvidia-smi\nfiles = !ls"),
            ("code", KERNEL_CELL),
            ("code", "%%bash\nthis is not python (\n"),
            ("code", "%%time\nwp.launch(scale, dim=4, inputs=[None, None])"),
        ],
    )


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


# ------------------------------------------------------------------------------- masking and mapping


def test_magics_are_masked_line_for_line() -> None:
    text, masked = mask_cell("%time x = 1\n  !ls -l\ny = %env HOME\nobj?\nz = 1\n")
    assert text.splitlines() == ["pass", "  pass", "y = None", "pass", "z = 1"]
    assert masked == {0, 1, 2, 3}
    bash, hidden = mask_cell("%%bash\nfor f in *; do echo (; done\n")
    assert bash == "\n\n" and hidden == {0, 1}
    timed, hidden = mask_cell("%%timeit\nx = 1 + 1")
    assert timed == "\nx = 1 + 1" and hidden == {0}


def test_join_maps_lines_back_to_cells() -> None:
    joined = join_cells([(2, "a = 1\nb = 2"), (3, ""), (5, "c = 3\n")])
    assert joined.text == "a = 1\nb = 2\nc = 3\n"
    assert joined.place(1) == (2, 1)
    assert joined.place(2) == (2, 2)
    assert joined.place(3) == (5, 1)
    assert joined.module_line(5, 1) == 3


def test_kernel_cell_records_are_placed_in_their_cell(tmp_path: Path) -> None:
    path = demo(tmp_path / "nb.ipynb")
    analysis = analyse_notebook(path.read_text(), "nb.ipynb")
    placed = [(r.rule, r.location.cell, r.location.line, r.location.col) for r in analysis.records]
    assert ("WH003", 3, 4, 11) in placed
    assert ("WH003", 3, 5, 4) in placed
    # the %%bash cell is masked (no syntax error), the magics too
    assert not [r for r in analysis.records if r.rule == "WH000"]
    for record in analysis.records:
        assert record.fix is None or all(e.line <= 5 for e in record.fix.edits)


def test_same_code_in_a_py_file_gives_the_same_findings(tmp_path: Path) -> None:
    """The issue's complaint: a notebook reported nothing where the same code in .py did."""
    from warp_harness.engine import analyse_source

    nb = analyse_notebook(demo(tmp_path / "nb.ipynb").read_text(), "nb.ipynb")
    py = analyse_source("import warp as wp\n" + KERNEL_CELL + "\n", "k.py")
    assert sorted(r.rule for r in nb.records) == sorted(r.rule for r in py.records)
    assert {r.message for r in nb.records} == {r.message for r in py.records}


def test_other_language_notebooks_are_skipped(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "r.ipynb", [("code", "x <- c(1, 2)\n")], language="R")
    assert analyse_notebook(path.read_text(), "r.ipynb").records == []


def test_location_cell_round_trips_and_py_records_are_unchanged() -> None:
    with_cell = Location("nb.ipynb", 4, 11, 4, 14, cell=3)
    assert Location.from_dict(with_cell.to_dict()) == with_cell
    plain = Location("k.py", 4, 11)
    assert "cell" not in plain.to_dict()
    assert Location.from_dict(plain.to_dict()).cell is None


# ------------------------------------------------------------------------------- writing back


def _outside_sources(raw: str) -> str:
    spans = source_spans(raw)
    out, last = [], 0
    for start, end in spans:
        out.append(raw[last:start])
        last = end
    return "".join(out) + raw[last:]


@pytest.mark.parametrize("indent", [1, 2, 4])
def test_write_cells_changes_only_the_edited_source(tmp_path: Path, indent: int) -> None:
    path = demo(tmp_path / "nb.ipynb")
    raw = json.dumps(json.loads(path.read_text()), indent=indent, ensure_ascii=False) + "\n"
    new = write_cells(raw, {3: KERNEL_CELL.replace("2.0", "2")})
    assert _outside_sources(new) == _outside_sources(raw)
    assert read_notebook(new).cells[2].source == KERNEL_CELL.replace("2.0", "2")
    assert read_notebook(new).cells[1].source == read_notebook(raw).cells[1].source


def test_write_cells_keeps_a_string_source_a_string() -> None:
    raw = (
        '{"cells": [{"cell_type": "code", "metadata": {}, "source": "x = 1\\ny = 2", "outputs": [],\n'
        ' "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    )
    new = write_cells(raw, {1: "x = 10\ny = 2"})
    assert '"source": "x = 10\\ny = 2"' in new
    assert _outside_sources(new) == _outside_sources(raw)


def test_write_cells_lays_out_a_formerly_empty_list_as_nbformat_does() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("")]
    raw = nbformat.writes(nb)
    new = write_cells(raw, {1: "a = 1\nb = 2\n"})
    nb.cells[0].source = "a = 1\nb = 2\n"
    assert new == nbformat.writes(nb)


# ------------------------------------------------------------------------------- the command line


def test_check_text_output_names_the_cell(tmp_path: Path) -> None:
    demo(tmp_path / "nb.ipynb")
    done = run_cli("check", "nb.ipynb", "--no-cache", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "nb.ipynb:cell 3:4:12: WH003 [error]" in done.stdout
    assert "4 |     x[i] = x[i] * 2.0" in done.stdout  # the excerpt is the cell's line
    concise = run_cli("check", ".", "--no-cache", "--output-format", "concise", cwd=tmp_path)
    assert "nb.ipynb:cell 3:5:5: WH003" in concise.stdout  # a folder walk finds notebooks


def test_json_and_sarif_carry_the_cell(tmp_path: Path) -> None:
    demo(tmp_path / "nb.ipynb")
    data = json.loads(
        run_cli("check", "nb.ipynb", "--no-cache", "--output-format", "json", cwd=tmp_path).stdout
    )
    first = data["results"][0]
    assert first["location"]["cell"] == 3 and first["location"]["line"] == 4
    sarif = json.loads(
        run_cli("check", "nb.ipynb", "--no-cache", "--output-format", "sarif", cwd=tmp_path).stdout
    )
    location = sarif["runs"][0]["results"][0]["locations"][0]
    region = location["physicalLocation"]["region"]
    assert region["properties"] == {"cell": 3}
    assert region["startLine"] == 4 and region["snippet"]["text"] == "    x[i] = x[i] * 2.0"
    assert {"name": "cell 3", "fullyQualifiedName": "nb.ipynb#cell3"} in location["logicalLocations"]


def test_github_annotations_name_the_cell(tmp_path: Path) -> None:
    demo(tmp_path / "nb.ipynb")
    out = run_cli("check", "nb.ipynb", "--no-cache", "--output-format", "github", cwd=tmp_path).stdout
    assert "::error file=nb.ipynb,line=4,col=12,endLine=4,endColumn=22,title=WH003 (cell 3)::" in out


def test_fix_writes_into_the_cell_and_nothing_else(tmp_path: Path) -> None:
    path = demo(tmp_path / "nb.ipynb")
    before = path.read_text()
    done = run_cli("check", "nb.ipynb", "--no-cache", "--fix", cwd=tmp_path)
    assert "Fixed 2 issues." in done.stdout, done.stdout + done.stderr
    after = path.read_text()
    assert _outside_sources(after) == _outside_sources(before)  # metadata, outputs, layout untouched
    fixed = read_notebook(after).cells[2].source
    assert "x[i] = x[i] * wp.float16(2.0)" in fixed and fixed.endswith("n[i] = 2")
    assert nbformat.validate(nbformat.reads(after, as_version=4)) is None
    assert run_cli("check", "nb.ipynb", "--no-cache", cwd=tmp_path).returncode == 0


def test_diff_shows_the_notebook_change(tmp_path: Path) -> None:
    path = demo(tmp_path / "nb.ipynb")
    before = path.read_text()
    done = run_cli("check", "nb.ipynb", "--no-cache", "--diff", cwd=tmp_path)
    assert done.returncode == 1
    assert '+    "    x[i] = x[i] * wp.float16(2.0)\\n",' in done.stdout
    assert path.read_text() == before


def test_ci_static_only_reports_the_notebook(tmp_path: Path) -> None:
    demo(tmp_path / "nb.ipynb")
    done = run_cli("ci", "--static-only", "--output-format", "concise", ".", cwd=tmp_path)
    assert "nb.ipynb:cell 3:4:12: WH003" in done.stdout, done.stdout + done.stderr
    assert done.returncode != 0


def test_a_broken_notebook_is_one_record(tmp_path: Path) -> None:
    (tmp_path / "bad.ipynb").write_text("{not json")
    done = run_cli("check", "bad.ipynb", "--no-cache", "--output-format", "concise", cwd=tmp_path)
    assert "bad.ipynb:1:1: WH000 cannot read notebook" in done.stdout


def test_file_result_line_text_reads_the_cell() -> None:
    result = FileResult("nb.ipynb", (), None, cells=(("a",), ("b", "c")))
    assert result.line_text(2, 2) == "c"
    assert result.line_text(1, 3) is None
    assert result.line_text(1) is None


# Hostile notebooks a cloned repository can ship (issue #30, finding 6): each one aborted the whole
# `check .`, `ci .` and the MCP `check` with a traceback, so one file blinded CI.
CELLS_NOT_OBJECTS = '{"cells": [1, 2], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
DEEPLY_NESTED = (
    '{"cells": [{"cell_type": "code", "source": '
    + "[" * 15_000
    + "]" * 15_000
    + '}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
)
HOSTILE_NOTEBOOKS = {
    "not_objects.ipynb": CELLS_NOT_OBJECTS,
    "nested.ipynb": DEEPLY_NESTED,
    "source_not_text.ipynb": json.dumps(
        {"cells": [{"cell_type": "code", "source": [1], "metadata": {}}], "metadata": {}, "nbformat": 4}
    ),
    "metadata_not_object.ipynb": json.dumps({"cells": [], "metadata": [1], "nbformat": 4}),
    "deep_metadata.ipynb": json.dumps({"cells": [], "metadata": {}, "nbformat": 4})[:-1]
    + ', "x": '
    + "[" * 900
    + "]" * 900
    + "}",
}


def hostile_workspace(root: Path) -> Path:
    for name, text in HOSTILE_NOTEBOOKS.items():
        (root / name).write_text(text)
    write_notebook(root / "good.ipynb", [("code", "import warp as wp"), ("code", KERNEL_CELL)])
    return root


def test_hostile_notebooks_are_refused_by_the_reader() -> None:
    assert len(CELLS_NOT_OBJECTS) <= 79 and len(DEEPLY_NESTED) > 30_000
    for text in HOSTILE_NOTEBOOKS.values():
        with pytest.raises(NotebookError):
            read_notebook(text)


def _one_record_each(records: list[dict[str, object]]) -> None:
    by_path: dict[str, list[object]] = {}
    for record in records:
        location = record["location"]
        assert isinstance(location, dict)
        by_path.setdefault(Path(str(location["path"])).name, []).append(record["rule"])
    for name in HOSTILE_NOTEBOOKS:
        assert by_path[name] == ["WH000"], (name, by_path)
    assert "WH003" in by_path["good.ipynb"]  # the run went on to the other files


def test_check_reports_each_hostile_notebook_as_one_record_and_goes_on(tmp_path: Path) -> None:
    hostile_workspace(tmp_path)
    done = run_cli("check", ".", "--no-cache", "--output-format", "json", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    results = json.loads(done.stdout)["results"]
    _one_record_each(results)
    nested = next(r for r in results if r["location"]["path"].endswith("nested.ipynb"))
    assert nested["message"] == "cannot read notebook: not a JSON notebook: nested too deeply to read"
    concise = run_cli("check", ".", "--no-cache", "--output-format", "concise", cwd=tmp_path)
    expected = (
        "not_objects.ipynb:1:1: WH000 cannot read notebook: not a notebook: cell 1 is not a JSON object"
    )
    assert expected in concise.stdout


def test_ci_without_trust_reports_each_hostile_notebook_and_writes_its_sarif(tmp_path: Path) -> None:
    hostile_workspace(tmp_path)
    sarif = tmp_path / "out.sarif"
    done = run_cli("ci", ".", "--output-format", "json", "--sarif", str(sarif), cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    _one_record_each(report["results"])
    statuses = {Path(f["path"]).name: f["status"] for f in report["files"]}
    assert statuses["nested.ipynb"] == statuses["good.ipynb"] == "untrusted"
    written = json.loads(sarif.read_text())
    located = {
        (Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name, r["ruleId"])
        for r in written["runs"][0]["results"]
    }
    assert {(name, "WH000") for name in HOSTILE_NOTEBOOKS} | {("good.ipynb", "WH003")} <= located


def test_code_cells_over_the_size_cap_are_one_record_on_the_largest_cell(tmp_path: Path) -> None:
    """`check` refuses a .py file over 8 MiB; a notebook under the 10 MB read cap could hold more code
    than that in its cells, analysed whole (issue #30, finding 8): now one record, as for the file."""
    line = "x = 1  # " + "a" * 1000 + "\n"
    big = line * (9 * 1024 * 1024 // len(line) + 1)
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
            for source in ("import warp as wp", big, KERNEL_CELL)
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "big.ipynb").write_text(json.dumps(notebook))  # sources as one string: 9 MiB on disk
    assert (tmp_path / "big.ipynb").stat().st_size < 10 * 1024 * 1024
    done = run_cli("check", "big.ipynb", "--no-cache", "--output-format", "json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    (record,) = json.loads(done.stdout)["results"]
    assert record["rule"] == "WH000" and record["location"]["cell"] == 2
    assert (
        record["message"]
        == "syntax error: the notebook's code cells are 9 MiB; files over 8 MiB are not analysed"
    )
