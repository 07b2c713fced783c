"""A misspelled pyproject key or a `select` code that names no rule is said once on stderr (it used to be
ignored without a word: `selct = [...]` left every rule on), and the run goes on; the command line
refuses unknown codes outright (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

KERNEL = """import warp as wp

@wp.kernel
def k(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0
"""


def _check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "check", *args, "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_unknown_keys_and_codes_in_pyproject_are_said_once(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.warp-harness]\nselct = ["WH003"]\nignore = ["WH777", "WH01"]\n\n'
        "[tool.warp-harness.runtime]\nmemory_mb = 2048\n",
        encoding="utf-8",
    )
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    done = _check(".", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert (
        lines.count(
            f"warp-harness: {tmp_path / 'pyproject.toml'}: unknown key `selct` in [tool.warp-harness] "
            "(did you mean `select`?); ignored"
        )
        == 1
    ), done.stderr
    assert any("`ignore` names no rule for WH777 " in line for line in lines), done.stderr
    assert not any("WH01" in line for line in lines)  # a prefix of real ids is fine
    assert not any("runtime" in line for line in lines)  # the runtime table is a known key


def test_known_keys_say_nothing(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.warp-harness]\nselect = ["WH0"]\nextend-select = ["WH016"]\ndebounce-ms = 10\n',
        encoding="utf-8",
    )
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    done = _check(".", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_an_unknown_code_on_the_command_line_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    done = _check("k.py", "--select", "WH777", cwd=tmp_path)
    assert done.returncode == 2
    assert "invalid rule code or prefix for --select: WH777" in done.stderr


def test_an_unknown_runtime_key_is_said_once(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.warp-harness.runtime]\nmemory_mbb = 2048\ncapture = ["python k.py"]\nexecutor = "local"\n',
        encoding="utf-8",
    )
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "ci", "."],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "unknown key" in line]
    assert len(warned) == 1 and "`memory_mbb` (did you mean `memory-mb`?)" in warned[0], done.stderr
