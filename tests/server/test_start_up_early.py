"""A large document never analysed before: the start-up process publishes the records of the kernels on
its first screen ahead of the whole (server/start_up_process.py): from a parse of its statements up to
there (`warp_harness.first_screen`) where the rest cannot change them, else once the whole's model is
built (`_analysed`; `engine.first_screen_records`), and the whole replaces them. The early publication is a
subset of the whole, never a record the whole does not give. Real `warp-harness serve` processes over
stdio, an empty result cache."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from stdio_client import StdioClient
from test_start_up_cache import _next_publication
from test_start_up_process import _open_at_start_up, _publications

from warp_harness.launch import module_command
from warp_harness.server.start_up_process import EARLY_MIN_CHARS, FIRST_SCREEN_LINES

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here: no start-up process")

KERNEL = """
@wp.kernel
def {name}(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.sqrt()
"""


def _large_module() -> str:
    """A kernel with a record (WH004: a builtin called wrongly) on the first screen, another far below it,
    and enough host code between them to make the text large."""
    filler = "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(3000))
    text = f"import warp as wp\n{KERNEL.format(name='on_screen')}{filler}{KERNEL.format(name='below')}"
    assert len(text) >= EARLY_MIN_CHARS
    return text


def _diagnostics(root: Path, source: Path, *flags: str, early: bool = True) -> list[list[dict[str, Any]]]:
    """Every publication of ``source`` by a fresh server (its own cache folder, empty) until its own
    analysis is done (``early``: the start-up process publishes twice, the first screen then the whole)."""
    client = StdioClient(
        [*module_command("warp_harness", "serve"), *flags],
        root,
        env={**os.environ, "XDG_CACHE_HOME": str(root / f"cache{len(flags)}")},
    )
    try:
        published = [_open_at_start_up(client, root, source)]
        if early and not flags:  # the whole, from the start-up process
            published.append(_next_publication(client, source.as_uri()))
        position = {"line": 0, "character": 0}  # the hover waits for the server's own analysis
        client.request("textDocument/hover", {"textDocument": {"uri": source.as_uri()}, "position": position})
        published += [p["diagnostics"] for p in _publications(client, source.as_uri())]
        return published
    finally:
        client.close()


def _lines(diagnostics: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((d["code"], d["range"]["start"]["line"]) for d in diagnostics)


def test_the_first_screen_is_published_ahead_and_the_whole_replaces_it(tmp_path: Path) -> None:
    source = tmp_path / "big.py"
    source.write_text(_large_module())
    lines = source.read_text().splitlines()
    on_screen = lines.index("def on_screen(a: wp.array(dtype=float)):") + 2  # the wp.sqrt() line (0-based)
    below = lines.index("def below(a: wp.array(dtype=float)):") + 2
    assert on_screen < FIRST_SCREEN_LINES < below

    own = _diagnostics(tmp_path, source, "--no-start-up-process")
    assert _lines(own[-1]) == [("WH004", on_screen), ("WH004", below)]

    early, whole, *later = _diagnostics(tmp_path, source)
    assert _lines(early) == [("WH004", on_screen)]  # the first screen only
    assert all(d in whole for d in early)  # nothing the whole does not give: the same diagnostic
    assert whole == own[-1]  # the whole: the server's own analysis, which then publishes nothing new
    assert later == []


def test_the_first_screen_comes_from_its_slice_when_the_rest_does_not_parse(tmp_path: Path) -> None:
    """A syntax error far below: the whole's model hands on nothing early (`engine.first_screen_records`
    needs a clean parse), so an early publication can only come from the slice; the whole, with the
    syntax error, replaces it."""
    source = tmp_path / "big.py"
    source.write_text(_large_module() + "\ndef broken(:\n    pass\n")
    lines = source.read_text().splitlines()
    on_screen = lines.index("def on_screen(a: wp.array(dtype=float)):") + 2
    below = lines.index("def below(a: wp.array(dtype=float)):") + 2

    early, whole, *later = _diagnostics(tmp_path, source)
    assert _lines(early) == [("WH004", on_screen)]
    assert _lines(whole) == [("WH000", len(lines) - 2), ("WH004", on_screen), ("WH004", below)]
    assert all(d in whole for d in early)
    assert later == []


# a kernel whose `scale` is assigned on one path only: WH045, unless the module binds `scale` (Warp then
# reads the module's value on the other path); here the module does so at its end
MAYBE_UNASSIGNED = """
@wp.kernel
def on_screen(a: wp.array(dtype=float)):
    i = wp.tid()
    if i > 0:
        scale = 2.0
    a[i] = scale
