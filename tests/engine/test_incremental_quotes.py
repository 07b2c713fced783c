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
from warp_harness.record import QUOTED_LINE, Location, Quotes, Record, Severity, Stage

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
    quoted = {r.rule: r.quotes for r in records if r.quotes is not None}
    assert set(quoted) == {"WH002", "WH007", "WH015", "WH024"}
    # the texts say the lines the data holds
    for record in records:
        if record.quotes is not None:
            texts = " ".join(t for t in (record.message, record.hint or "") if t)
            assert all(f"line {n}" in texts for n in record.quotes.lines), record


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


def test_a_text_that_quotes_source_saying_line_3_moves_only_its_quoted_lines(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record quoting source that says "line 3" (WH024 shows the statement it is about): the lines it
    quotes are data, so an edit above it is spliced like any other and the source it shows stays."""
    analyser = IncrementalAnalyser(table)
    _same(analyser, UNKNOWN, table)
    spy = Spy(monkeypatch)
    for kernel in ("middle", "commented"):
        last = UNKNOWN
        for version in line_edits(UNKNOWN, kernel):
            _same(analyser, version, table, spy)
            if version.count("\n") != last.count("\n"):  # lines moved below the edit
                assert spy.builds == 0
            last = version
        _same(analyser, UNKNOWN, table)


def _record(rule: str, message: str, hint: str | None = None, lines: tuple[int, ...] = ()) -> Record:
    texts = {"message": message} if QUOTED_LINE in message else {}
    if hint is not None and QUOTED_LINE in hint:
        texts["hint"] = hint
    quotes = Quotes.of(texts, lines) if lines else None
    rendered = quotes.render() if quotes is not None else {}
    return Record(
        Stage.CONSTRAINT,
        rule,
        Severity.ERROR,
        Location("q.py", 10),
        rendered.get("message", message),
        hint=rendered.get("hint", hint),
        quotes=quotes,
    )


def test_quoted_lines_are_data_and_the_texts_are_rendered_from_them() -> None:
    plain = "`f` is a plain Python function (line 7), not a `@wp.func`; Warp cannot call it from a kernel"
    record = _record("WH002", plain.replace("7", QUOTED_LINE), lines=(7,))
    assert record.message == plain and record.quotes is not None and record.quotes.lines == (7,)
    # a number in a text is never read back: only the data moves
    said = _record("WH003", "as on line 4")
    assert incremental._Shift(2, 3, 1).record(said).message == "as on line 4"
    hint = "unpack 2 names (`i0, i1 = wp.tid()`) or launch with a 1-D dim (wp.launch_tiled at line 40)"
    record = _record("WH007", "`wp.tid()` is unpacked into 1 name", hint.replace("40", QUOTED_LINE), (40,))
    assert record.hint == hint
    moved = incremental._Shift(20, 3, 10).record(record)
    assert moved.hint == hint.replace("line 40", "line 43") and moved.location.line == 10
    assert moved.quotes is not None and moved.quotes.lines == (43,)
    with pytest.raises(incremental._NotMovable):  # a quoted line inside the edited chunk
        incremental._Shift(45, 3, 30).record(record)
    with pytest.raises(ValueError):  # as many lines as the texts quote
        Quotes.of({"message": f"line {QUOTED_LINE}"}, (1, 2))


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
    assert {r.rule for r in records if r.quotes is not None} == {"WH007", "WH024"}
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
    assert [r.rule for r in records if r.quotes is not None] == ["WH002"]
    analyser = IncrementalAnalyser(table)
    _same(analyser, QUOTING_REST, table)
    spy = Spy(monkeypatch)
    at = QUOTING_REST.index("\n", QUOTING_REST.index("    a[i] = 1.0"))
    text = QUOTING_REST[:at] + "".join(f"\n    p{n} = {n}.0" for n in range(8)) + QUOTING_REST[at:]
    _same(analyser, text, table, spy)
    for version in line_edits(text, "second"):
        _same(analyser, version, table, spy)
        assert spy.builds == 0
