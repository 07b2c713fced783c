"""Ruff's options on `check`, through the real command line: --statistics, --show-fixes, --diff,
--unsafe-fixes, `-` with --stdin-filename, --extend-select, per-file-ignores, WH016 (unused
suppressions) and its fix, NO_COLOR / FORCE_COLOR, a subcommand's own usage on a bad argument."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from warp_harness.cli import main

KERNEL = """\
import warp as wp


@wp.kernel
def reduce(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i, _lane = wp.tid()  # a cooperative launch: the lane is the tile thread (WH047 stays quiet)
    wp.atomic_add(out, 0, x[i])  # wh: ignore[WH003]


n = 4
x = wp.zeros(n, dtype=float)
out = wp.zeros(1, dtype=float)
wp.launch_tiled(reduce, dim=[n], inputs=[x, out], block_dim=100)
"""
# WH016: the unused suppression (a safe fix); WH008: block_dim 100 (an unsafe fix: 128)
UNSAFE_LINE = "wp.launch_tiled(reduce, dim=[n], inputs=[x, out], block_dim=128)"


def run(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("warp-harness")
    command = [exe] if exe else [sys.executable, "-m", "warp_harness"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, cwd=cwd, input=stdin, env=env, timeout=120
    )


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".git").mkdir()  # the settings search stops here
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_statistics_counts_records_per_rule(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "k2.py").write_text(KERNEL, encoding="utf-8")
    assert main(["check", ".", "--statistics"]) == 0  # warnings only
    lines = capsys.readouterr().out.splitlines()
    # WH008's fix is unsafe: `--fix` would not apply it (as the summary counts), `--unsafe-fixes` would
    assert lines == ["2\tWH008\t[-] block-dim", "2\tWH016\t[*] unused-suppression"]
    assert main(["check", ".", "--statistics", "--unsafe-fixes"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "2\tWH008\t[*] block-dim",
        "2\tWH016\t[*] unused-suppression",
    ]
    assert main(["check", ".", "--statistics", "--output-format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["code"], r["count"], r["fixable"], r["unsafe_fixable"]) for r in rows} == {
        ("WH008", 2, False, True),
        ("WH016", 2, True, False),
    }


def test_diff_prints_the_fixes_and_writes_nothing(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "k.py", "--diff"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith("--- a/k.py\n+++ b/k.py\n")
    assert (
        "-    wp.atomic_add(out, 0, x[i])  # wh: ignore[WH003]\n+    wp.atomic_add(out, 0, x[i])\n"
        in captured.out
    )
    assert "block_dim=128" not in captured.out  # unsafe: not without --unsafe-fixes
    assert "Would fix 1 issue." in captured.err
    assert (workspace / "k.py").read_text(encoding="utf-8") == KERNEL
    assert main(["check", "k.py", "--diff", "--unsafe-fixes"]) == 1
    assert f"+{UNSAFE_LINE}\n" in capsys.readouterr().out
    assert (workspace / "k.py").read_text(encoding="utf-8") == KERNEL


def test_diff_without_fixes_exits_0(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "k.py", "--diff", "--select", "WH001"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "No fixes available." in captured.err


def test_unsafe_fixes_are_applied_only_when_asked(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["check", "k.py", "--fix"])
    text = (workspace / "k.py").read_text(encoding="utf-8")
    assert "# wh: ignore" not in text and "block_dim=100" in text
    assert "Fixed 1 issue." in capsys.readouterr().out
    main(["check", "k.py", "--fix", "--unsafe-fixes"])
    assert UNSAFE_LINE in (workspace / "k.py").read_text(encoding="utf-8")


def test_show_fixes_lists_applied_and_available_fixes(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["check", "k.py", "--show-fixes"])
    out = capsys.readouterr().out
    assert "2 fixes available:\n- k.py:\n" in out
    assert "    1 × WH016 (Remove the unused suppression)\n" in out
    assert "    1 × WH008 (Set block_dim = 128) [unsafe]\n" in out
    main(["check", "k.py", "--fix", "--show-fixes"])
    out = capsys.readouterr().out
    assert "Fixed 1 issue:\n- k.py:\n    1 × WH016 (Remove the unused suppression)\n" in out


def test_stdin_with_a_filename(workspace: Path) -> None:
    result = run(
        "check",
        "-",
        "--stdin-filename",
        "pkg/kern.py",
        "--output-format",
        "json",
        cwd=workspace,
        stdin=KERNEL,
    )
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)["results"]
    assert {r["path"] for r in records} == {"pkg/kern.py"} and {r["rule"] for r in records} == {
        "WH008",
        "WH016",
    }
    # --fix: the fixed text on stdout, the report on stderr, nothing written
    fixed = run(
        "check", "-", "--stdin-filename", "kern.py", "--fix", "--unsafe-fixes", cwd=workspace, stdin=KERNEL
    )
    assert fixed.stdout == KERNEL.replace("  # wh: ignore[WH003]", "").replace(
        "block_dim=100", "block_dim=128"
    )
    assert "All checks passed!" in fixed.stderr and not (workspace / "kern.py").exists()
    plain = run("check", "-", cwd=workspace, stdin=KERNEL)
    assert "-:13:" in plain.stdout and "WH008" in plain.stdout


def test_stdin_filename_takes_per_file_ignores(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text(
        '[tool.warp-harness]\nper-file-ignores = { "gen/*.py" = ["WH008"] }\n', encoding="utf-8"
    )
    result = run(
        "check",
        "-",
        "--stdin-filename",
        "gen/kern.py",
        "--output-format",
        "json",
        cwd=workspace,
        stdin=KERNEL,
    )
    assert {r["rule"] for r in json.loads(result.stdout)["results"]} == {"WH016"}


def test_per_file_ignores(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "tests").mkdir()
    (workspace / "tests" / "t.py").write_text(KERNEL, encoding="utf-8")
    (workspace / "pyproject.toml").write_text(
        '[tool.warp-harness]\nper-file-ignores = { "tests/*.py" = ["WH008"], "k.py" = ["wh016"] }\n',
        encoding="utf-8",
    )
    main(["check", ".", "--output-format", "json"])
    found = {(Path(r["path"]).as_posix(), r["rule"]) for r in json.loads(capsys.readouterr().out)["results"]}
    assert found == {("k.py", "WH008"), ("tests/t.py", "WH016")}


def test_per_file_ignores_of_the_wrong_type_is_a_configuration_error(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "pyproject.toml").write_text(
        '[tool.warp-harness]\nper-file-ignores = ["WH008"]\n', encoding="utf-8"
    )
    assert main(["check", "k.py"]) == 2
    err = capsys.readouterr().err
    assert "configuration error" in err and "`per-file-ignores` must be a table" in err


def test_extend_select_adds_to_the_configured_selection(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "pyproject.toml").write_text('[tool.warp-harness]\nselect = ["WH008"]\n', encoding="utf-8")
    main(["check", "k.py", "--output-format", "json"])
    assert {r["rule"] for r in json.loads(capsys.readouterr().out)["results"]} == {"WH008"}
    main(["check", "k.py", "--output-format", "json", "--extend-select", "WH016"])
    assert {r["rule"] for r in json.loads(capsys.readouterr().out)["results"]} == {"WH008", "WH016"}
    assert main(["check", "k.py", "--extend-select", "WH777"]) == 2
    assert "--extend-select: WH777" in capsys.readouterr().err


def test_unused_suppressions_keep_the_used_codes(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = KERNEL.replace("block_dim=100)", "block_dim=100)  # wh: ignore[WH008, WH010]")
    (workspace / "k.py").write_text(text, encoding="utf-8")
    main(["check", "k.py", "--output-format", "json", "--select", "WH016"])
    messages = sorted(r["message"] for r in json.loads(capsys.readouterr().out)["results"])
    assert messages == [
        "unused code WH010 in `# wh: ignore`",
        "unused suppression `# wh: ignore[WH003]`: it silences nothing",
    ]
    main(["check", "k.py", "--fix"])
    fixed = (workspace / "k.py").read_text(encoding="utf-8")
    assert fixed.endswith("block_dim=100)  # wh: ignore[WH008]\n") and "WH003" not in fixed
    capsys.readouterr()
    assert main(["check", "k.py", "--output-format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == []  # the kept WH008 still silences it


def test_a_suppression_of_a_rule_left_out_is_not_unused(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = KERNEL.replace("block_dim=100)", "block_dim=100)  # wh: ignore[WH008]")
    (workspace / "k.py").write_text(text, encoding="utf-8")
    main(["check", "k.py", "--output-format", "json", "--ignore", "WH008"])
    assert [r["location"]["line"] for r in json.loads(capsys.readouterr().out)["results"]] == [7]


def test_wh016_is_listed_and_documented(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    assert any(
        line.startswith("WH016") and "unused-suppression" in line
        for line in capsys.readouterr().out.splitlines()
    )
    assert main(["rule", "WH016"]) == 0
    assert "## WH016 unused-suppression" in capsys.readouterr().out
    repo = Path(__file__).resolve().parents[1]
    assert "## WH016 unused-suppression" in (repo / "docs" / "rules.md").read_text(encoding="utf-8")
    assert "| [WH016](docs/rules.md#wh016) | unused-suppression |" in (repo / "README.md").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("env", "colored"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, False)],
)
def test_no_color_and_force_color(workspace: Path, env: dict[str, str], colored: bool) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    result = run("check", "k.py", cwd=workspace, env={**base, **env})  # stdout is a pipe
    assert ("\x1b[" in result.stdout) is colored, result.stdout
    assert "\x1b[" not in run("check", "k.py", "--color", "never", cwd=workspace, env={**base, **env}).stdout


def test_no_color_on_a_terminal(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    main(["check", "k.py"])
    assert "\x1b[" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["check", "rules", "ci", "status"])
def test_a_bad_argument_prints_the_subcommands_usage(command: str, tmp_path: Path) -> None:
    result = run(command, "--bogus", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"usage: warp-harness {command} "), result.stderr
    assert f"warp-harness {command}: error: unrecognized arguments: --bogus" in result.stderr
