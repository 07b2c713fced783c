"""Private folders under the shared temporary folder: ``warp_harness.private_temp`` (the socket's
folder is found with it by the daemon and its clients alike); re-exported under the daemon's name."""

from __future__ import annotations

from warp_harness.private_temp import *  # noqa: F403
