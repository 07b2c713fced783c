"""The input digest of a CUDA benchmark's large timed set without reading it back after timing.

The supervisor judges the timed loop's own outputs against the verdict worker's references only
when both workers name the same inputs: the kernel worker sends a SHA-256 of what the timed buffers
hold (``validate.input_digest``), the verdict worker one of what the generator gives for the seed.
Read back and hashed after the timed loop, a 1 GiB input cost 2 s per kernel on an H100
(stream_large: ``ship_timed_ms`` 3,970 ms for its two copies, 2026-12-07).

Here the digest is computed from the host arrays the set was uploaded from, in a thread, while the
device warms up and is timed (hashlib releases the GIL: the launching thread runs on; the events
time the device, whose memory the host's hashing does not touch), and a copy of each input is kept
on the device, never handed to the kernel. When the set's outputs are shipped, the timed input
buffers are compared with those copies on the device, bit for bit (one launch): equal, the
shipped digest is the host arrays' (joined at ``finish``, after the timed loop); different (the
kernel wrote into its inputs), the digest of the buffers as they are, read back, which the
supervisor then finds differs from the generator's. A digest that never arrives stays ``None``:
no reference matches it, no pass (the supervisor fails closed).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from warp_harness.daemon.steps import device_check
from warp_harness.daemon.steps.validate import input_digest, streamed_input_digest


class PendingDigest:
    """The digest of one timed set's inputs, computed from ``hosts`` (its input arrays as uploaded,
    by parameter name) in a thread; ``pristine``: device copies of those inputs (by argument index)."""

    def __init__(
        self,
        params: list[tuple[str, Any]],
        hosts: Mapping[str, np.ndarray],
        scalars: Mapping[str, Any],
        pristine: Mapping[int, Any],
        outputs: Sequence[str],
    ) -> None:
        self.params = params
        self.outputs = list(outputs)
        self.pristine = dict(pristine)
        self._digest: str | None = None
        self._error: BaseException | None = None
        self._waiting: list[dict[str, Any]] = []  # shipped cases whose digest is the host arrays'
        held = dict(hosts)

        def run() -> None:
            try:
                self._digest = input_digest(params, held, scalars)
            except BaseException as exc:  # a digest that fails leaves the case unconfirmed
                self._error = exc
            finally:
                held.clear()  # the host copies go as soon as they are hashed

        self._thread = threading.Thread(target=run, name="warp-harness-timed-digest", daemon=True)
        self._thread.start()

    def digest_for(self, args: Sequence[Any], case: dict[str, Any], scalars: Mapping[str, Any]) -> None:
        """Sets ``case["digest"]`` for the set ``args`` now: the inputs compared with the pristine
        copies on the device; equal, the digest is filled in by ``finish``; else read back now."""
        same = bool(self.pristine) and all(
            device_check.differing_words(args[j], copy) == 0 for j, copy in self.pristine.items()
        )
        self.pristine.clear()  # a GiB or more of device memory each, needed once
        if same:
            case["digest"] = None
            self._waiting.append(case)
        else:
            case["digest"] = streamed_input_digest(self.params, list(args), self.outputs, scalars)

    def finish(self, timeout: float | None = None) -> None:
        """Waits for the thread and fills in the waiting cases' digest (left ``None`` when it
        failed or did not finish: no pass for them)."""
        self._thread.join(timeout)
        self.pristine.clear()
        if self._thread.is_alive() or self._error is not None:
            return
        for case in self._waiting:
            case["digest"] = self._digest
        self._waiting.clear()
