"""`ci` and `replay` through `python -m warp_harness.daemon`, and the handlers directly."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
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


# --------------------------------------------------------------------------- issue 16


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The console entry point, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


RETURNS_A_VALUE = """import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float)) -> float:
    i = wp.tid()
    return x[i]
"""


def test_tune_on_a_syntax_error_prints_one_wh000_line_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float):\n    pass\n"
    )
    p = _cli("tune", "bad.py", "--trust", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.strip() == "bad.py:4:31: WH000 [error] syntax error: invalid syntax"
    # the same position `check` gives
    assert "bad.py:4:31: WH000" in _cli("check", "bad.py", cwd=tmp_path).stdout


def test_replay_of_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    p = _cli("replay", str(tmp_path / "nonexistent"), "--trust", cwd=tmp_path)
    assert p.returncode == 2 and "no such folder" in p.stderr, p.stderr
    (tmp_path / "file.py").write_text("")
    p = _cli("replay", "file.py", "--trust", cwd=tmp_path)
    assert p.returncode == 2 and "is not a folder" in p.stderr, p.stderr


def test_ci_shows_the_paths_check_shows(tmp_path: Path) -> None:
    (tmp_path / "syn").mkdir()
    (tmp_path / "syn" / "broken.py").write_text(
        "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float):\n"
    )
    check = _cli("check", "syn", cwd=tmp_path)
    ci = _cli("ci", "syn", "--static-only", cwd=tmp_path)
    assert check.stdout.splitlines()[0].startswith("syn/broken.py:5:")
    assert ci.stdout.splitlines()[0] == check.stdout.splitlines()[0]


@pytest.mark.slow
def test_ci_trust_reports_an_illegal_kernel_once_confirmed_by_codegen(tmp_path: Path) -> None:
    (tmp_path / "syn").mkdir()
    (tmp_path / "syn" / "broken.py").write_text(RETURNS_A_VALUE)
    p = _cli("ci", "syn", "--trust", "--format", "json", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    results = json.loads(p.stdout)["results"]
    # one finding: the static WH005, confirmed by Warp's code generator (not a WHD003 compile error)
    assert [r["rule"] for r in results] == ["WH005"], results
    (record,) = results
    assert record["path"] == "syn/broken.py" and record["location"]["path"] == "syn/broken.py"
    (note,) = [r for r in record["related"] if "confirmed by Warp codegen" in r["message"]]
    assert "WHD002" in note["message"] and "Warp kernels cannot return values" in note["message"]
    # the dynamic tier alone (the static rule ignored) calls it a codegen error, with Warp's message
    (tmp_path / "pyproject.toml").write_text('[tool.warp-harness]\nignore = ["WH005"]\n')
    p = _cli("ci", "syn", "--trust", "--format", "json", cwd=tmp_path)
    (dyn,) = json.loads(p.stdout)["results"]
    assert dyn["rule"] == "WHD002" and dyn["path"] == "syn/broken.py", dyn
    assert "WarpCodegenTypeError" in dyn["message"] and "cannot return values" in dyn["message"]


BROKEN_CONTRACT = """import numpy as np
import warp as wp
from warp_harness.contract import Contract


@wp.kernel
def double(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = 2.0 * x[i]


def broken_reference(x):
    raise ZeroDivisionError("reference is broken")


contract = Contract(
    kernel=double,
    reference=broken_reference,
    inputs=lambda n, rng: {"x": rng.random(n).astype(np.float32), "out": np.zeros(n, np.float32)},
    outputs=["out"],
    sizes=[8],
)
"""


@pytest.mark.slow
def test_a_broken_contract_points_at_the_contract_call(tmp_path: Path) -> None:
    (tmp_path / "brk.py").write_text(BROKEN_CONTRACT)
    p = _cli("ci", ".", "--trust", "--no-bench", "--format", "json", cwd=tmp_path)
    (record,) = [r for r in json.loads(p.stdout)["results"] if r["rule"] == "WHD024"]
    lines = BROKEN_CONTRACT.splitlines()
    call = next(i + 1 for i, t in enumerate(lines) if t.startswith("contract = Contract("))
    assert record["location"]["line"] == call, record
    assert (
        record["location"]["col"] == len("contract = ")
        and "reference raised ZeroDivisionError" in record["message"]
    )


@pytest.mark.slow
def test_ci_junit_and_text_counts_and_values_are_consistent(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "saxpy.py", tmp_path / "saxpy.py")  # validated and benchmarked: WHD031
    shutil.copy(EXAMPLES.parent / "buggy" / "mixed_precision.py", tmp_path / "mixed.py")  # three errors
    p = _cli("ci", ".", "--trust", "--junit", "r.xml", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    long_float = re.compile(r"\d\.\d{7,}")
    measured = next(line for line in p.stdout.splitlines() if "WHD031" in line)
    actual = p.stdout.split(measured, 1)[1].split("actual: ", 1)[1].splitlines()[0]
    assert actual.startswith("latency_us=") and not long_float.search(actual), actual
    assert "{" not in actual and "'" not in actual

    root = ET.parse(tmp_path / "r.xml").getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    failures = [f for case in cases for f in case.findall("failure")]
    assert all(len(case.findall("failure")) <= 1 for case in cases)
    assert int(suite.get("failures", "-1")) == len(failures) >= 3
    assert int(suite.get("tests", "-1")) == len(cases)
    assert (root.get("tests"), root.get("failures")) == (suite.get("tests"), suite.get("failures"))
    mixed = [case for case in cases if case.get("classname") == "mixed.py"]
    assert len(mixed) == len([f for case in mixed for f in case.findall("failure")]) >= 3
    notes = "".join(out.text or "" for out in suite.iter("system-out"))
    assert "actual: latency_us=" in notes and not long_float.search(notes), notes
