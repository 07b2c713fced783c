from __future__ import annotations

from pathlib import Path

from warp_harness.daemon import findings as F
from warp_harness.daemon.feedback import History, order, render_text, reported
from warp_harness.record import Severity, Stage


def _rec(stage: Stage, rule: str, severity: Severity = Severity.ERROR, kernel: str = "k", line: int = 3):
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
