"""A file whose name is not valid UTF-8 (issue 12, item 8).

Linux allows any bytes in a name; Python holds ``b"r\\xffx.py"`` as ``"r\\udcffx.py"`` (surrogate
escapes). Such a name made ``packb`` raise in the daemon's send: the daemon never answered
``results`` again, and ``check --output-format sarif`` / ``ci --sarif`` crashed and wrote
nothing. Real daemon process, real socket, real ``python -m warp_harness`` runs, SARIF checked
against the 2.1.0 schema as tests/output does.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from reliability_helpers import Procs, alive, spawn_daemon, wait_ready

from warp_harness.daemon import protocol as P
from warp_harness.daemon.connection import Connection

REPO = Path(__file__).resolve().parents[2]
RACE = (REPO / "examples" / "buggy" / "race.py").read_text(encoding="utf-8")  # findings: WH errors
NAME = os.fsdecode(b"r\xffx.py")
SCHEMA_PATH = REPO / "tests" / "output" / "data" / "sarif-schema-2.1.0.json"
# RFC 3986: a URI is ASCII, its characters unreserved, reserved or %XX
URI_RE = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$")


def sarif_validator() -> Any:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def uris(log: dict[str, Any]) -> list[str]:
    """Every ``artifactLocation.uri`` in the log."""
    found: list[str] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            loc = obj.get("artifactLocation")
            if isinstance(loc, dict):
                found.append(loc["uri"])
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(log)
    return found


def check_sarif(data: bytes) -> dict[str, Any]:
    """``data`` is a valid SARIF 2.1.0 log in UTF-8 whose results name ``r%FFx.py``."""
    log = json.loads(data.decode("utf-8"))  # strict: the raw 0xff byte must not leak out
    errors = list(sarif_validator().iter_errors(log))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    assert log["runs"][0]["results"], "the race in the file has findings"
    found = uris(log)
    assert found and all(URI_RE.match(u) for u in found), found
    assert "r%FFx.py" in found
    return log  # type: ignore[no-any-return]


def folder_with_bad_name(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / NAME).write_text(RACE, encoding="utf-8")
    assert os.fsencode(NAME) in os.listdir(os.fsencode(folder))
    return folder


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", *args], cwd=str(cwd), capture_output=True, timeout=300
    )


def test_check_writes_valid_sarif_and_json(tmp_path: Path) -> None:
    folder = folder_with_bad_name(tmp_path)
    sarif = run_cli("check", "--output-format", "sarif", ".", cwd=folder)
    assert sarif.returncode == 1, sarif.stderr.decode(errors="replace")  # findings, not a crash
    log = check_sarif(sarif.stdout)
    messages = json.dumps(log)  # text shows the undecodable byte as \xff
    assert "\\udcff" not in messages
    out = run_cli("check", "--output-format", "json", ".", cwd=folder)
    assert out.returncode == 1, out.stderr.decode(errors="replace")
    document = json.loads(out.stdout.decode("utf-8"))
    assert document["results"] and {e["path"] for e in document["results"]} == {"r\\xffx.py"}


def test_ci_sarif_is_written_and_valid(tmp_path: Path) -> None:
    folder = folder_with_bad_name(tmp_path)
    target = tmp_path / "out.sarif"
    done = run_cli("ci", "--static-only", "--sarif", str(target), ".", cwd=folder)
    assert done.returncode == 1, done.stderr.decode(errors="replace")
    assert target.is_file(), done.stderr.decode(errors="replace")
    check_sarif(target.read_bytes())


def test_the_daemon_answers_results_for_a_non_utf8_file_name(tmp_path: Path, procs: Procs) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sock = tmp_path / "run" / "d.sock"
    proc = spawn_daemon(ws, sock, trust=False)
    procs.append(proc)
    wait_ready(proc, sock)
    with P.Client(sock, timeout=60) as c:
        c.request("hello", client="test", subscribe=True)
        (ws / NAME).write_text(RACE, encoding="utf-8")  # saved into the watched workspace
        pushed = c.wait_push("result", where={"path": NAME}, timeout=60)
        assert pushed["records"]
        reply = c.request("results", timeout=10)
        assert reply["type"] == "results", reply
        (result,) = [r for r in reply["results"] if r["path"] == NAME]
        assert {r["location"]["path"] for r in result["records"]} == {NAME}  # the records name the file
        one = c.request("results", path=NAME, timeout=10)  # the name goes back in a request too
        assert [r["path"] for r in one["results"]] == [NAME]
        assert c.request("check", path=NAME, timeout=60)["type"] == "result"
        assert c.request("ping", timeout=10)["type"] == "pong"
    assert alive(proc.pid)


@pytest.mark.parametrize("bad", [object(), "\ud800", 2**70])
def test_a_reply_that_cannot_be_encoded_becomes_an_error(bad: object) -> None:
    """``Connection.send`` on a real socket: the unencodable reply is replaced by an ``internal``
    error with its id, and the next message still goes out."""
    ours, theirs = socket.socketpair()
    theirs.settimeout(10)

    async def send_two() -> None:
        _, writer = await asyncio.open_unix_connection(sock=ours)
        conn = Connection(writer, P.MAX_FRAME)
        await conn.send(P.message("result", id=3, value=bad))
        await conn.send(P.message("pong", id=4))
        writer.close()

    asyncio.run(send_two())
    first = P.recv_message(theirs, timeout=10)
    second = P.recv_message(theirs, timeout=10)
    theirs.close()
    assert first["type"] == "error" and first["code"] == P.E_INTERNAL and first["id"] == 3, first
    assert "could not be encoded" in first["message"]
    assert second == P.message("pong", id=4)


@pytest.mark.parametrize("command", ["check", "ci"])
def test_text_output_to_a_file_names_the_file_as_the_file_system_does(tmp_path: Path, command: str) -> None:
    folder = folder_with_bad_name(tmp_path)
    target = tmp_path / "report.txt"
    extra = ["--static-only"] if command == "ci" else []
    done = run_cli(command, ".", *extra, "--output-file", str(target), cwd=folder)
    assert done.returncode == 1, done.stderr.decode(errors="replace")  # findings, not a crash
    assert b"Traceback" not in done.stderr
    assert os.fsencode(NAME) in target.read_bytes()  # the raw bytes, as stdout writes them
