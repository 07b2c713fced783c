"""Files that are not what their name says (issue 12, item 9).

A workspace can hold a symlink ``x.py -> /dev/zero`` (git stores symlinks), a FIFO named
``a.py`` or a source file of many megabytes. The real ``warp-harness check`` and ``ci`` must
finish promptly, report each such file with a WH998 record of its own ("not checked"), and
still check the other files. The child runs under a 2 GiB address-space limit so that a
reader without a cap fails here instead of eating the machine's memory.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_helpers import write

BUGGY = (Path(__file__).parents[2] / "examples" / "buggy" / "mixed_precision.py").read_text()
LIMIT_AS = 2 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def _run(command: str, ws: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    args = ["check", ".", "--output-format", "json"]
    if command == "ci":
        args = ["ci", ".", "--format", "json"]
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *args],
        capture_output=True,
        text=True,
        cwd=str(ws),
        timeout=60,
        preexec_fn=_limited,
    )
    return r, time.monotonic() - t0


def _hostile(ws: Path, kind: str) -> tuple[str, str]:
    """Plant one hostile file; (its name, the text its record must hold)."""
    if kind == "dev_zero":
        (ws / "x.py").symlink_to("/dev/zero")
        return "x.py", "not checked"
    if kind == "fifo":
        os.mkfifo(ws / "a.py")
        return "a.py", "a FIFO (named pipe), not a regular file; not checked"
    if kind == "link_to_fifo":  # a link that stays inside, but ends at a FIFO
        os.mkfifo(ws / "pipe")
        (ws / "b.py").symlink_to("pipe")
        return "b.py", "a FIFO (named pipe), not a regular file; not checked"
    assert kind == "oversize"
    with open(ws / "big.py", "wb") as fh:  # 11 MiB: a comment line, then a sparse tail of spaces
        fh.write(b"# generated\n")
        fh.truncate(11 << 20)
    return "big.py", "file is 11.0 MB; larger than the 10 MB limit; not checked"


@pytest.mark.parametrize("command", ["check", "ci"])
@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "link_to_fifo", "oversize"])
def test_a_hostile_file_gets_its_own_record_and_the_rest_is_checked(
    tmp_path: Path, command: str, kind: str
) -> None:
    ws = tmp_path / "ws"
    write(ws, "k.py", BUGGY)
    name, message = _hostile(ws, kind)
    r, elapsed = _run(command, ws)
    assert r.returncode == 1, r.stderr[-2000:]
    assert elapsed < 30
    assert "Traceback" not in r.stderr
    records = json.loads(r.stdout)["results"]
    # ci names a symlink by the file it resolves to (daemon/ci.py _display)
    shown = {name, Path(os.path.realpath(ws / name)).name}
    mine = [rec for rec in records if Path(rec["path"]).name in shown]
    assert [rec["rule"] for rec in mine] == ["WH998"], mine
    assert message in mine[0]["message"] and mine[0]["severity"] == "error"
    # the other file is still checked
    assert sorted(rec["rule"] for rec in records if rec["path"].endswith("k.py")) == [
        "WH003",
        "WH003",
        "WH004",
    ]


def test_a_symlink_leading_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "k.py", BUGGY)
    secret = tmp_path / "secret.py"
    secret.write_text("PRIVATE = 'do not print me'\nthis is not python (\n")
    (ws / "out.py").symlink_to(secret)
    r, _ = _run("check", ws)
    assert r.returncode == 1, r.stderr
    records = json.loads(r.stdout)["results"]
    out = [rec for rec in records if rec["path"] == "out.py"]
    assert [rec["rule"] for rec in out] == ["WH998"]
    assert "a symlink to a file outside the workspace" in out[0]["message"]
    assert "do not print me" not in r.stdout
