"""Issue #37 item 6: a workspace cannot switch the evaluator's defences off.

The workspace is the code under test: its ``pyproject.toml`` may tune the dynamic tier (sizes
of benchmarks, devices, timeouts) but not turn off the verdict worker, whose references are
what a pass is judged by. The command line (the user) can.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from warp_harness.daemon.cli import _runtime_overrides
from warp_harness.daemon.options import DEFENCES, load_runtime_options


def _workspace(tmp_path: Path, runtime: str) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.warp-harness]\ntrust = true\n[tool.warp-harness.runtime]\n{runtime}"
    )
    return tmp_path


@pytest.mark.parametrize("key", ["verdict_worker", "verdict-worker", "isolate_modules"])
def test_the_workspace_cannot_turn_a_defence_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    ws = _workspace(tmp_path, f"{key} = false\nbench_repeats = 7\n")
    opts = load_runtime_options(ws)
    assert opts.verdict_worker is True and opts.isolate_modules is True
    assert opts.bench_repeats == 7  # the rest of the table still applies
    err = capsys.readouterr().err
    assert f"`{key} = false` ignored" in err and f"--no-{key.replace('_', '-')}" in err


def test_true_in_the_workspace_is_quietly_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert load_runtime_options(_workspace(tmp_path, "verdict_worker = true\n")).verdict_worker is True
    assert capsys.readouterr().err == ""


def test_the_command_line_can_turn_it_off(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "verdict_worker = true\n")
    from warp_harness.cli import build_parser

    for argv, want in ((["ci", str(ws), "--no-verdict-worker"], False), (["ci", str(ws)], True)):
        args = build_parser().parse_args(argv)
        assert load_runtime_options(ws, _runtime_overrides(args)).verdict_worker is want
    args = build_parser().parse_args(["ci", str(ws), "--no-isolate-modules"])
    opts = load_runtime_options(ws, _runtime_overrides(args))
    assert opts.isolate_modules is False and opts.verdict_worker is True
    assert set(DEFENCES) == {"verdict_worker", "isolate_modules"}


def test_the_ci_command_reports_the_ignored_key(tmp_path: Path) -> None:
    """Through the real `warp-harness ci` (static tier only: the file has no kernel)."""
    ws = _workspace(tmp_path, "verdict_worker = false\n")
    (ws / "plain.py").write_text("x = 1\n")
    p = subprocess.run(
        [sys.executable, "-P", "-m", "warp_harness", "ci", str(ws), "--trust"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ws,
    )
    assert "`verdict_worker = false` ignored" in p.stderr, p.stderr
