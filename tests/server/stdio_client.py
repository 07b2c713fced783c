"""A small synchronous LSP client over a server's stdin/stdout (for hypothesis state machines
and for benchmarks/bench_lsp.py, which want plain blocking calls and exact timestamps)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


def utf16_col(line: str, col: int) -> int:
    """A character column of ``line`` in UTF-16 code units (LSP's default position encoding)."""
    return len(line[:col].encode("utf-16-le")) // 2


class StdioClient:
    """JSON-RPC over the server's pipes; notifications are queued with the time they arrived."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.notifications: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.replies: dict[int, Any] = {}
        self.last_diagnostics: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}
        self._next_id = 0
        self._reply_ready = threading.Condition()
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stream = self.proc.stdout
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                key, _, value = line.decode().partition(":")
                headers[key.strip().lower()] = value.strip()
            body = json.loads(stream.read(int(headers["content-length"])))
            now = time.perf_counter()
            if "id" in body and "method" in body:  # a request from the server: answer it
                self._send({"jsonrpc": "2.0", "id": body["id"], "result": None})
            elif "id" in body:
                with self._reply_ready:
                    self.replies[body["id"]] = body
                    self._reply_ready.notify_all()
            else:
                self.notifications.put((now, body))

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        data = json.dumps(message).encode()
        with self._write_lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.proc.stdin.flush()

    def request(self, method: str, params: Any, timeout: float = 60.0) -> Any:
        self._next_id += 1
        request_id = self._next_id
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        with self._reply_ready:
            if not self._reply_ready.wait_for(lambda: request_id in self.replies, timeout):
                raise TimeoutError(f"no reply to {method} within {timeout} s")
            reply = self.replies.pop(request_id)
        if "error" in reply:
            raise RuntimeError(f"{method} failed: {reply['error']}")
        return reply.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def notify_at_once(self, *notes: tuple[str, Any]) -> None:
        """Several notifications in one write: the server reads them together."""
        assert self.proc.stdin is not None
        frames = b""
        for method, params in notes:
            data = json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode()
            frames += b"Content-Length: %d\r\n\r\n" % len(data) + data
        with self._write_lock:
            self.proc.stdin.write(frames)
            self.proc.stdin.flush()

    def initialize(self, root: Path, options: Any = None) -> Any:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}},
                "initializationOptions": options,
            },
        )
        self.notify("initialized", {})
        return result

    def wait_diagnostics(
        self, uri: str, version: int | None, timeout: float = 30.0, unversioned_ok: bool = False
    ) -> tuple[float, list[Any]]:
        """(arrival time, diagnostics) of the publication for ``uri`` and ``version``.

        ``version`` None waits for the unversioned publication a close sends; ``unversioned_ok``
        also accepts any unversioned one (for servers that send no version). Publications for
        other documents or versions seen on the way are remembered in ``last_diagnostics``.
        """
        seen = self.last_diagnostics.get(uri)
        if seen is not None and seen[0] == version and version is not None:
            return time.perf_counter(), seen[1]
        deadline = time.perf_counter() + timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            try:
                at, message = self.notifications.get(timeout=remaining)
            except queue.Empty:
                continue
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            params = message.get("params") or {}
            self.last_diagnostics[params.get("uri")] = (
                params.get("version"),
                params.get("diagnostics") or [],
            )
            sent = params.get("version")
            if params.get("uri") == uri and (sent == version or (unversioned_ok and sent is None)):
                return at, params.get("diagnostics") or []

    def alive(self) -> bool:
        return self.proc.poll() is None

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait(10)