"""


def test_nothing_is_said_early_of_a_name_bound_below(tmp_path: Path) -> None:
    """The slice alone would report WH045 on `scale` (bound only at the end of the file): a false alarm,
    so the first screen is not judged from it; the whole (syntax error and all) is the first publication."""
    filler = "".join(f"\n\ndef helper_{n}(x):\n    return x + {n}\n" for n in range(3000))
    source = tmp_path / "big.py"
    source.write_text(
        f"import warp as wp\n{MAYBE_UNASSIGNED}{filler}\nscale = 1.0\n\ndef broken(:\n    pass\n"
    )
    alone = tmp_path / "alone.py"
    alone.write_text(f"import warp as wp\n{MAYBE_UNASSIGNED}")

    first, *later = _diagnostics(tmp_path, source, early=False)
    assert [d["code"] for d in first] == ["WH000"]  # the whole: no WH045
    assert later == []
    # what the slice alone says, were it asked: the false alarm kept out
    assert [d["code"] for d in _diagnostics(tmp_path, alone, early=False)[0]] == ["WH045"]


def test_a_small_document_gets_its_whole_analysis_at_once(tmp_path: Path) -> None:
    """Below `EARLY_MIN_CHARS` the first publication is the whole: both kernels' records."""
    source = tmp_path / "small.py"
    source.write_text(f"import warp as wp\n{KERNEL.format(name='on_screen')}{KERNEL.format(name='below')}")
    client = StdioClient(
        module_command("warp_harness", "serve"), tmp_path, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    )
    try:
        first = _open_at_start_up(client, tmp_path, source)
        info = client.request("warp-harness/serverInfo", None)
    finally:
        client.close()
    assert [d["code"] for d in first] == ["WH004", "WH004"]
    assert info["start_up"]["published"] == 1


REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("last_line", [20, 10**6])
def test_the_first_screen_records_of_real_files_are_records_of_the_whole(last_line: int) -> None:
    """`engine.first_screen_records` on the examples and the corpus cases (real bugs among them): every
    record is one the full analysis gives, the same in every field; over whole files, most of them."""
    from warp_harness.builtins import load_table
    from warp_harness.config import Settings
    from warp_harness.engine import analyse_parsed, first_screen_records
    from warp_harness.model.module import build_model
    from warp_harness.model.source import parse_source

    table = load_table()
    early_count = whole_count = 0
    for root in ("examples", "tests/corpus/cases", "tests/corpus/real_bugs"):
        for file in sorted((REPOSITORY / root).rglob("*.py")):
            text, path = file.read_text(), str(file)
            parsed = parse_source(text)
            early = first_screen_records(
                parsed, path, Settings(), table, build_model(text, path, table, parsed), last_line
            )
            again = parse_source(text)  # a fresh model: nothing shared with the early one
            model = build_model(text, path, table, again)
            whole = analyse_parsed(again, path, Settings(), table, model).records
            if early is None:
                assert again.syntax_error is not None
                continue
            assert [r for r in early if r not in whole] == [], file
            early_count += len(early)
            whole_count += len(whole)
    assert early_count > (50 if last_line > 100 else 0)
    assert whole_count > early_count
