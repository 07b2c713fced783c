"""Records whose texts quote line numbers (WH002's plain function, WH007's launch, WH015's unrolled loop,
WH024's thread index and loop) after lines were added or deleted elsewhere: the quoted numbers move with
the lines they name, exactly as a fresh analysis quotes them, without analysing the file again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from warp_harness import incremental
from warp_harness.builtins import BuiltinTable, load_table
from warp_harness.config import Settings
from warp_harness.engine import analyse_source
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.record import Location, Record, Severity, Stage

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from corpus import QUOTING, QUOTING_REST, generated_module, line_edits
from splice_helpers import Spy, same

# sm_86: WH015's shared memory budget is exceeded by `gemm`'s unrolled loop
_SETTINGS = Settings(target="sm_86")


# a record that quotes a piece of source saying "line 3": which numbers are line numbers is not known
UNKNOWN = (
    QUOTING
    + """

@wp.kernel
def commented(a: wp.array(dtype=float)):
    i = wp.tid()
    for i in range(4):
        a[0] = float(i)
    wp.printf("line 3: %d\\n", i)
"""
)

_KERNELS = ["top", "ranked", "middle", "shadowed", "gemm", "bottom"]


@pytest.fixture(scope="module")
def table() -> BuiltinTable:
    return load_table()


def _same(analyser: IncrementalAnalyser, text: str, table: BuiltinTable, spy: Spy | None = None) -> None:
    """The analyser's records of ``text`` are those of a fresh analysis (``spy``: counts the analyser's)."""
    same(analyser, text, table, spy, "q.py", _SETTINGS)


def test_the_file_has_records_quoting_lines_above_and_below_each_kernel(table: BuiltinTable) -> None:
    records = analyse_source(QUOTING, "q.py", _SETTINGS, builtins=table).records
    quoted = {r.rule: incremental._quotes(r) for r in records if incremental._quotes(r)}
    assert set(quoted) == {"WH002", "WH007", "WH015", "WH024"}
    assert all(incremental._quotes(r) is not None for r in records)


@pytest.mark.parametrize("kernel", _KERNELS)
def test_lines_added_and_deleted_move_the_quoted_line_numbers(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    """Enter, typing, a paste and deleted lines in one kernel, above, between and below the records quoting
    lines and the lines they quote: spliced (no model built), the records those of a fresh analysis."""
    analyser = IncrementalAnalyser(table)
    _same(analyser, QUOTING, table)
    spy = Spy(monkeypatch)
    for version in line_edits(QUOTING, kernel):
        _same(analyser, version, table, spy)
        assert spy.builds == 0
        assert spy.checked in ([], [kernel])


def test_edits_in_two_kernels_move_the_other_kernels_cached_records(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines added in two kernels at once (the full way): the other kernels' records, quoting lines that
    moved, come from the cache, moved to their lines."""
    analyser = IncrementalAnalyser(table)
    _same(analyser, QUOTING, table)
    spy = Spy(monkeypatch)
    text = QUOTING
    for kernel in ("top", "middle"):
        at = text.index("\n", text.index("i = wp.tid()", text.index(f"def {kernel}(")))
        text = text[:at] + "\n    w_z = 1.0" + text[at:]
    _same(analyser, text, table, spy)
    assert spy.builds == 1
    assert set(spy.checked) <= {"top", "middle", "held"}


def test_a_line_mentioned_otherwise_sends_the_edit_the_full_way(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record quoting source that says "line 3": an edit above it is not spliced (which numbers to move
    is not known), below it is; the records are a fresh analysis's either way."""
    analyser = IncrementalAnalyser(table)
    _same(analyser, UNKNOWN, table)
    spy = Spy(monkeypatch)
    for kernel, spliced in (("middle", False), ("commented", True)):
        last = UNKNOWN
        for version in line_edits(UNKNOWN, kernel):
            _same(analyser, version, table, spy)
            if version.count("\n") != last.count("\n"):  # lines moved below the edit
                assert (spy.builds == 0) is spliced
            last = version
        _same(analyser, UNKNOWN, table)


def _record(rule: str, message: str, hint: str | None = None) -> Record:
    return Record(Stage.CONSTRAINT, rule, Severity.ERROR, Location("q.py", 10), message, hint=hint)


def test_quoted_lines_are_those_the_rules_words_quote() -> None:
    plain = "`f` is a plain Python function (line 7), not a `@wp.func`; Warp cannot call it from a kernel"
    assert incremental._quotes(_record("WH002", plain)) == (7,)
    assert incremental._quotes(_record("WH002", plain + " (see line 9)")) is None
    assert incremental._quotes(_record("WH003", "mixed types")) == ()
    assert incremental._quotes(_record("WH003", "as on line 4")) is None
    hint = "unpack 2 names (`i0, i1 = wp.tid()`) or launch with a 1-D dim (wp.launch_tiled at line 40)"
    record = _record("WH007", "`wp.tid()` is unpacked into 1 name", hint)
    assert incremental._quotes(record) == (40,)
    moved = incremental._Shift(20, 3, 10).record(record)
    assert moved.hint == hint.replace("line 40", "line 43") and moved.location.line == 10
    with pytest.raises(incremental._NotMovable):  # a quoted line inside the edited chunk
        incremental._Shift(45, 3, 30).record(record)


def test_the_generated_module_with_quoting_records(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every `kernel_<n>` launched with a 2-D dim (WH007 quoting the launch's line) and reusing its thread
    index as a loop variable (WH024): lines added and deleted in a kernel are spliced."""
    text = generated_module(kernels=8, target_lines=0)
    text = text.replace("dim=n, inputs=[x, y, v, m, out, 2.0]", "dim=(n, 2), inputs=[x, y, v, m, out, 2.0]")
    text = text.replace(
        "    for k in range(4):\n        s += m[i, k] * a\n",
        "    for i in range(4):\n        s += m[i, i] * a\n",
    )
    records = analyse_source(text, "q.py", _SETTINGS, builtins=table).records
    assert {r.rule for r in records if incremental._quotes(r)} == {"WH007", "WH024"}
    analyser = IncrementalAnalyser(table)
    _same(analyser, text, table)
    spy = Spy(monkeypatch)
    for kernel in ("kernel_1", "tile_kernel_2", "kernel_3"):
        for version in line_edits(text, kernel):
            _same(analyser, version, table, spy)
            assert spy.builds == 0


def test_the_rest_records_quotes_follow_every_edit(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines pasted in one kernel, then added and deleted in the next one, just above the line a record of
    the rest quotes: the number it quotes is where the line is after each step."""
    records = analyse_source(QUOTING_REST, "q.py", _SETTINGS, builtins=table).records
    assert [r.rule for r in records if incremental._quotes(r)] == ["WH002"]
    analyser = IncrementalAnalyser(table)
    _same(analyser, QUOTING_REST, table)
    spy = Spy(monkeypatch)
    at = QUOTING_REST.index("\n", QUOTING_REST.index("    a[i] = 1.0"))
    text = QUOTING_REST[:at] + "".join(f"\n    p{n} = {n}.0" for n in range(8)) + QUOTING_REST[at:]
    _same(analyser, text, table, spy)
    for version in line_edits(text, "second"):
        _same(analyser, version, table, spy)
        assert spy.builds == 0
