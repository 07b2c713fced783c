"""Issue 12, item 14: the language server answers as LSP says, and a hostile frame does not end it.

A real ``python -m warp_harness serve`` over its stdin/stdout; raw bytes are written to its
stdin. Before the fix one ``Content-Length: 99999999999`` header was a MemoryError that ended
the server, requests with out-of-range positions got no response at all, and a request before
``initialize`` got an internal error (-32603) instead of -32002.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reliability_helpers import LspStream, Procs, lsp_frame, rss_mb, start_lsp_stdio

SERVER_NOT_INITIALIZED = -32002
INVALID_PARAMS = -32602
PARSE_ERROR = -32700


def _hover(request_id: int, uri: str, line: int, character: int = 0) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "textDocument/hover",
        "params": {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}},
    }


def _server_info(lsp: LspStream) -> dict[str, Any]:
    """The server answers a normal request (it is still up and reading at the right place)."""
    reply = lsp.request("warp-harness/serverInfo", {}, timeout=30)
    assert reply is not None, "the server went away"
    assert reply["result"]["warp_imported"] is False, reply
    info: dict[str, Any] = reply["result"]
    return info


def test_requests_before_initialize_get_server_not_initialized(tmp_path: Path, procs: Procs) -> None:
    _, lsp = start_lsp_stdio(procs, tmp_path)
    uri = (tmp_path / "k.py").as_uri()
    lsp.send(_hover(1, uri, 0))
    reply = lsp.reply_to(1)
    assert reply is not None and reply["error"]["code"] == SERVER_NOT_INITIALIZED, reply
    # a notification before initialize is dropped (no diagnostics, no error), the server stays up
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x = (\n"}},
    )
    reply = lsp.initialize(tmp_path)
    assert reply is not None and "result" in reply, reply
    assert _server_info(lsp)["documents"] == 0
    lsp.send(_hover(2, uri, 0))  # after initialize the same request is answered
    reply = lsp.reply_to(2)
    assert reply is not None and "result" in reply, reply


def test_invalid_positions_get_invalid_params(tmp_path: Path, procs: Procs) -> None:
    _, lsp = start_lsp_stdio(procs, tmp_path)
    assert lsp.initialize(tmp_path) is not None
    kernel = tmp_path / "k.py"
    kernel.write_text("import warp as wp\n")
    uri = kernel.as_uri()
    lsp.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": kernel.read_text()}},
    )
    for request_id, line, character in ((11, -1, 0), (12, 2**40, 0), (13, 0, 2**31)):
        lsp.send(_hover(request_id, uri, line, character))
        reply = lsp.reply_to(request_id, timeout=30)
        assert reply is not None, "the server went away"
        assert reply["error"]["code"] == INVALID_PARAMS, reply
        assert "Position." in reply["error"]["message"], reply
    lsp.send(_hover(14, uri, 0, 3))  # a valid one still gets its (empty) answer
    reply = lsp.reply_to(14)
    assert reply is not None and "result" in reply, reply
    # not JSON at all: a parse error, and the stream goes on
    lsp.send_raw(b"Content-Length: 5\r\n\r\n{oops")
    reply = lsp.reply_to(None)
    assert reply is not None and reply["error"]["code"] == PARSE_ERROR, reply
    _server_info(lsp)


def test_a_huge_content_length_is_discarded_and_the_server_stays_up(tmp_path: Path, procs: Procs) -> None:
    proc, lsp = start_lsp_stdio(procs, tmp_path)
    assert lsp.initialize(tmp_path) is not None
    # a header announcing ~100 GB, then (no such body) the next message right away
    lsp.send_raw(b"Content-Length: 99999999999\r\n\r\n")
    _server_info(lsp)
    # a body above the cap that really arrives (20 MiB of JSON) is skipped without holding it
    # whole, and the message after it is read from the right place
    big = lsp_frame({"jsonrpc": "2.0", "method": "$/noise", "params": {"x": "y" * (20 << 20)}})
    lsp.send_raw(big)
    _server_info(lsp)
    # a header line without an end (64 MiB, no newline) is not buffered either
    lsp.send_raw(b"X-Noise: " + b"z" * (64 << 20) + b"\r\n")
    _server_info(lsp)
    assert rss_mb(proc.pid) < 400, rss_mb(proc.pid)
    assert proc.poll() is None
    err = (tmp_path / "serve.err").read_text(errors="replace")
    assert "MemoryError" not in err and "exceeds the 16777216-byte limit" in err, err[-2000:]
    # shutdown/exit still end it cleanly
    reply = lsp.request("shutdown")
    assert reply is not None and reply.get("error") is None
    lsp.notify("exit")
    assert proc.wait(30) == 0
