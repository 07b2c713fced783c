"""The daemon's ``accept`` request (the editor's "accept the new behaviour" code action sends it), on a
real daemon over its socket: it does what `warp-harness accept FILE::KERNEL --trust` does, and only
in a trusted workspace. Motivation: a wrong row stride changes results silently
(https://github.com/NVIDIA/warp/pull/1068); once a change is intended, its outputs become the
baseline, as a snapshot test's do."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import captured_script, spawn_daemon, wait_ready

from warp_harness.capture.store import CaptureStore, KernelIndex
from warp_harness.daemon import protocol as P

pytestmark = pytest.mark.slow

SOURCE = """import numpy as np
import warp as wp


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def negate(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = -x[i]


if __name__ == "__main__":
    for n in (4, 8):
        x = wp.array(np.arange(n, dtype=np.float32))
        wp.launch(double, dim=n, inputs=[x, wp.zeros(n, dtype=float)])
    wp.launch(negate, dim=4, inputs=[x, wp.zeros(8, dtype=float)])
"""


def _baselines(ws: Path) -> dict[str, list[str]]:
    return {
        e.name: sorted(str(launch.get("baseline_from")) for launch in e.launches)
        for e in CaptureStore(ws).indexes()
        if isinstance(e, KernelIndex)
    }


def test_accept_over_the_socket(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    captured_script(ws, SOURCE, "captured ")
    (ws / "kernels.py").write_text(SOURCE.replace("x[i] * 2.0", "x[i] * 3.0"), encoding="utf-8")
    sock = tmp_path / "d.sock"
    proc = spawn_daemon(ws, sock, "--no-watch", "--no-bench")
    try:
        wait_ready(proc, sock, timeout=120)
        with P.Client(sock, timeout=300) as c:
            c.request("subscribe", enabled=False)
            reply = c.request("accept", path="kernels.py", kernel="double")
            assert reply["type"] == "accepted", reply
            assert reply["accepted"] == 2 and reply["kernel"] == "double" and reply["path"] == "kernels.py"
            assert sorted(x["dim"] for x in reply["launches"]) == [[4], [8]]
            assert {x["kernel"] for x in reply["launches"]} == {"double"} and reply["records"] == []
            assert _baselines(ws) == {"double": ["accept", "accept"], "negate": ["capture"]}
            y = CaptureStore(ws).blob(
                next(
                    launch["baseline"]["y"]
                    for e in CaptureStore(ws).indexes()
                    if isinstance(e, KernelIndex) and e.name == "double"
                    for launch in e.launches
                    if launch["dim"] == [4]
                )
            )
            assert y.tolist() == [0.0, 3.0, 6.0, 9.0]  # the edited kernel's outputs
            everything = c.request("accept", path=str(ws / "kernels.py"), kernel=None)
            assert everything["accepted"] == 3  # null: every captured kernel of the file
            bad = c.request("accept", path="kernels.py", kernel="not a name")
            assert bad["type"] == "error" and bad["code"] == P.E_BAD_REQUEST
            outside = c.request("accept", path="/etc/passwd", kernel=None)
            assert outside["type"] == "error" and "outside the workspace" in outside["message"]
            assert c.request("ping")["type"] == "pong"  # the daemon keeps running
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_an_untrusted_daemon_refuses_to_accept(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernels.py").write_text(SOURCE, encoding="utf-8")
    sock = tmp_path / "d.sock"
    proc = spawn_daemon(ws, sock, "--no-watch", trust=False)
    try:
        wait_ready(proc, sock, timeout=120)
        with P.Client(sock, timeout=60) as c:
            c.request("subscribe", enabled=False)
            reply = c.request("accept", path="kernels.py", kernel="double")
            assert reply["type"] == "error" and reply["code"] == P.E_BAD_REQUEST
            assert "not trusted" in reply["message"]
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
