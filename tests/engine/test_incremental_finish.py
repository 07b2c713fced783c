"""The records of a spliced keystroke (`IncrementalAnalyser`): the last analysis's finished records updated
(the edited kernel's taken out and put in again, those below moved with their lines), not every record
finished again; the full finishing where that cannot tell (suppression comments, severity overrides,
records sharing a span or a place in the order)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from warp_harness import incremental
from warp_harness.builtins import BuiltinTable, load_table
from warp_harness.config import Settings
from warp_harness.engine import finish_records
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.record import Location, Record, Severity, Stage

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from corpus import line_edits, quoting_module
from splice_helpers import Spy, same

_TEXT = quoting_module(8)


@pytest.fixture(scope="module")
def table() -> BuiltinTable:
    return load_table()


class _Finishes:
    """Counts the analyser's calls of `engine.finish_records`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0

        def counting(*args: object, **kwargs: object) -> list[Record]:
            self.calls += 1
            return finish_records(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(incremental, "finish_records", counting)


@pytest.mark.parametrize("kernel", ["kernel_0", "tile_kernel_1", "kernel_2", "kernel_3"])
def test_spliced_keystrokes_update_the_last_records(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    """Enter, typing, a paste and deleted lines in one kernel: spliced, the records a fresh analysis gives,
    none finished again; those the edit does not move are the objects the last analysis gave."""
    analyser = IncrementalAnalyser(table)
    last, text = same(analyser, _TEXT, table, None, "f.py", Settings()), _TEXT
    spy = Spy(monkeypatch)
    finishes = _Finishes(monkeypatch)
    for version in line_edits(_TEXT, kernel):
        records = same(analyser, version, table, spy, "f.py", Settings())
        assert spy.builds == 0
        assert finishes.calls == 0
        if version.count("\n") == text.count("\n"):  # no line moved: the other kernels' records are kept
            kept = {id(r) for r in last}
            assert all(id(r) in kept for r in records if r.location.kernel != kernel)
        last, text = records, version


@pytest.mark.parametrize(
    ("change", "settings"),
    [
        # a suppression comment (WH016 and the suppressions read every record)
        (
            lambda t: t.replace("    t = wp.min(s, c)\n", "    t = wp.min(s, c)  # wh: ignore[WH003]\n", 1),
            Settings(),
        ),
        # a severity overridden for a rule that reports
        (lambda t: t, Settings(severity={"WH007": Severity.WARNING})),
    ],
)
def test_what_finishing_changes_sends_the_records_to_be_finished_in_full(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch, change: object, settings: Settings
) -> None:
    text = change(_TEXT)  # type: ignore[operator]
    analyser = IncrementalAnalyser(table)
    same(analyser, text, table, None, "f.py", settings)
    spy = Spy(monkeypatch)
    finishes = _Finishes(monkeypatch)
    for version in line_edits(text, "kernel_2"):
        same(analyser, version, table, spy, "f.py", settings)
        assert spy.builds == 0
    assert finishes.calls == len(line_edits(text, "kernel_2"))


def _record(line: int, col: int = 4, end_col: int = 9, rule: str = "WH003") -> Record:
    return Record(Stage.CONSTRAINT, rule, Severity.ERROR, Location("f.py", line, col, line, end_col), "m")


def test_a_record_added_with_the_place_or_span_of_another_is_not_put_in() -> None:
    """Equal places in the order (the order a full run gives them is not known here) or a shared span (a
    conflict the full finishing resolves): None, the records are finished in full."""
    records = [_record(3), _record(10), _record(20)]
    last = incremental._Finished(records, [], frozenset({(Stage.CONSTRAINT.rank, Severity.ERROR.rank)}))
    finish = incremental._finish_splice
    settings = Settings()
    added = _record(12)
    done = finish(last, [records[1]], [added], {}, None, settings, {})
    assert done is not None and done.records == [records[0], added, records[2]]
    assert last.records == [_record(3), _record(10), _record(20)]  # the last analysis's list is not changed
    assert finish(last, [], [_record(10, end_col=7)], {}, None, settings, {}) is None  # its place
    assert finish(last, [], [_record(10, rule="WH001")], {}, None, settings, {}) is None  # its span
    assert finish(last, [_record(10)], [], {}, None, settings, {}) is None  # not among them
    # the lines of the edited chunk hold a record that is not the edited kernel's
    assert finish(last, [], [], {}, incremental._Shift(12, 1, 8), settings, {}) is None
    assert finish(last, [], [], {}, incremental._Shift(12, 1, 10), settings, {}) is not None
