"""Helpers of the reliability tests (imported by name: ``from reliability_helpers import ...``).

Real parts only: ``python -m warp_harness daemon`` subprocesses, their Unix socket, files
written in the workspace. Every process a test starts is ended by its pid (``Procs``).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from daemon_helpers import spawn_daemon, wait_ready

from warp_harness.daemon import protocol as P

__all__ = ["spawn_daemon", "wait_ready"]

NOBODY = 65534

# a fast dynamic tier: short benchmark, 2 s launch limit, no debug re-run of crashes
FAST_PYPROJECT = """
[tool.warp-harness.runtime]
bench_repeats = 5
bench_max_time_s = 0.02
bench_warmup = 1
launch_timeout_s = 2.0
timeout_s = 120.0
memory_mb = 2048
localize = false
shrink = false
debounce_ms = 30
"""

# the examples a faults test's daemon checks: a good kernel, a hang, an out-of-bounds crash, a bug
FAULT_EXAMPLES = ("saxpy.py", "hang.py", "oob_crash.py", "boundary_bug.py")


def fault_workspace(root: Path) -> Path:
    """``root/ws``: the fast runtime settings and ``FAULT_EXAMPLES`` copied from examples/contracts."""
    from daemon_helpers import EXAMPLES

    ws = root / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(FAST_PYPROJECT)
    for name in FAULT_EXAMPLES:
        shutil.copy(EXAMPLES / name, ws / name)
    return ws


MARKER_IMPORT = 'import pathlib; pathlib.Path({marker!r}).write_text("executed {name}")\n'


class Procs(list[subprocess.Popen[str]]):
    """The processes a test started; each is killed (its process group, by pid) at the end."""

    def kill_all(self) -> None:
        for p in self:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                p.communicate(timeout=10)
            except (subprocess.TimeoutExpired, ValueError):
                pass


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except (FileNotFoundError, IndexError):
        return False


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def ping(sock: Path, timeout: float = 10.0) -> float:
    """Seconds a fresh connection takes to get a pong."""
    t0 = time.perf_counter()
    with P.Client(sock, timeout=timeout) as c:
        assert c.request("ping")["type"] == "pong"
    return time.perf_counter() - t0


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink()) if folder.exists() else []


def readable_map(path: Path) -> bool:
    """Whether ``path`` holds one msgpack map (read without the daemon's discard-on-corruption)."""
    try:
        data = path.read_bytes()
        return isinstance(P.unpackb(data, max_size=max(len(data), 1)), dict)
    except Exception:
        return False


def connect_as(uid: int, gid: int, sock: Path) -> int:
    """Connect to ``sock`` from a forked child running as ``uid``/``gid`` (needs root); the
    child's errno (0: connected)."""
    import socket

    pid = os.fork()
    if pid == 0:  # the child: drop privileges, try, report through the exit status
        code = 99
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            try:
                s.connect(str(sock))
                code = 0
            except OSError as exc:
                code = exc.errno or 98
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code != 99, "the child could not drop its privileges"
    return code


def set_immutable(paths: Iterable[Path], on: bool) -> bool:
    """``chattr +i`` / ``-i``: read-only even for root (ext4, xfs ...); False where unsupported."""
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    ok = True
    for path in paths:
        r = subprocess.run([chattr, "+i" if on else "-i", str(path)], capture_output=True)
        ok = ok and r.returncode == 0
    return ok


# a process that stores one large result over and over through the daemon's own store code
WRITER = """
import sys
from pathlib import Path
from warp_harness.daemon.cache import ResultCache

ws = Path(sys.argv[1])
cache = ResultCache(ws)
blob = b"x" * (int(sys.argv[2]) << 20)
n = 0
while True:
    n += 1
    cache.store(ws / "k.py", "key", {"records": [], "n": n, "blob": blob})
    print(n, flush=True)
"""


def kill_mid_write(ws: Path, rounds: int, mb: int, seed: int = 0) -> dict[str, int]:
    """Kill -9 a process in the middle of rewriting one ``mb``-MiB result, ``rounds`` times.

    Returns counts: ``mid_write`` (a temporary file was left: the kill landed inside a write),
    ``readable`` (the result could be read afterwards), ``not_older`` (it held the last version
    the writer had reported stored, or a newer one), ``temp_removed`` (by ``remove_stale_temp``).
    """
    import random

    from warp_harness.daemon.cache import ResultCache, remove_stale_temp

    rng = random.Random(seed)
    (ws / "k.py").write_text("# the module the result belongs to\n")
    counts = {"rounds": rounds, "mid_write": 0, "readable": 0, "not_older": 0, "temp_removed": 0}
    for _ in range(rounds):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ws), str(mb)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            stored = int(proc.stdout.readline())  # one complete version first
            time.sleep(rng.uniform(0.0, 0.1))
            results = ws / ".warp-harness" / "results"
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the next write is under way: its temporary file exists
                if any(e.name.endswith(".tmp") for e in os.scandir(results)):
                    break
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            rest = proc.stdout.read().split()
            stored = int(rest[-1]) if rest else stored
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        results = ws / ".warp-harness" / "results"
        counts["mid_write"] += any(results.glob(".*.tmp"))
        entry = ResultCache(ws).lookup(ws / "k.py", "key")
        if entry is not None:
            counts["readable"] += 1
            counts["not_older"] += int(entry["n"]) >= stored
        counts["temp_removed"] += remove_stale_temp(ws, min_age_s=0)
    return counts


