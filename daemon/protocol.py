"""The daemon's wire format, as the daemon's modules import it: the framing and the socket's
location live in ``warp_harness.wire`` (shared with the language server and the command line,
docs/protocol.md); this module re-exports them under their old name."""

from __future__ import annotations

from warp_harness.wire.framing import *  # noqa: F403
from warp_harness.wire.location import *  # noqa: F403
