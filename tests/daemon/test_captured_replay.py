"""Replaying captured launches after an edit (daemon/captured/), on real processes: a script's launches
are captured once, then each edit is replayed in the sandboxed worker and judged in this process.

The oracles are motivated by bugs Warp users hit that Warp compiles and runs silently:
- an out-of-bounds read in release mode gives no error "by design for performance reasons"
  (https://github.com/NVIDIA/warp/issues/667: `a[i] += b[i+2]` prints garbage, no warning);
- a `wp.tid()` that does not cover the launch (https://github.com/NVIDIA/warp/issues/1389,
  https://github.com/newton-physics/newton/pull/2546) or a guard that skips elements leaves outputs
  unwritten;
- a wrong row stride (`i * nx + j` where the row length is `ny`:
  https://github.com/NVIDIA/warp/pull/1068, review of `range_fill_kernel`) silently changes results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from daemon_helpers import FAST, CountingCall, captured_script

from warp_harness.capture.store import CaptureStore, KernelIndex
from warp_harness.config import Settings
from warp_harness.daemon import findings as F
from warp_harness.daemon.captured.hook import supervisor_call
from warp_harness.daemon.captured.replay import ReplayOutcome, accept_module, replay_module
from warp_harness.daemon.engine import Engine
from warp_harness.daemon.supervisor import Supervisor

pytestmark = pytest.mark.slow

SOURCE = """import numpy as np
import warp as wp


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def fill(out: wp.array2d(dtype=float), ny: int):
    i, j = wp.tid()
    out[i, j] = float(i * ny + j)


