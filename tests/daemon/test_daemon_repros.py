from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from warp_harness.daemon import replay_stored, repros
from warp_harness.daemon.results import FailingCase

FAILURE_DICT = {
    "kernel": "k",
    "device": "cpu",
    "size": 3,
    "seed": 7,
    "edge_case": None,
    "rule": "WHD020",
    "message": "m",
    "inputs": None,
}
FAILURE = FailingCase.from_dict(FAILURE_DICT)


def test_store_and_load(tmp_path: Path) -> None:
    mod = tmp_path / "pkg" / "k.py"
    mod.parent.mkdir()
    mod.write_text("")
    f1 = repros.store(tmp_path, mod, FAILURE, {"mode": "release"})
    f2 = repros.store(tmp_path, mod, FailingCase.from_dict(dict(FAILURE_DICT, size=2)), {"mode": "release"})
    assert f1 == f2  # same kernel/device/rule: replaced, the library does not grow per save
    assert f1.parent == tmp_path / ".warp-harness" / "repros"
    cases, corrupt = repros.load_all(tmp_path)
    assert corrupt == [] and len(cases) == 1
    assert cases[0].case["path"] == "pkg/k.py" and cases[0].case["size"] == 2
    (f1.parent / "bad.msgpack").write_bytes(b"junk")
    cases, corrupt = repros.load_all(tmp_path)
    assert len(cases) == 1 and [c.name for c in corrupt] == ["bad.msgpack"]


def test_never_writes_outside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "k.py").write_text("")
    with pytest.raises(repros.OutsideWorkspaceError):
        repros.store(ws, outside / "k.py", FAILURE, {})
    (ws / "k.py").write_text("")
    (ws / ".warp-harness").symlink_to(outside, target_is_directory=True)
    with pytest.raises(repros.OutsideWorkspaceError):
        repros.store(ws, ws / "k.py", FAILURE, {})
    assert list(outside.iterdir()) == [outside / "k.py"]


class _TimedCases:
    """An executor whose jobs take a while and say which case they ran: how many ran at once."""

    def __init__(self, slots: int) -> None:
        self._slots = slots
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def slots(self, steps: object) -> int:
        return self._slots

    def run_case(self, case: dict[str, object], **_: object) -> tuple[str, list[object]]:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.2 if case["kernel"] == "k0" else 0.05)  # the first case finishes last
        with self._lock:
            self.running -= 1
        return ("pass" if case["size"] % 2 else "fail"), []


def _library(tmp_path: Path, count: int) -> list[repros.StoredCase]:
    mod = tmp_path / "k.py"
    mod.write_text("")
    for i in range(count):
        failure = FailingCase.from_dict(dict(FAILURE_DICT, kernel=f"k{i}", size=i))
        repros.store(tmp_path, mod, failure, {"mode": "release"})
    return repros.load_cases(tmp_path).cases


def test_replay_runs_cases_side_by_side_and_answers_in_their_order(tmp_path: Path) -> None:
    cases = _library(tmp_path, 6)
    serial = _TimedCases(slots=1)
    expected = replay_stored.replay(serial, cases)  # type: ignore[arg-type]
    assert serial.most == 1
    started: list[int] = []
    wide = _TimedCases(slots=3)
    got = replay_stored.replay(wide, cases, on_start=lambda n, _: started.append(n))  # type: ignore[arg-type]
    assert wide.most == 3  # as many at once as the executor has slots
    assert got == expected and [s for s, _ in got] == [
        "pass" if c.case["size"] % 2 else "fail" for c in cases
    ]
    assert sorted(started) == [1, 2, 3, 4, 5, 6]
