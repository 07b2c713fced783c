"""Issue 12 item 13: a corrupt build in the kernel cache is rebuilt, never a verdict.

A real trusted daemon builds saxpy on the CPU into its kernel cache (``<key>/`` in the user's
private cache folder). Its
``.o`` (then, separately, its ``.meta``) is truncated and a fresh worker (the old one is
killed, so nothing of the build is left in memory) checks the file again: the kernel still
passes after an automatic rebuild, the result says the cached build was discarded, and no
result, cached or not, carries WHD003 for a build artefact the harness itself stored.
A build on a full disk (a small tmpfs) is not cached as the kernel's verdict either.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import EXAMPLES, rules_of
from reliability_helpers import FAST_PYPROJECT, Procs, spawn_daemon, wait_for, wait_ready

from warp_harness.daemon import findings as F
from warp_harness.daemon import kernel_cache
from warp_harness.daemon import protocol as P

# where builds go, and which compile first: the workspaces' own caches, not the session's (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.private_kernel_builds]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    root = tmp_path_factory.mktemp("corrupt")
    ws = root / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(FAST_PYPROJECT)
    shutil.copy(EXAMPLES / "saxpy.py", ws / "saxpy.py")
    sock = root / "run" / "d.sock"
    started = Procs()
    started.append(spawn_daemon(ws, sock, "--no-watch"))
    try:
        wait_ready(started[0], sock)
        with P.Client(sock, timeout=120) as c:
            first = c.request("check", path="saxpy.py")
        assert first["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, first["records"]
        yield ws, sock
    finally:
        started.kill_all()


def build_files(ws: Path, suffix: str) -> list[Path]:
    root = kernel_cache.cache_root(ws)
    return [
        p
        for p in root.rglob(f"*{suffix}")
        if p.is_file() and p.relative_to(root).parts[0] != kernel_cache.WARP_DEFAULT
    ]


def kill_worker(c: P.Client) -> None:
    """A fresh worker loads the build from disk (a warm one keeps it in memory)."""
    pid = c.request("status")["worker"]["worker_pid"]
    if isinstance(pid, int):
        os.kill(pid, signal.SIGKILL)
        # until the daemon has reaped it: a job sent to a worker still exiting ends as a crash
        wait_for(lambda: c.request("status")["worker"]["worker_pid"] != pid, 10, "the worker to be gone")


def no_cached_build_error(r: dict[str, Any]) -> None:
    assert F.COMPILE_ERROR not in rules_of(r), (r["cached"], r["records"])


@pytest.mark.parametrize("suffix", [".o", ".meta"])
def test_truncated_build_artefact_is_rebuilt(daemon: tuple[Path, Path], suffix: str) -> None:
    ws, sock = daemon
    (artefact,) = build_files(ws, suffix)
    data = artefact.read_bytes()
    artefact.write_bytes(data[: len(data) // 2])  # a write cut short (full disk, killed writer)
    with P.Client(sock, timeout=120) as c:
        kill_worker(c)
        r = c.request("check", path="saxpy.py", force=True)
        no_cached_build_error(r)
        assert r["kernels"].get("saxpy", {}).get("validate") == {"cpu": "pass"}, [
            (x["message"], x.get("hint")) for x in r["records"]
        ]
        (note,) = [x for x in r["records"] if "discarded and rebuilt" in x["message"]]
        assert note["severity"] == "info" and note["rule"] == F.INTERNAL
        assert artefact.is_file() and artefact.read_bytes() != data[: len(data) // 2]
        again = c.request("check", path="saxpy.py")  # whatever the result cache holds now
        no_cached_build_error(again)
        assert again["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, again["records"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 40 MB tmpfs (needs root and a kernel that lets us mount)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_build_on_a_full_disk_is_not_cached(
    small_disk: Path, procs: Procs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 KB left: room for a result, none for the build (LLVM ends the worker with "IO
    failure"): whatever the record, it is not stored as the kernel's verdict. (A regression
    guard: the compile stage's crash was already not cached before issue 12.)"""
    free_kb = 12
    ws = small_disk / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(FAST_PYPROJECT)
    shutil.copy(EXAMPLES / "saxpy.py", ws / "saxpy.py")
    monkeypatch.setenv("XDG_CACHE_HOME", str(small_disk / "cache"))  # the builds go there too
    sock = small_disk.parent / "run" / "d.sock"
    proc = spawn_daemon(ws, sock, "--no-watch")
    procs.append(proc)
    wait_ready(proc, sock)
    with P.Client(sock, timeout=120) as c:
        assert c.request("check", path="saxpy.py")["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}
        source = (ws / "saxpy.py").read_text()
        (ws / "saxpy.py").write_text(source.replace("a * x[i]", "a * x[i] * 1.0"))  # a new build
        filler = small_disk / "filler"
        with open(filler, "wb") as fh:
            fh.write(b"\0" * max(shutil.disk_usage(small_disk).free - free_kb * 1024, 0))
        full = c.request("check", path="saxpy.py")
        assert full["kernels"].get("saxpy", {}).get("validate") != {"cpu": "pass"}, full["records"]
        filler.unlink()
        after = c.request("check", path="saxpy.py")
        assert not after["cached"], after["records"]
        assert after["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, after["records"]
