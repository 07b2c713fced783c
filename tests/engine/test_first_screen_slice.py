"""`warp_harness.first_screen`: the first screen's records from the statements up to its end alone, only
where the rest of the file cannot change them; never a record the whole analysis does not give."""

from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.engine import analyse_parsed, analyse_source
from warp_harness.engine import first_screen_records as whole_first_screen
from warp_harness.first_screen import first_screen_records
from warp_harness.model.module import build_model
from warp_harness.model.source import parse_source

REPOSITORY = Path(__file__).resolve().parents[2]
FILLER = "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(40))
# WH045 on `scale` (assigned on one path), unless the module binds `scale`
MAYBE_UNASSIGNED = """import warp as wp


@wp.kernel
def on_screen(a: wp.array(dtype=float)):
    i = wp.tid()
    if i > 0:
        scale = 2.0
    a[i] = scale
"""


def _partial(text: str, last_line: int = 12) -> list[str] | None:
    records = first_screen_records(text, "m.py", Settings(), load_table(), last_line)
    return None if records is None else [r.rule for r in records]


def _whole(text: str) -> list[str]:
    return [r.rule for r in analyse_source(text, "m.py").records]


def test_the_first_screen_is_judged_from_its_slice() -> None:
    text = MAYBE_UNASSIGNED + FILLER
    assert _partial(text) == ["WH045"] == _whole(text)


@pytest.mark.parametrize(
    "below",
    [
        "scale = 1.0\n",  # a module constant
        "for scale in range(3):\n    pass\n",  # bound in a block
        "def scale():\n    pass\n",
        "class scale:\n    pass\n",
        "if True:\n    (scale := 3)\n",
    ],
)
def test_a_name_bound_below_keeps_the_slice_silent(below: str) -> None:
    """Each of these binds `scale` below the first screen: the whole gives no WH045, the slice alone would."""
    text = MAYBE_UNASSIGNED + FILLER + below
    assert _whole(text) == []
    assert _partial(text) is None


@pytest.mark.parametrize(
    "below",
    [
        "def f():\n    global scale\n    scale = 1\n",
        "def f():\n    from m import (\n        x,\n        scale,\n    )\n",
        "try: import scale\nexcept ImportError: pass\n",
    ],
)
def test_a_name_bound_anywhere_below_keeps_the_slice_silent(below: str) -> None:
    """A name declared global, or imported, anywhere below: the model's constants and imports are read
    from any depth; the slice, which does not tell which rules read what, says nothing."""
    assert _partial(MAYBE_UNASSIGNED + FILLER + below) is None


@pytest.mark.parametrize(
    "below",
    [
        'def f():\n    """the module-level scale, global scale, from the scale import"""\n',
        "# scale = 1.0 (a comment)\n",
        "def g(scale):\n    return scale\n",  # a parameter elsewhere binds nothing at module level
    ],
)
def test_words_that_bind_nothing_leave_the_slice_its_say(below: str) -> None:
    text = MAYBE_UNASSIGNED + FILLER + below
    assert _partial(text) == ["WH045"] == _whole(text)


@pytest.mark.parametrize(
    "below",
    [
        "from m import *\n",
        "# wh: ignore-file[WH045]\n",
        "wp.launch(on_screen, dim=4, inputs=[a])\n",
    ],
)
def test_what_the_rest_may_change_file_wide_keeps_the_slice_silent(below: str) -> None:
    assert _partial(MAYBE_UNASSIGNED + FILLER + below) is None


def test_a_factory_called_below_keeps_the_slice_silent() -> None:
    """A kernel made in a factory reads the sizes its calls pass (`model.tiles`): calls below count."""
    factory = (
        "import warp as wp\n\n\ndef make(n: int):\n    @wp.kernel\n    def k(a: wp.array(dtype=float)):\n"
    )
    factory += "        a[wp.tid()] = float(n)\n\n    return k\n"
    assert _partial(factory + FILLER) == []
    assert _partial(factory + FILLER + "k4 = make(4)\n") is None


def test_a_syntax_error_below_leaves_the_slice_its_say() -> None:
    text = MAYBE_UNASSIGNED + FILLER + "def broken(:\n    pass\n"
    assert _partial(text) == ["WH045"]
    assert sorted(_whole(text)) == ["WH000", "WH045"]


def test_a_slice_that_does_not_parse_says_nothing() -> None:
    assert _partial(MAYBE_UNASSIGNED.replace("i = wp.tid()", "i = wp.tid(") + FILLER) is None


@pytest.mark.parametrize("last_line", [10, 30])
def test_the_slices_of_real_files_give_records_of_the_whole(last_line: int) -> None:
    """On the examples and the corpus cases (real bugs among them), each also with a syntax error
    appended: every record the slice gives is one the whole gives, and, where the whole parses, exactly
    what the whole's model gives of its first screen."""
    table = load_table()
    spoke = early = 0
    for root in ("examples", "tests/corpus/cases", "tests/corpus/real_bugs"):
        for file in sorted((REPOSITORY / root).rglob("*.py")):
            path = str(file)
            for text in (file.read_text(), file.read_text() + "\ndef broken(:\n    pass\n"):
                records = first_screen_records(text, path, Settings(), table, last_line)
                if records is None:
                    continue
                parsed = parse_source(text)
                whole = analyse_parsed(
                    parsed, path, Settings(), table, build_model(text, path, table, parsed)
                )
                assert [r for r in records if r not in whole.records] == [], file
                if parsed.syntax_error is None:
                    again = parse_source(text)
                    model = build_model(text, path, table, again)
                    assert records == whole_first_screen(again, path, Settings(), table, model, last_line), (
                        file
                    )
                spoke += 1
                early += len(records)
    assert spoke > 20
    assert early > 0
