"""`ci` and `replay` through `python -m warp_harness.daemon`, and the handlers directly."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES, def_line
from warp_harness.daemon.cli import build_parser, main

ARGS = ["--launch-timeout", "2"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness.daemon", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.warp-harness]\n[tool.warp-harness.runtime]\nbench = false\n"
    )
    shutil.copy(EXAMPLES / "boundary_bug.py", tmp_path / "boundary_bug.py")
    shutil.copy(EXAMPLES / "saxpy.py", tmp_path / "saxpy.py")
    return tmp_path


def test_subcommands_register() -> None:
    parser = build_parser()
    for cmd in ("daemon", "ci", "replay"):
        assert callable(parser.parse_args([cmd]).func)


def test_ci_untrusted_runs_the_static_tier_only(ws: Path) -> None:
    (ws / "marker.py").write_text(
        "import pathlib\nimport warp as wp\npathlib.Path(__file__).with_name('EXECUTED').touch()\n\n"
        "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[wp.tid()] = 1.0\n"
    )
    p = _run("ci", ".", "--format", "json", cwd=ws)
    assert p.returncode == 0, p.stderr
    assert "not trusted" in p.stderr
    assert not (ws / "EXECUTED").exists()
    # the summary says so once; no per-file note buries the findings
    assert "WHD050" not in p.stdout


@pytest.mark.slow
def test_ci_trusted_writes_reports_and_replay_reruns_the_case(ws: Path) -> None:
    out = ws / "out"
    out.mkdir()
    p = _run(
        "ci",
        ".",
        "--trust",
        *ARGS,
        "--sarif",
        "out/r.sarif",
        "--junit",
        "out/r.xml",
        "--json",
        "out/r.json",
        cwd=ws,
    )
    assert p.returncode == 1, p.stderr
    line = def_line(ws / "boundary_bug.py", "shift_add")
    assert "WHD021" in p.stdout and f"boundary_bug.py:{line}:" in p.stdout
    sarif = json.loads((out / "r.sarif").read_text())
    assert any(r["ruleId"] == "WHD021" for r in sarif["runs"][0]["results"])
    assert "WHD021" in (out / "r.xml").read_text() and "WHD021" in (out / "r.json").read_text()
    assert "1 failing case(s) stored" in p.stderr
    cases = list((ws / ".warp-harness" / "repros").glob("*.msgpack"))
    assert len(cases) == 1
    # the stored case still fails ...
    replay = _run("replay", ".", "--trust", cwd=ws)
    assert replay.returncode == 1 and "FAIL" in replay.stdout and "shift_add" in replay.stdout
    # ... and passes once the kernel is fixed: a regression suite
    src = (ws / "boundary_bug.py").read_text().replace("if i < n - 1:", "if i < n:")
    (ws / "boundary_bug.py").write_text(src)
    replay = _run("replay", ".", "--trust", "--format", "json", cwd=ws)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert json.loads(replay.stdout)["cases"][0]["status"] == "pass"


def test_replay_refuses_untrusted(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(ws)]) == 2


def test_changed_files_limits_ci_to_git_changes(ws: Path) -> None:
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "."], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=ws, check=True)
    p = _run("ci", ".", "--changed-files", cwd=ws)
    assert p.returncode == 0 and "no changed Python files" in p.stderr
    (ws / "new_kernel.py").write_text("import warp as wp\n\n@wp.kernel\ndef k(x):\n    pass\n")
    p = _run("ci", ".", "--changed-files", "--format", "json", cwd=ws)
    assert "new_kernel.py" in p.stdout and "saxpy.py" not in p.stdout
    assert main(["ci", str(ws / "missing.py")]) == 2
