"""`ci` as rich as the daemon, through the real command line: check's --select/--ignore/
--extend-select/--target/--output-format, per-file status, seed, repros, kernel verdicts and
timings in its JSON; progress on a terminal only; the state folder kept out of git."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES

from warp_harness.daemon.cache import state_path

KERNEL = """\
import warp as wp


@wp.kernel
def reduce(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[0] = out[0] + x[i]


n = 4
x = wp.zeros(n, dtype=float)
out = wp.zeros(1, dtype=float)
wp.launch_tiled(reduce, dim=[n], inputs=[x, out], block_dim=100)
"""
BROKEN = """\
import warp as wp
raise RuntimeError("boom")


@wp.kernel
def k(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0
"""


def _cli(*args: str, cwd: Path, stderr: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=300,
    )


def _rules(stdout: str) -> set[str]:
    return {r["rule"] for r in json.loads(stdout)["results"]}


def test_ci_takes_checks_rule_options(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    everything = _cli("ci", "k.py", "--static-only", "--output-format", "json", cwd=tmp_path)
    assert {"WH008", "WH010"} <= _rules(everything.stdout), everything.stderr
    only = _cli("ci", "k.py", "--static-only", "--output-format", "json", "--select", "WH008", cwd=tmp_path)
    assert _rules(only.stdout) == {"WH008"}
    extended = _cli(
        "ci",
        "k.py",
        "--static-only",
        "--format",
        "json",
        "--select",
        "WH008",
        "--extend-select",
        "WH010",
        cwd=tmp_path,
    )
    assert _rules(extended.stdout) == {"WH008", "WH010"}
    ignored = _cli("ci", "k.py", "--static-only", "--format", "json", "--ignore", "WH010", cwd=tmp_path)
    assert "WH010" not in _rules(ignored.stdout) and "WH008" in _rules(ignored.stdout)
    # the CPU has no warp size of 32: block_dim=100 is not reported for it
    cpu = _cli("ci", "k.py", "--static-only", "--format", "json", "--target", "cpu", cwd=tmp_path)
    assert "WH008" not in _rules(cpu.stdout)
    bad = _cli("ci", "k.py", "--static-only", "--target", "sm_99", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown target 'sm_99'" in bad.stderr
    unknown = _cli("ci", "k.py", "--static-only", "--select", "WH777", cwd=tmp_path)
    assert unknown.returncode == 2 and "--select: WH777" in unknown.stderr
    concise = _cli("ci", "k.py", "--static-only", "--output-format", "concise", cwd=tmp_path)
    assert concise.returncode == 1 and concise.stdout.startswith("k.py:"), concise.stderr


def test_ci_json_says_why_the_dynamic_tier_did_not_run_per_file(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    untrusted = json.loads(_cli("ci", "k.py", "--format", "json", "--no-trust", cwd=tmp_path).stdout)
    assert untrusted["files"] == [{"path": "k.py", "errors": 1, "warnings": 2, "status": "untrusted"}]
    assert untrusted["summary"]["trusted"] is False
    static = json.loads(_cli("ci", "k.py", "--format", "json", "--static-only", cwd=tmp_path).stdout)
    assert static["files"][0]["status"] == "static-only" and static["summary"]["static_only"] is True


def test_the_state_folder_holds_a_gitignore_never_written_through_a_link(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    state_path(ws, "results", "x.msgpack")
    assert (
        ws / ".warp-harness" / ".gitignore"
    ).read_text() == "# Automatically created by warp-harness.\n*\n"
    # an existing .gitignore (here a link to a file of the user's) is left alone
    other = tmp_path / "ws2"
    (other / ".warp-harness").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    (other / ".warp-harness" / ".gitignore").symlink_to(victim)
    state_path(other, "history.msgpack")
    assert victim.read_text() == "mine\n"
    # a state folder that is a link (inside the workspace) gets nothing written through it
    third = tmp_path / "ws3"
    (third / "elsewhere").mkdir(parents=True)
    (third / ".warp-harness").symlink_to(third / "elsewhere")
    state_path(third, "history.msgpack")
    assert not (third / "elsewhere" / ".gitignore").exists()


@pytest.fixture
def contracts(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.warp-harness]\n[tool.warp-harness.runtime]\nbench = false\n"
    )
    shutil.copy(EXAMPLES / "boundary_bug.py", tmp_path / "boundary_bug.py")
    return tmp_path


@pytest.mark.slow
@pytest.mark.usefixtures("private_kernel_builds")  # its first build compiles (conftest.py)
def test_ci_json_carries_status_seed_repros_kernel_verdicts_and_timings(contracts: Path) -> None:
    (contracts / "broken.py").write_text(BROKEN, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(contracts)], check=True)
    p = _cli(
        "ci",
        ".",
        "--trust",
        "--seed",
        "7",
        "--launch-timeout",
        "2",
        "--format",
        "json",
        "--json",
        "r.json",
        cwd=contracts,
    )
    assert p.returncode == 1, p.stderr
    report = json.loads(p.stdout)
    assert json.loads((contracts / "r.json").read_text())["files"] == report["files"]
    files = {f["path"]: f for f in report["files"]}
    assert files["broken.py"]["status"] == "import-error" and files["broken.py"]["kernels"] == {}
    bug = files["boundary_bug.py"]
    assert bug["status"] == "fail" and bug["seed"] == 7 and bug["devices"] == ["cpu"]
    assert bug["kernels"]["shift_add"]["validate"] == {"cpu": "fail"}
    assert bug["kernels"]["shift_add"]["compile"] == {"cpu": "compiled"}
    assert len(bug["repros"]) == 1 and (contracts / bug["repros"][0]).is_file()
    assert bug["timings"]["import_ms"] > 0 and bug["elapsed_ms"] > 0
    assert report["summary"]["repros"] == bug["repros"]
    # the records keep their schema: the same keys as `check` writes
    assert all(set(r) >= {"path", "rule", "severity", "location", "message"} for r in report["results"])
    # piped: no progress line on stderr
    assert "\r" not in p.stderr and "\x1b[" not in p.stderr
    # the state folder the run created is kept out of git
    assert (contracts / ".warp-harness" / ".gitignore").read_text().endswith("*\n")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=contracts,
        capture_output=True,
        text=True,
    )
    assert ".warp-harness" not in status.stdout and "boundary_bug.py" in status.stdout


def _on_a_terminal(*args: str, cwd: Path) -> tuple[str, str]:
    """Run the CLI with stderr on a pseudo-terminal: (what the terminal got, stdout)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "warp_harness", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=slave,
        text=True,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed its side
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    return seen.decode("utf-8", "replace"), out


@pytest.mark.slow
def test_ci_and_replay_show_progress_on_a_terminal(contracts: Path) -> None:
    text, out = _on_a_terminal(
        "ci", ".", "--trust", "--launch-timeout", "2", "--format", "json", cwd=contracts
    )
    assert "\r[00:0" in text and "boundary_bug.py import" in text, text  # the elapsed clock
    assert "compile shift_add cpu" in text and "validate" in text, text
    assert re.search(r"\r\s*\rwarp-harness ci:", text), text  # the line is erased before the summary
    assert json.loads(out)["files"][0]["status"] == "fail"  # stdout (a pipe) carries the report only
    text, _ = _on_a_terminal("replay", ".", "--trust", cwd=contracts)
    assert "replay 1/1 " in text and "shift_add" in text, text


@pytest.mark.slow
def test_bench_and_tune_show_each_kernel_and_candidate_on_a_terminal(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "saxpy.py", tmp_path / "saxpy.py")
    # the example with two candidates and one size: what is shown per candidate is the same (its four
    # candidates at three sizes up to 65,536: four compiles in a fresh run, 22.1 s against 19.3 s warm)
    tune = (EXAMPLES / "tune_chunks.py").read_text(encoding="utf-8")
    small = tune.replace("sizes=[64, 4096, 1 << 16]", "sizes=[64]").replace("[1, 2, 4, 8]", "[1, 2]")
    assert small.count("[1, 2]") == 1 and "sizes=[64]," in small
    (tmp_path / "tune_chunks.py").write_text(small, encoding="utf-8")
    fast = ("--repeats", "3", "--max-time", "0.05")
    text, out = _on_a_terminal("bench", "saxpy.py", "--trust", *fast, cwd=tmp_path)
    assert "saxpy.py import" in text and "compile saxpy cpu" in text and "bench" in text, text
    assert "saxpy" in out  # the table on stdout
    text, _ = _on_a_terminal("tune", "tune_chunks.py", "--trust", "--repeats", "3", cwd=tmp_path)
    assert re.search(r"candidate 1/\d+", text), text
