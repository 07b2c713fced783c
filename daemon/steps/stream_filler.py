"""Keeps a CUDA stream busy while the host enqueues one timed launch.

A timed launch is ``record(start); launch; record(end)``. On an idle stream the GPU reaches
``start`` at once and then waits for the host to enqueue the launch: Warp's Python launch path
takes 15-30 µs, so the events of a small kernel measured the host's launch overhead, not the
kernel (on an H200: saxpy over 65,536 elements "25.9 µs" warm, 15 µs with the inputs out of
L2, where a flush happened to keep the stream busy; benchmarks/RESULTS.md). The fix is the one
nvbench uses: a kernel that occupies the stream ahead of ``start`` for longer than the host
needs to enqueue the rest, so the events bracket the kernel alone.

nvbench blocks on a host flag; here a single thread spins for a calibrated number of dependent
multiply-adds (Warp exposes no clock and no volatile host read). The spin's length adapts: when
the host took more than half the spin to enqueue a launch, the next spin is twice as long.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from warp_harness.daemon.integrity import TRUSTED

# at least this long ahead of `start` (Warp's launch path, measured 15-30 µs on an H200 host)
MIN_SPIN_S = 50e-6
MAX_SPIN_S = 5e-3
_CALIBRATION_ITERATIONS = 20_000


@wp.kernel
def _spin(iterations: int, sink: wp.array(dtype=wp.float32)) -> None:  # type: ignore[valid-type]
    x = float(0.5)  # noqa: UP018 - a literal is a constant Warp will not let the loop mutate
    for _ in range(iterations):
        x = x * 1.0000001 + 0.0000001
    sink[0] = x  # keeps the loop from being optimised away


class StreamFiller:
    """Enqueue :meth:`fill` right before a timed launch's start event; report the host's enqueue
    time with :meth:`enqueued` afterwards."""

    def __init__(self, device: Any, stream: Any) -> None:
        self.device = device
        self.stream = stream
        self.sink = wp.zeros(1, dtype=wp.float32, device=device)
        self.seconds_per_iteration = self._calibrate()
        self.spin_s = MIN_SPIN_S
        self.iterations = self._iterations_for(self.spin_s)
        self.filled_s = 0.0  # the spins enqueued so far (taken off the host clock's window)

    def _spin_once(self, iterations: int) -> float:
        start = TRUSTED.event(self.device, enable_timing=True)
        end = TRUSTED.event(self.device, enable_timing=True)
        self.stream.record_event(start)
        TRUSTED.launch(_spin, dim=1, inputs=[iterations, self.sink], device=self.device, stream=self.stream)
        self.stream.record_event(end)
        TRUSTED.synchronize_event(end)
        return float(TRUSTED.get_event_elapsed_time(start, end)) / 1e3

    def _calibrate(self) -> float:
        self._spin_once(16)  # loads the module on this device
        seconds = min(self._spin_once(_CALIBRATION_ITERATIONS) for _ in range(3))
        return max(seconds, 1e-7) / _CALIBRATION_ITERATIONS

    def _iterations_for(self, seconds: float) -> int:
        return max(1, int(seconds / self.seconds_per_iteration))

    def fill(self) -> None:
        self.filled_s += self.spin_s
        TRUSTED.launch(
            _spin, dim=1, inputs=[self.iterations, self.sink], device=self.device, stream=self.stream
        )

    def enqueued(self, host_s: float) -> None:
        """The host needed ``host_s`` to enqueue start, launch and end: lengthen the spin when
        that came close to it (the stream may have run dry before the launch arrived)."""
        if host_s > 0.5 * self.spin_s and self.spin_s < MAX_SPIN_S:
            self.spin_s = min(MAX_SPIN_S, max(2 * self.spin_s, 2 * host_s))
            self.iterations = self._iterations_for(self.spin_s)
