"""`ci --changed-files` in a real git repository: changed notebooks are checked next to changed
Python files, and other changed files are not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat

from warp_harness.daemon.ci import changed_files

JSON = ["--format", "json"]
GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-c", "commit.gpgsign=false"]

BUGGY_CELL = (
    "@wp.kernel\ndef scale(x: wp.array(dtype=wp.float16)):\n    i = wp.tid()\n    x[i] = x[i] * 2.0\n"
)


def _notebook(path: Path, cells: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, str(path))


def _repository(root: Path) -> Path:
    (root / "clean.py").write_text("x = 1\n")
    _notebook(root / "committed.ipynb", ["import warp as wp\n"])
    (root / "notes.txt").write_text("a\n")
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "."], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=root, check=True)
    return root


def test_changed_and_untracked_notebooks_are_listed(tmp_path: Path) -> None:
    root = _repository(tmp_path)
    assert changed_files(root) == []
    _notebook(root / "committed.ipynb", ["import warp as wp\n", BUGGY_CELL])  # modified
    _notebook(root / "new.ipynb", ["import warp as wp\n"])  # untracked
    (root / "notes.txt").write_text("b\n")  # changed, neither Python nor a notebook
    (root / "data.json").write_text("{}\n")
    names = {p.name for p in changed_files(root)}
    assert names == {"committed.ipynb", "new.ipynb"}
    assert names == {p.name for p in changed_files(root, trusted=True)}


def test_changed_notebooks_against_a_base(tmp_path: Path) -> None:
    root = _repository(tmp_path)
    subprocess.run([*GIT, "checkout", "-qb", "topic"], cwd=root, check=True)
    _notebook(root / "committed.ipynb", ["import warp as wp\n", BUGGY_CELL])
    subprocess.run([*GIT, "commit", "-qam", "edit"], cwd=root, check=True)
    assert [p.name for p in changed_files(root, "HEAD~1")] == ["committed.ipynb"]


def test_ci_changed_files_checks_a_changed_notebook(tmp_path: Path) -> None:
    root = _repository(tmp_path)
    _notebook(root / "committed.ipynb", ["import warp as wp\n", BUGGY_CELL])
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness.daemon", "ci", ".", "--changed-files", "--static-only", *JSON],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    report = json.loads(p.stdout)
    assert [f["path"] for f in report["files"]] == ["committed.ipynb"]
    assert [(r["rule"], r["location"]["cell"], r["location"]["line"]) for r in report["results"]] == [
        ("WH003", 2, 4)
    ]
