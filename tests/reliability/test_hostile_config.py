"""Configuration from folders other users control (issue 12, item 2).

A shared, sticky, world-writable parent folder (like /tmp) holds the workspace; another local
user (uid 65534, ``nobody``, through a forked child that drops to it) plants a
``pyproject.toml`` there that says ``trust = true`` and ``ignore = ["WH"]``. The real
``warp-harness`` processes run in the workspace below it: ``check`` must still report,
``ci`` must not trust the workspace (its module writes a marker when imported), ``replay``'s
workspace must not move up to the planted file's folder, and a stored case whose module path
leads out of the workspace is refused and never run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES, write
from reliability_helpers import MARKER_IMPORT, NOBODY, write_as

from warp_harness.daemon import protocol as P

BUGGY = (Path(__file__).parents[2] / "examples" / "buggy" / "mixed_precision.py").read_text()
PLANTED = '[tool.warp-harness]\nignore = ["WH"]\ntrust = true\n'

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="plants files as another user: needs root")


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *args],
        capture_output=True,
        text=True,
        cwd=str(cwd),
        timeout=timeout,
    )


def _shared_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """(the sticky world-writable parent, the user's workspace inside it)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    ws = shared / "ws"
    ws.mkdir()
    write(ws, "k.py", BUGGY)
    return shared, ws


def _rules(stdout: str) -> list[str]:
    return sorted(r["rule"] for r in json.loads(stdout)["results"])


def test_check_ignores_a_pyproject_another_user_planted_above_the_workspace(tmp_path: Path) -> None:
    shared, ws = _shared_workspace(tmp_path)
    write_as(NOBODY, shared, "pyproject.toml", PLANTED)
    r = _cli("check", ".", "--output-format", "json", cwd=ws)
    assert r.returncode == 1, r.stderr
    assert _rules(r.stdout) == ["WH003", "WH003", "WH004"]
    warning = [line for line in r.stderr.splitlines() if "ignoring" in line]
    assert len(warning) == 1 and str(shared / "pyproject.toml") in warning[0]
    assert f"owned by uid {NOBODY}" in warning[0]


def test_check_ignores_a_pyproject_of_the_user_that_others_can_write(tmp_path: Path) -> None:
    shared, ws = _shared_workspace(tmp_path)
    planted = shared / "pyproject.toml"
    planted.write_text(PLANTED)
    planted.chmod(0o666)
    r = _cli("check", ".", "--output-format", "json", cwd=ws)
    assert r.returncode == 1 and _rules(r.stdout) == ["WH003", "WH003", "WH004"], r.stderr
    assert "other users can write it (mode 666)" in r.stderr
    # the same file, private again, is the user's own configuration (the folder is sticky)
    planted.chmod(0o644)
    r = _cli("check", ".", "--output-format", "json", cwd=ws)
    assert r.returncode == 0 and _rules(r.stdout) == [] and "ignoring" not in r.stderr


def test_the_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    write(ws, "k.py", BUGGY)
    (ws / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(PLANTED)  # the user's own, safe, but above the repository
    r = _cli("check", ".", "--output-format", "json", cwd=ws)
    assert r.returncode == 1 and _rules(r.stdout) == ["WH003", "WH003", "WH004"], r.stderr


def test_ci_does_not_trust_the_workspace_because_of_a_planted_pyproject(tmp_path: Path) -> None:
    shared, ws = _shared_workspace(tmp_path)
    marker = tmp_path / "marker"
    write(
        ws,
        "saxpy.py",
        MARKER_IMPORT.format(marker=str(marker), name="saxpy") + (EXAMPLES / "saxpy.py").read_text(),
    )
    write_as(NOBODY, shared, "pyproject.toml", PLANTED)
    r = _cli("ci", ".", "--format", "json", "--device", "cpu", cwd=ws, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "dynamic tier skipped: workspace not trusted" in r.stderr
    assert "WH003" in _rules(r.stdout)  # and the planted `ignore` did not silence the static tier
    assert not marker.exists(), "ci imported the workspace's module"


def test_replay_keeps_its_workspace_and_takes_no_trust_from_a_planted_pyproject(tmp_path: Path) -> None:
    shared, ws = _shared_workspace(tmp_path)
    write_as(NOBODY, shared, "pyproject.toml", PLANTED)
    r = _cli("replay", ".", cwd=ws)
    assert r.returncode == 2 and "not trusted" in r.stderr, r.stderr
    r = _cli("replay", ".", "--trust", cwd=ws)
    assert r.returncode == 0, r.stderr
    assert f"no stored cases in {ws / '.warp-harness' / 'repros'}" in r.stderr


def _store_case(ws: Path, name: str, module_path: str) -> Path:
    folder = ws / ".warp-harness" / "repros"
    folder.mkdir(parents=True, exist_ok=True)
    case = {
        "schema": 1,
        "path": module_path,
        "kernel": "saxpy",
        "device": "cpu",
        "size": 4,
        "seed": 1,
        "edge_case": None,
        "rule": "WHD020",
        "message": "stored",
        "inputs": None,
        "options": {},
    }
    file = folder / f"{name}.msgpack"
    file.write_bytes(P.packb(case))
    return file


def test_replay_refuses_stored_cases_whose_module_is_outside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    markers = tmp_path / "markers"
    markers.mkdir()
    kernel = (EXAMPLES / "saxpy.py").read_text()
    for name in ("x", "abs"):  # modules beside the workspace, each writing a marker when imported
        write(tmp_path, f"{name}.py", MARKER_IMPORT.format(marker=str(markers / name), name=name) + kernel)
    relative = _store_case(ws, "relative", "../x.py")
    absolute = _store_case(ws, "absolute", str(tmp_path / "abs.py"))
    r = _cli("replay", str(ws), "--trust", "--format", "json", cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert report["cases"] == []
    refused = {item["file"]: item["reason"] for item in report["refused"]}
    assert "'../x.py' leads outside the workspace" in refused[str(relative)]
    assert "is absolute" in refused[str(absolute)]
    assert sum("refused" in line for line in r.stderr.splitlines()) == 2
    assert sorted(p.name for p in markers.iterdir()) == [], "replay imported a module outside the workspace"
    assert relative.exists() and absolute.exists()  # refused, not deleted as corrupt