@wp.kernel
def total(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(s, 0, x[i])


if __name__ == "__main__":
    x = wp.array(np.arange(8, dtype=np.float32) + 1.0)
    y = wp.zeros(8, dtype=float)
    wp.launch(double, dim=8, inputs=[x, y])
    out = wp.zeros((3, 4), dtype=float)
    wp.launch(fill, dim=(3, 4), inputs=[out, 4])
    s = wp.zeros(1, dtype=float)
    wp.launch(total, dim=8, inputs=[x, s])
"""


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    expect = "captured 3 launch(es) of 3 kernel(s)"
    return captured_script(tmp_path_factory.mktemp("replayws"), SOURCE, expect)


@pytest.fixture(scope="module")
def sup(captured: Path) -> Iterator[Supervisor]:
    s = Supervisor(captured, FAST, warmup=False)
    yield s
    s.close()


def _replay(ws: Path, sup: Supervisor, *, only_changed: bool = False) -> tuple[ReplayOutcome, CountingCall]:
    call = CountingCall(sup)
    path = ws / "kernels.py"
    return replay_module(ws, path, "kernels.py", FAST, call, only_changed=only_changed), call


@pytest.fixture
def edit(captured: Path) -> Iterator[Any]:
    path = captured / "kernels.py"

    def apply(old: str, new: str) -> None:
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new), encoding="utf-8")

    yield apply
    path.write_text(SOURCE, encoding="utf-8")


def _rules(out: ReplayOutcome) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for r in out.records:
        found.setdefault(str(r.location.kernel), []).append(r.rule)
    return found


def test_unchanged_kernels_replay_clean(captured: Path, sup: Supervisor) -> None:
    out, call = _replay(captured, sup)
    assert _rules(out) == {"double": [F.REPLAYED], "fill": [F.REPLAYED], "total": [F.REPLAYED]}, [
        r.message for r in out.records
    ]
    assert out.launches == 3 and call.calls == 3
    out, call = _replay(captured, sup, only_changed=True)  # a save that changed no kernel
    assert out.records == [] and call.calls == 0


def test_an_out_of_bounds_read_is_placed_on_the_access(captured: Path, sup: Supervisor, edit: Any) -> None:
    """warp#667's read past the end: silent in release, an error at the access in the replay."""
    edit("y[i] = x[i] * 2.0", "y[i] = x[i + 2] * 2.0")
    out, call = _replay(captured, sup, only_changed=True)
    assert call.calls == 1  # only the kernel that changed
    (record,) = out.records
    assert record.rule == F.REPLAY_BOUNDS and record.location.kernel == "double"
    line = SOURCE.splitlines().index("    y[i] = x[i] * 2.0") + 1
    assert record.location.line == line and "`x[i + 2]`" in record.message
    assert "`x` float32[8]" in record.message  # the extent
    assert record.related and record.related[0].location.path == "kernels.py"  # the launch's line


def test_an_unwritten_output(captured: Path, sup: Supervisor, edit: Any) -> None:
    """A guard that skips the last column: the elements stay poisoned (NaN)."""
    edit(
        "    out[i, j] = float(i * ny + j)",
        "    if j >= ny - 1:\n        return\n    out[i, j] = float(i * ny + j)",
    )
    out, _ = _replay(captured, sup, only_changed=True)
    (record,) = out.records
    assert record.rule == F.REPLAY_UNWRITTEN and record.severity.value == "error"
    assert "3 of 12 elements of `out`" in record.message and "first at [0, 3]" in record.message


def test_a_changed_result_is_a_behaviour_diff_until_accepted(
    captured: Path, sup: Supervisor, edit: Any
) -> None:
    """PR 1068's wrong row stride; once intended, `accept` makes it the baseline (re-signed)."""
    edit("float(i * ny + j)", "float(i * 3 + j)")
    out, _ = _replay(captured, sup, only_changed=True)
    (record,) = out.records
    assert record.rule == F.BEHAVIOUR_CHANGED and record.severity.value == "warning"
    assert "8 of 12 elements of `out`" in record.message and "first at [1, 0]" in record.message
    assert record.expected == "4.0" and record.actual == "3.0"
    accepted, _ = accept_module(
        captured, captured / "kernels.py", "kernels.py", FAST, supervisor_call(sup), kernels={"fill"}
    )
    assert accepted == 1
    fill = next(
        e for e in CaptureStore(captured).indexes() if isinstance(e, KernelIndex) and e.name == "fill"
    )
    assert fill.launches[0]["baseline_from"] == "accept"
    assert CaptureStore(captured).blob(fill.launches[0]["baseline"]["out"])[1, 0] == 3.0
    out, call = _replay(captured, sup, only_changed=True)
    assert out.records == [] and call.calls == 0  # the accepted source is the captured one now
    out, _ = _replay(captured, sup)
    assert _rules(out)["fill"] == [F.REPLAYED]
    (captured / "kernels.py").write_text(SOURCE, encoding="utf-8")  # and back: accept the original again
    out, _ = _replay(captured, sup, only_changed=True)
    assert [r.rule for r in out.records] == [F.BEHAVIOUR_CHANGED]
    assert accept_module(captured, captured / "kernels.py", "kernels.py", FAST, supervisor_call(sup))[0] == 3


def test_nan_from_finite_inputs(captured: Path, sup: Supervisor, edit: Any) -> None:
    edit("y[i] = x[i] * 2.0", "y[i] = wp.sqrt(x[i] - 5.0)")
    out, _ = _replay(captured, sup, only_changed=True)
    rules = sorted(r.rule for r in out.records)
    assert rules == [F.BEHAVIOUR_CHANGED, F.REPLAY_NONFINITE]
    nan = next(r for r in out.records if r.rule == F.REPLAY_NONFINITE)
    assert "4 of 8 elements of `y`" in nan.message and "first at [0]" in nan.message


def test_a_planted_capture_is_refused_and_never_replayed(captured: Path, sup: Supervisor) -> None:
    kernels = captured / ".warp-harness/captures/kernels"
    real = next(kernels.glob("kernels.py__double*.json"))
    data = json.loads(real.read_text())
    data["tag"] = "0" * 64  # someone else's (or no) signature
    data["kernel"]["name"] = "total"
    planted = kernels / "planted.json"
    planted.write_text(json.dumps(data))
    try:
        out, call = _replay(captured, sup)
        refused = [r for r in out.records if r.rule == F.CAPTURE_REFUSED]
        assert (
            len(refused) == 1 and "planted.json" in refused[0].message and "signature" in refused[0].message
        )
        assert call.calls == 3  # the three real indexes, not the planted one
        listing = subprocess.run(
            [sys.executable, "-m", "warp_harness", "capture", "--list"],
            cwd=captured,
            capture_output=True,
            text=True,
        )
        assert "REFUSED .warp-harness/captures/kernels/planted.json" in listing.stdout
    finally:
        planted.unlink()


def test_the_daemon_engine_replays_a_changed_kernel_on_save(
    captured: Path, sup: Supervisor, edit: Any
) -> None:
    engine = Engine(captured, Settings(), FAST, True, supervisor=sup, warmup=False, record_history=False)
    edit("y[i] = x[i] * 2.0", "y[i] = x[i] * 2.5")
    report = engine.check(captured / "kernels.py")
    assert [r.record.rule for r in report.records if r.record.rule.startswith("WHD08")] == [
        F.BEHAVIOUR_CHANGED
    ]
    assert report.timings["capture_replay_ms"] is not None
    # the failing replay is a case of the failure library: `replay` fails while the edit stands ...
    (case,) = [c for c in report.repros if "double" in c]
    assert (captured / case).is_file()

    def replay() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "warp_harness", "replay", ".", "--trust", "--format", "json"],
            cwd=captured,
            capture_output=True,
            text=True,
            timeout=600,
        )

    failing = replay()
    assert failing.returncode == 1 and '"WHD082"' in failing.stdout, failing.stdout + failing.stderr
    (captured / "kernels.py").write_text(SOURCE, encoding="utf-8")  # ... and passes once it is undone
    passing = replay()
    assert passing.returncode == 0, passing.stdout + passing.stderr
    (captured / case).unlink()
    edit("y[i] = x[i] * 2.0", "y[i] = x[i] * 2.5")
    untrusted = Engine(captured, Settings(), FAST, False, warmup=False, record_history=False)
    report = untrusted.check(captured / "kernels.py")
    assert not [
        r for r in report.records if r.record.rule.startswith("WHD08")
    ]  # an untrusted workspace replays nothing
    untrusted.close()


