"""The ``resultId`` of a diagnostics report (pulled diagnostics: server/pull.py, server/pull_workspace.py)."""

from __future__ import annotations

from lsprotocol import types


def result_id(diagnostics: list[types.Diagnostic], version: int | None) -> str:
    """A digest of the diagnostics (lsprotocol's attrs classes have a stable, complete repr)."""
    from warp_harness.digests import sha256  # a client that pulls only: start-up skips it

    return sha256(f"{version}\0{diagnostics!r}".encode()).hexdigest()[:20]


__all__ = ["result_id"]
