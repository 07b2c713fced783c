"""`warp-harness serve --tcp` listens on 127.0.0.1 only and speaks the same LSP (to a client
with the token; tests/reliability/test_tcp_auth.py has the refusals)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of listening TCP sockets on ``port`` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


def test_tcp_is_local_only(tmp_path: Path) -> None:
    port = _free_port()
    token_file = tmp_path / "token"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "warp_harness",
            "serve",
            "--tcp",
            "--port",
            str(port),
            "--token-file",
            str(token_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.1)
        assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1, nothing else
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": tmp_path.as_uri(),
                    "capabilities": {},
                    # the token the server wrote (mode 0600): only the user can read it
                    "initializationOptions": {"authToken": token_file.read_text().strip()},
                },
            }
        ).encode()
        conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += conn.recv(65536)
        header, _, rest = reply.partition(b"\r\n\r\n")
        headers = dict(line.split(b":", 1) for line in header.split(b"\r\n"))
        length = int(headers[b"Content-Length"])
        while len(rest) < length:
            rest += conn.recv(65536)
        result = json.loads(rest[:length])["result"]
        assert result["serverInfo"]["name"] == "warp-harness"
        assert result["capabilities"]["textDocumentSync"]["change"] == 2  # incremental
        conn.close()
    finally:
        server.kill()
        server.wait(10)
