"""The rest of Ruff's daily loop on `check`, through the real command line: --watch, --config, --exclude /
--extend-exclude, -q/--quiet, --show-settings, --add-noqa, the ALL selector, and stdin without `-`."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BAD = """import warp as wp


@wp.kernel
def scale_half(x: wp.array(dtype=wp.float16)):
    i = wp.tid()
    x[i] = x[i] * 0.5
    y = wp.sqroot(float(x[i]))
"""
GOOD = """import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0
"""


def run(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "check", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=stdin,
        timeout=120,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the settings search stops here
    (tmp_path / "bad.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    return tmp_path


def test_quiet_prints_the_findings_only(ws: Path) -> None:
    loud = run("--no-cache", cwd=ws)
    quiet = run("-q", "--no-cache", cwd=ws)
    assert loud.returncode == quiet.returncode == 1
    assert "Found 2 errors" in loud.stdout and "Found" not in quiet.stdout
    assert quiet.stdout == loud.stdout[: loud.stdout.rindex("\nFound")]
    (ws / "bad.py").unlink()
    assert run("-q", cwd=ws).stdout == ""  # not even "All checks passed!"


def test_exclude_replaces_and_extend_exclude_adds(ws: Path) -> None:
    (ws / "pyproject.toml").write_text('[tool.warp-harness]\nexclude = ["bad.py"]\n', encoding="utf-8")
    (ws / "other.py").write_text(BAD, encoding="utf-8")
    assert run("--output-format", "concise", cwd=ws).stdout.count("other.py:") == 2
    # --exclude replaces the configured list: bad.py is checked again
    replaced = run("--output-format", "concise", "--exclude", "other.py", cwd=ws).stdout
    assert "bad.py:" in replaced and "other.py:" not in replaced
    extended = run("--extend-exclude", "other.py", cwd=ws)
    assert extended.returncode == 0 and "All checks passed!" in extended.stdout


def test_config_names_the_settings_file(ws: Path) -> None:
    (ws / "pyproject.toml").write_text('[tool.warp-harness]\nselect = ["WH003"]\n', encoding="utf-8")
    (ws / "strict.toml").write_text('select = ["WH004"]\n', encoding="utf-8")
    found = run("--output-format", "concise", "--no-cache", cwd=ws).stdout
    assert "WH003" in found and "WH004" not in found
    named = run("--output-format", "concise", "--no-cache", "--config", "strict.toml", cwd=ws).stdout
    assert "WH004" in named and "WH003" not in named
    missing = run("--config", "nope.toml", cwd=ws)
    assert missing.returncode == 2 and "nope.toml: no such file" in missing.stderr


def test_show_settings_prints_the_resolved_settings(ws: Path) -> None:
    (ws / "pyproject.toml").write_text('[tool.warp-harness]\ntarget = "sm_90"\n', encoding="utf-8")
    shown = run("--show-settings", "--select", "ALL", "--extend-exclude", "gen", cwd=ws)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "Resolved settings for: ." and lines[1] == f"Settings path: {ws / 'pyproject.toml'}"
    assert "target = 'sm_90'" in lines and "select = ['ALL']" in lines and "exclude = ['gen']" in lines


def test_all_selects_every_rule_and_ignores_every_rule(ws: Path) -> None:
    every = run("--select", "ALL", "--output-format", "concise", "--no-cache", cwd=ws).stdout
    assert "WH003" in every and "WH004" in every
    assert run("--ignore", "ALL", "--no-cache", cwd=ws).returncode == 0
    assert (
        run("--select", "ALL", "--ignore", "WH003", "--output-format", "concise", cwd=ws).stdout.count(
            "WH003"
        )
        == 0
    )


def test_add_noqa_silences_every_finding(ws: Path) -> None:
    done = run("--add-noqa", "--no-cache", cwd=ws)
    assert done.returncode == 0 and "Added 2 noqa directives." in done.stderr, done.stderr
    text = (ws / "bad.py").read_text(encoding="utf-8")
    assert "    x[i] = x[i] * 0.5  # wh: ignore[WH003]\n" in text
    assert "    y = wp.sqroot(float(x[i]))  # wh: ignore[WH004]\n" in text
    assert run("--no-cache", cwd=ws).returncode == 0  # and none is reported as unused
    again = run("--add-noqa", "--no-cache", cwd=ws)
    assert "Added 0 noqa directives." in again.stderr and (ws / "bad.py").read_text(encoding="utf-8") == text


def test_add_noqa_extends_an_existing_suppression() -> None:
    from warp_harness.add_noqa import add_noqa
    from warp_harness.record import Location, Record, Severity, Stage

    def rec(rule: str, line: int) -> Record:
        return Record(Stage.CONSTRAINT, rule, Severity.ERROR, Location("k.py", line, 0), "m")

    text = 'x = 1  # wh: ignore[WH010]\ns = """a\nb"""\ny = 2  # wh: ignore\n'
    done = add_noqa(text, [rec("WH003", 1), rec("WH004", 2), rec("WH003", 4)])
    assert done.text.splitlines()[0] == "x = 1  # wh: ignore[WH010, WH003]"
    assert done.text.splitlines()[3] == "y = 2  # wh: ignore"  # a blanket one already covers it
    assert done.skipped == 1 and done.added == 1  # line 2 ends inside a string: no comment there


def test_stdin_filename_without_dash_reads_stdin(ws: Path) -> None:
    done = run("--stdin-filename", "k.py", "--output-format", "concise", cwd=ws, stdin=BAD)
    assert done.returncode == 1 and done.stdout.startswith("k.py:7:12: WH003"), done.stdout + done.stderr
    mixed = run("bad.py", "--stdin-filename", "k.py", cwd=ws, stdin=BAD)
    assert mixed.returncode == 2 and "give `-` or no PATH" in mixed.stderr


def test_watch_checks_again_on_save(ws: Path) -> None:
    # started with SIGINT ignored, as a shell's background job and the CI's launcher start it: Ctrl-C
    # must stop it all the same (before the watch installed its handler, it ignored Ctrl-C there and
    # this test timed out in every CI run while it passed from a terminal)
    command = [
        sys.executable,
        "-I",
        "-m",
        "warp_harness",
        "check",
        "--watch",
        "--output-format",
        "concise",
        ".",
    ]
    proc = subprocess.Popen(
        ["/bin/sh", "-c", 'trap "" INT; exec "$@"', "sh", *command],
        cwd=ws,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        # what each stream printed so far, and how much of it a wait has already matched: a chunk can
        # hold two of the lines waited for in turn
        printed: dict[int, str] = {}
        matched: dict[int, int] = {}

        def read_until(stream: object, needle: str, timeout: float = 120) -> str:
            fd = stream.fileno()  # type: ignore[attr-defined]
            start = matched.get(fd, 0)
            deadline = time.monotonic() + timeout
            while needle not in printed.get(fd, "")[start:]:
                assert time.monotonic() < deadline, printed.get(fd, "")[start:]
                ready, _, _ = select.select([fd], [], [], 0.5)
                if ready:
                    chunk = os.read(fd, 65536).decode()
                    assert chunk, printed.get(fd, "")[start:]
                    printed[fd] = printed.get(fd, "") + chunk
            end = printed[fd].index(needle, start) + len(needle)
            matched[fd] = end
            return printed[fd][start:end]

        assert proc.stdout is not None and proc.stderr is not None
        first = read_until(proc.stdout, "WH004")
        assert "bad.py:7:12: WH003" in first
        read_until(proc.stderr, "Watching for file changes.")
        (ws / "bad.py").write_text(GOOD, encoding="utf-8")  # the fix, saved
        read_until(proc.stderr, "File change detected")
        read_until(proc.stderr, "Watching for file changes.")
        (ws / "good.py").write_text(BAD, encoding="utf-8")  # a new bug elsewhere
        after = read_until(proc.stdout, "good.py:7:12: WH003")
        assert "bad.py" not in after
        read_until(proc.stderr, "Watching for file changes.")  # that check done: Ctrl-C while it waits
        os.killpg(proc.pid, signal.SIGINT)
        # read what it still prints while it stops: a wait alone deadlocks once a pipe is full
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, (out[-2000:], err[-2000:])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=10)