def write_as(uid: int, folder: Path, name: str, text: str, mode: int = 0o644) -> None:
    """Create ``folder/name`` from a forked child running as ``uid`` (needs root): a file another
    local user really wrote. The child opens ``folder`` before it drops its privileges, so it
    needs no access to the folders above, only write access to ``folder`` itself."""
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            code = 98
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode, dir_fd=dir_fd)
            os.write(fd, text.encode())
            os.close(fd)
            code = 0
        finally:
            os._exit(code)
    os.close(dir_fd)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code == 0, f"the child running as uid {uid} could not write {name} (exit {code})"
    assert (folder / name).stat().st_uid == uid


# --------------------------------------------------------------------------- raw LSP over bytes


def lsp_frame(message: Any) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class LspStream:
    """JSON-RPC over a byte stream (a server's pipes or a TCP socket), with raw writes for the
    framing tests. A reader thread queues every message; None in the queue: end of stream."""

    def __init__(self, write: Callable[[bytes], None], read: Callable[[int], bytes]) -> None:
        self._write = write
        self._read = read
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.closed = False
        self._next_id = 1000
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = self._read(65536)
                    if not chunk:
                        return
                    buf += chunk
                header, _, buf = buf.partition(b"\r\n\r\n")
                fields = dict(line.split(b":", 1) for line in header.split(b"\r\n") if b":" in line)
                length = int(fields[b"Content-Length"])
                while len(buf) < length:
                    chunk = self._read(65536)
                    if not chunk:
                        return
                    buf += chunk
                self.messages.put(json.loads(buf[:length]))
                buf = buf[length:]
        except OSError:
            return
        finally:
            self.closed = True
            self.messages.put(None)

    def send_raw(self, data: bytes) -> None:
        self._write(data)

    def send(self, message: Any) -> None:
        self._write(lsp_frame(message))

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def reply_to(self, request_id: Any, timeout: float = 30.0) -> dict[str, Any] | None:
        """The response to ``request_id`` (server requests are answered with null on the way);
        None when the stream ends first."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"no response to {request_id!r} within {timeout} s") from None
            if msg is None:
                self.messages.put(None)  # stays at the end for the next caller
                return None
            if "method" in msg and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "method" not in msg and msg.get("id") == request_id:
                return msg

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any] | None:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self.reply_to(self._next_id, timeout)

    def initialize(self, root: Path, options: Any = None, timeout: float = 60.0) -> dict[str, Any] | None:
        params = {
            "processId": None,
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": {},
            "initializationOptions": options,
        }
        reply = self.request("initialize", params, timeout)
        if reply is not None and "result" in reply:
            self.notify("initialized", {})
        return reply

    def wait_closed(self, timeout: float = 10.0) -> bool:
        """Whether the stream ends within ``timeout`` (messages before the end are dropped)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.messages.get(timeout=0.1) is None:
                    self.messages.put(None)
                    return True
            except queue.Empty:
                continue
        return False


def lsp_over_pipes(proc: subprocess.Popen[bytes]) -> LspStream:
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def write(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    return LspStream(write, stdout.read1)


def lsp_over_socket(sock: Any) -> LspStream:
    return LspStream(sock.sendall, sock.recv)


def start_lsp_stdio(procs: list[Any], cwd: Path) -> tuple[subprocess.Popen[bytes], LspStream]:
    """A real ``python -m warp_harness serve`` over pipes (its stderr: ``cwd/serve.err``)."""
    err = open(cwd / "serve.err", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "warp_harness", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=err,
        cwd=str(cwd),
        start_new_session=True,
    )
    err.close()
    procs.append(proc)
    return proc, lsp_over_pipes(proc)
