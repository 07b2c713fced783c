"""Trust: an untrusted workspace never has its code executed, and nothing is stored through a
path that leads out of the workspace.

The untrusted workspace's every module (kernels, a contract sibling, a helper, a conftest,
modules named like the daemon's own imports) writes a marker file when imported; the real
``warp-harness`` processes (daemon, ci, replay, bench, tune) are pointed at it and the markers
must never appear. The escape tests give a trusted daemon a ``.warp-harness`` (or its
``results``, ``repros``, ``kernels``, ``history.msgpack``) that is a symlink to a folder
outside, and check that the folder stays empty while the checks still run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES, FAST, by_rule, write
from reliability_helpers import MARKER_IMPORT, Procs, files_under, spawn_daemon, wait_ready

from warp_harness.daemon import cache as result_cache
from warp_harness.daemon import findings as F
from warp_harness.daemon import kernel_cache, repros
from warp_harness.daemon import protocol as P
from warp_harness.daemon.feedback import History
from warp_harness.daemon.results import FailingCase
from warp_harness.daemon.server import Daemon, DaemonThread

# modules the daemon itself imports after start-up: a workspace copy must not shadow them
SHADOWED = ("json", "msgpack", "watchdog", "numpy", "asyncio", "tomllib", "warp")


def _untrusted_workspace(root: Path) -> tuple[Path, Path]:
    ws = root / "ws"
    markers = root / "markers"
    markers.mkdir()
    ws.mkdir()

    def marked(name: str, body: str = "") -> str:
        return MARKER_IMPORT.format(marker=str(markers / name), name=name) + body

    kernel = (EXAMPLES / "saxpy.py").read_text()
    write(ws, "saxpy.py", marked("saxpy") + kernel)
    write(ws, "scale.py", marked("scale") + (EXAMPLES / "scale.py").read_text())
    write(ws, "scale_contract.py", marked("scale_contract") + (EXAMPLES / "scale_contract.py").read_text())
    write(
        ws,
        "helpers.py",
        marked("helpers", "import warp as wp\n\n\n@wp.func\ndef two() -> float:\n    return 2.0\n"),
    )
    write(ws, "tune_chunks.py", marked("tune_chunks") + (EXAMPLES / "tune_chunks.py").read_text())
    write(ws, "conftest.py", marked("conftest"))
    write(ws, "pkg/__init__.py", marked("pkg"))
    write(ws, "pkg/inner.py", marked("inner") + kernel)
    for name in SHADOWED:
        write(ws, f"{name}.py", marked(name, "raise ImportError('shadowed')\n"))
    write(ws, "pyproject.toml", "[tool.warp-harness]\ntrust = false\n")
    return ws, markers


def _cli() -> list[str]:
    """The installed console script (what editors and hooks run); ``python -m warp_harness.daemon``
    (which drops the current folder from sys.path) where there is none."""
    script = Path(sys.executable).with_name("warp-harness")
    return [str(script)] if script.exists() else [sys.executable, "-m", "warp_harness.daemon"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_cli(), *args], capture_output=True, text=True, cwd=str(cwd), timeout=120)


def test_an_untrusted_workspace_never_has_its_code_executed(tmp_path: Path, procs: Procs) -> None:
    ws, markers = _untrusted_workspace(tmp_path)
    sock = tmp_path / "run" / "d.sock"
    # the console script as an editor starts it, from inside the workspace
    daemon = subprocess.Popen(
        [*_cli(), "daemon", str(ws), "--socket", str(sock), "--debounce-ms", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(ws),
        start_new_session=True,
    )
    procs.append(daemon)
    wait_ready(daemon, sock)
    with P.Client(sock, timeout=30) as c:
        assert c.request("hello", client="test")["trusted"] is False
        for name in ("saxpy.py", "scale.py", "scale_contract.py", "helpers.py", "pkg/inner.py"):
            reply = c.request("check", path=name, force=True)
            assert reply["status"] == "untrusted" and F.UNTRUSTED in [r["rule"] for r in reply["records"]]
        # real saves, seen by watchdog
        for name in ("saxpy.py", "pkg/inner.py", "helpers.py"):
            (ws / name).write_text((ws / name).read_text() + "\n# saved\n")
            c.wait_push("result", timeout=30, where={"path": name})
        assert c.request("status")["worker"] is None  # no worker was ever started
        c.request("shutdown")
    daemon.communicate(timeout=60)
    # the other commands, started from inside the workspace too
    assert _run("ci", str(ws), "--format", "json", cwd=ws).returncode in (0, 1)
    for args in (("replay", str(ws)), ("bench", str(ws)), ("tune", str(ws / "tune_chunks.py"))):
        r = _run(*args, cwd=ws)
        assert r.returncode != 0 and "trust" in (r.stderr + r.stdout).lower(), (args, r.stderr)
    time.sleep(0.2)
    assert sorted(p.name for p in markers.iterdir()) == []
    assert not (ws / ".warp-harness" / "kernels").exists()  # nothing was built either


def test_python_m_warp_harness_daemon_from_a_neutral_folder_runs_nothing(
    tmp_path: Path, procs: Procs
) -> None:
    ws, markers = _untrusted_workspace(tmp_path)
    sock = tmp_path / "run" / "d.sock"
    daemon = spawn_daemon(ws, sock, trust=False, cwd=tmp_path)
    procs.append(daemon)
    wait_ready(daemon, sock)
    with P.Client(sock, timeout=30) as c:
        assert c.request("check", path="saxpy.py")["status"] == "untrusted"
    # `python -m warp_harness.daemon` drops the current folder from sys.path itself
    r = subprocess.run(
        [sys.executable, "-m", "warp_harness.daemon", "ci", str(ws), "--static-only"],
        capture_output=True,
        text=True,
        cwd=str(ws),
        timeout=120,
    )
    assert r.returncode in (0, 1), r.stderr
    assert sorted(p.name for p in markers.iterdir()) == []


def test_python_m_warp_harness_daemon_from_inside_the_workspace_runs_nothing(
    tmp_path: Path, procs: Procs
) -> None:
    ws, markers = _untrusted_workspace(tmp_path)
    sock = tmp_path / "run" / "d.sock"
    daemon = spawn_daemon(ws, sock, trust=False, cwd=ws)
    procs.append(daemon)
    try:
        wait_ready(daemon, sock, timeout=20)
    except AssertionError:
        pass
    assert sorted(p.name for p in markers.iterdir()) == []


# --------------------------------------------------------------------------- paths out of the workspace


def _escape_layouts(ws: Path, outside: Path) -> None:
    """``.warp-harness`` a real folder whose every store is a symlink to ``outside``."""
    state = ws / ".warp-harness"
    for sub in ("results", "repros", "kernels"):
        (outside / sub).mkdir()
    (outside / "history.msgpack").write_bytes(b"theirs")
    (outside / "daemon.json").write_text("theirs")
    # built aside and moved in: a running daemon may make its own (real) state folder at any moment
    # once a symlinked one is gone (a write queued behind its last answer); that one is replaced
    staged = ws / ".warp-harness-staged"
    staged.mkdir()
    for sub in ("results", "repros", "kernels"):
        (staged / sub).symlink_to(outside / sub, target_is_directory=True)
    (staged / "history.msgpack").symlink_to(outside / "history.msgpack")
    (staged / "daemon.json").symlink_to(outside / "daemon.json")
    for _ in range(50):
        if state.is_dir() and not state.is_symlink():
            shutil.rmtree(state, ignore_errors=True)
        try:
            staged.rename(state)
            return
        except OSError:  # the daemon made it again in between
            time.sleep(0.05)
    raise AssertionError(f"{state} kept being re-created")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in files_under(folder) if p.is_file()}


@pytest.mark.slow
def test_a_trusted_daemon_never_stores_through_a_symlink_out_of_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(EXAMPLES / "boundary_bug.py", ws / "boundary_bug.py")  # fails: a repro to store
    (ws / ".warp-harness").symlink_to(outside, target_is_directory=True)
    logs: list[str] = []
    daemon = Daemon(
        ws,
        trust=True,
        socket_path=tmp_path / "run" / "d.sock",
        runtime_overrides=FAST.to_dict(),
        debounce_ms=20,
        log=logs.append,
    )
    t = DaemonThread(daemon).start()
    try:
        with P.Client(daemon.socket_path, timeout=120) as c:
            # 1. .warp-harness itself leads out
            first = c.request("check", path="boundary_bug.py")
            assert first["status"] == "fail" and by_rule(first, F.UNWRITTEN), first["records"]
            assert first["repros"] == []
            refused = [r for r in first["records"] if "failing case not stored" in r["message"]]
            assert refused and "outside the workspace" in refused[0]["message"]
            assert files_under(outside) == []
            assert any("outside the workspace" in line for line in logs)
            # 2. a real .warp-harness whose results, repros, kernels, history, daemon.json lead out
            (ws / ".warp-harness").unlink()
            _escape_layouts(ws, outside)
            before = _snapshot(outside)
            second = c.request("check", path="boundary_bug.py", force=True)
            assert by_rule(second, F.UNWRITTEN) and second["repros"] == []
            # a save with new kernel code: a fresh build, which must not go into the escaping kernels/
            text = (ws / "boundary_bug.py").read_text().replace("if i < n - 1:", "if i < n:")
            c.pushes.clear()
            (ws / "boundary_bug.py").write_text(text)
            third = c.wait_push("result", timeout=120, where={"path": "boundary_bug.py"})
            assert third["kernels"]["shift_add"]["validate"] == {"cpu": "pass"}, third["records"]
            assert third["cached"] is False
            assert c.request("check", path="boundary_bug.py")["cached"] is False  # nothing cached
            assert _snapshot(outside) == before
        t.stop()
        assert _snapshot(outside) == before  # stopping does not remove their daemon.json either
    finally:
        t.stop()


def test_stores_refuse_escaping_folders(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "k.py").write_text("")
    _escape_layouts(ws, outside)
    # theirs: old build folders and msgpack files that are not ours
    for i in range(5):
        (outside / "kernels" / f"old{i}").mkdir()
        (outside / "kernels" / f"old{i}" / "x.o").write_bytes(b"x" * 100)
        os.utime(outside / "kernels" / f"old{i}", (0, 0))
    (outside / "results" / "theirs.msgpack").write_bytes(b"not ours")
    before = _snapshot(outside)

    report = kernel_cache.prune(ws, keep=0, max_bytes=0)
    assert report.removed == 0
    folder = kernel_cache.folder_for(ws, "a" * 64)
    assert not folder.resolve().is_relative_to(outside) and folder.is_dir()
    cache = result_cache.ResultCache(ws)
    with pytest.raises(result_cache.OutsideWorkspaceError):
        cache.store(ws / "k.py", "key", {"records": []})
    assert cache.lookup(ws / "k.py", "key") is None
    assert cache.dependents(ws / "k.py") == []
    with pytest.raises(repros.OutsideWorkspaceError):
        repros.store(ws, ws / "k.py", {"kernel": "k", "rule": "WHD020"}, {})
    history = History(ws)
    assert history.files == {}  # theirs was not read as ours
    history.update("k.py", [])  # replaces the link by a file of ours; never writes through it
    assert _snapshot(outside) == before


def test_repro_names_cannot_climb_out_of_the_library(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    module = ws / "a" / "b" / "..k.py"
    module.write_text("")
    library = repros.library_dir(ws)
    for kernel in ("../../../../escape", "/etc/passwd", "..", "a/../../b", "\x00x", "k" * 500):
        failure = {"kernel": kernel, "device": "../cpu", "edge_case": "../../e", "rule": "WHD020"}
        file = repros.store(ws, module, FailingCase.from_dict(failure), {})
        assert file.parent == library and file.resolve().parent == library.resolve(), file
    assert {p.parent for p in files_under(tmp_path)} <= {library, module.parent}
    with pytest.raises(repros.OutsideWorkspaceError):  # a module outside, reached through `..`
        repros.store(ws, ws / ".." / "k.py", FailingCase(kind="numeric", kernel="k"), {})


def test_check_requests_and_saves_do_not_follow_symlinks_out(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text((EXAMPLES / "saxpy.py").read_text())
    (ws / "link.py").symlink_to(outside / "secret.py")
    daemon = Daemon(
        ws, trust=False, socket_path=tmp_path / "run" / "d.sock", debounce_ms=20, log=lambda s: None
    )
    t = DaemonThread(daemon).start()
    try:
        with P.Client(daemon.socket_path, timeout=30) as c:
            for path in ("link.py", str(outside / "secret.py"), "../outside/secret.py", "/etc/passwd"):
                assert c.request("check", path=path)["code"] == P.E_BAD_REQUEST, path
            (outside / "secret.py").write_text((outside / "secret.py").read_text() + "\n# saved\n")
            os.utime(ws / "link.py", follow_symlinks=False)
            (ws / "link.py").unlink()  # re-created: a created event on a link that leads out
            (ws / "link.py").symlink_to(outside / "secret.py")
            time.sleep(0.5)
            assert c.request("status")["jobs_done"] == 0
            assert c.request("results")["results"] == []
    finally:
        t.stop()
