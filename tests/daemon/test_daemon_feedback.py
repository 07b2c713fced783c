from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.daemon import findings as F
from warp_harness.daemon.feedback import History, order, render_text, reported
from warp_harness.record import Record, Severity, Stage


def _rec(
    stage: Stage, rule: str, severity: Severity = Severity.ERROR, kernel: str = "k", line: int = 3
) -> Record:
    return F.make_record(stage, rule, severity, "k.py", line, f"{rule} fired", kernel=kernel)


def test_order_is_constraint_compile_crash_numeric_performance() -> None:
    recs = [
        _rec(Stage.PERFORMANCE, F.TARGET_MISSED),
        _rec(Stage.NUMERIC, F.MISMATCH),
        _rec(Stage.CRASH, F.CRASH),
        _rec(Stage.COMPILE, F.CODEGEN_ERROR, line=9),
        _rec(Stage.CONSTRAINT, "WH007", line=20),
    ]
    assert [r.stage for r in order(recs)] == [
        Stage.CONSTRAINT,
        Stage.COMPILE,
        Stage.CRASH,
        Stage.NUMERIC,
        Stage.PERFORMANCE,
    ]


def test_history_counts_consecutive_saves_and_persists(tmp_path: Path) -> None:
    h = History(tmp_path)
    miss = _rec(Stage.NUMERIC, F.MISMATCH)
    info = _rec(Stage.PERFORMANCE, F.MEASURED, Severity.INFO)
    assert h.update("k.py", [miss, info]) == {"k\x00WHD020": 1}
    assert h.update("k.py", [miss])["k\x00WHD020"] == 2
    h2 = History(tmp_path)  # from disk
    assert h2.streak("k.py", miss) == 2
    assert h2.update("k.py", [miss])["k\x00WHD020"] == 3
    assert h2.update("k.py", []) == {}  # a clean save resets
    assert h2.update("k.py", [miss])["k\x00WHD020"] == 1
    d = reported(miss, {"k\x00WHD020": 4}).to_dict()
    assert d["streak"] == 4 and d["tier"] == "dynamic"
    assert "fired 4 saves in a row" in render_text("k.py", [d])


def test_corrupt_history_is_discarded(tmp_path: Path) -> None:
    h = History(tmp_path)
    h.update("k.py", [_rec(Stage.CRASH, F.CRASH)])
    h.path.write_bytes(b"\x00garbage")
    h2 = History(tmp_path)
    assert h2.files == {}
    assert not h.path.exists()


def test_history_written_behind_keeps_every_update(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's history is written after the push: many updates from several threads while
    writes are under way, then ``flush``; the file holds the counters of every one."""
    import threading

    from warp_harness.daemon import feedback

    writes: list[bytes] = []
    real_save = History._save

    def slow_save(self: History, data: bytes) -> None:
        writes.append(data)
        threading.Event().wait(0.002)  # updates land while a write is under way
        real_save(self, data)

    monkeypatch.setattr(History, "_save", slow_save)
    h = History(tmp_path, write_behind=True)
    miss = _rec(Stage.NUMERIC, F.MISMATCH)

    def saves(prefix: str) -> None:
        for i in range(40):
            assert h.update(f"{prefix}{i}.py", [miss]) == {"k\x00WHD020": 1}

    threads = [threading.Thread(target=saves, args=(p,)) for p in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert h.update("a0.py", [miss])["k\x00WHD020"] == 2  # the counters are current before any write
    assert h.flush(10)
    assert 1 <= len(writes) < 121  # coalesced: not one write per update
    on_disk = History(tmp_path)
    assert len(on_disk.files) == 120
    assert on_disk.streak("a0.py", miss) == 2 and on_disk.streak("c39.py", miss) == 1
    assert feedback.History(tmp_path).files == h.files


def test_history_written_behind_reports_a_failed_write(tmp_path: Path) -> None:
    (tmp_path / ".warp-harness").write_text("a file where the state folder should be")
    h = History(tmp_path, write_behind=True)
    assert h.update("k.py", [_rec(Stage.CRASH, F.CRASH)]) == {f"k\x00{F.CRASH}": 1}
    assert h.flush(10)
    assert h.save_error is not None
    assert h.streak("k.py", _rec(Stage.CRASH, F.CRASH)) == 1  # kept in memory