def test_ci_replays_the_captures_only_when_trusted(captured: Path, edit: Any) -> None:
    edit("y[i] = x[i] * 2.0", "y[i] = x[i + 1] * 2.0")

    def ci(*flags: str) -> list[str]:
        p = subprocess.run(
            [sys.executable, "-m", "warp_harness", "ci", ".", "--no-bench", "--format", "json", *flags],
            cwd=captured,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return [str(r["rule"]) for r in json.loads(p.stdout)["results"]]

    assert not [r for r in ci() if r.startswith("WHD08")]
    rules = sorted(r for r in ci("--trust") if r.startswith("WHD08"))
    assert rules == [F.REPLAY_BOUNDS, F.REPLAYED, F.REPLAYED]  # double out of bounds; fill, total clean


def test_vector_and_struct_arguments_round_trip(tmp_path: Path) -> None:
    """A struct (field by field) and a vec3 array are recorded and replayed as the launch had them."""
    (tmp_path / "s.py").write_text(
        "import numpy as np\nimport warp as wp\n\n\n"
        "@wp.struct\nclass P:\n    scale: float\n    offset: wp.vec3\n\n\n"
        "@wp.kernel\ndef move(x: wp.array(dtype=wp.vec3), p: P, out: wp.array(dtype=wp.vec3)):\n"
        "    i = wp.tid()\n    out[i] = x[i] * p.scale + p.offset\n\n\n"
        'if __name__ == "__main__":\n    p = P()\n    p.scale = 2.0\n    p.offset = wp.vec3(1.0, 2.0, 3.0)\n'
        "    x = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3)\n"
        "    wp.launch(move, dim=4, inputs=[x, p], outputs=[wp.zeros(4, dtype=wp.vec3)])\n",
        encoding="utf-8",
    )
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness", "capture", "--", sys.executable, "s.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    (index,) = [e for e in CaptureStore(tmp_path).indexes() if isinstance(e, KernelIndex)]
    launch = index.launches[0]
    np.testing.assert_array_equal(CaptureStore(tmp_path).blob(launch["baseline"]["out"])[0], [3.0, 4.0, 5.0])
    with Supervisor(tmp_path, FAST, warmup=False) as s:
        out = replay_module(tmp_path, tmp_path / "s.py", "s.py", FAST, supervisor_call(s), only_changed=False)
    assert [r.rule for r in out.records] == [F.REPLAYED], [r.message for r in out.records]
