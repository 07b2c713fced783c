"""`warp-harness serve --log-level L` logs at L on stderr (what VS Code's `warpHarness.logLevel`
passes; an editor shows the server's stderr in its log), also without `--log-file`."""

from __future__ import annotations

import subprocess

from lsp_helpers import SERVER


def stderr_of(*flags: str) -> str:
    """The server's stderr when its client sends one malformed message and closes the pipe."""
    done = subprocess.run(
        [*SERVER, "--no-start-up-process", *flags],
        input=b"Content-Length: 2\r\n\r\n{}",
        capture_output=True,
        timeout=60,
    )
    return done.stderr.decode()


def test_debug_logs_on_stderr_and_the_default_stays_quiet() -> None:
    debug = stderr_of("--log-level", "debug")
    assert "pygls.feature_manager INFO Registered builtin feature initialize" in debug, debug
    assert "DEBUG" in debug, debug
    info = stderr_of("--log-level", "info")
    assert "Registered builtin feature initialize" in info and "DEBUG" not in info, info
    assert "Registered builtin feature" not in stderr_of(), "the default (warning) logs no INFO"
