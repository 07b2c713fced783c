"""`model.source.parses_cleanly`: a file without kernels is checked for syntax errors without building its
tree, and its records are those `parse_source` gives."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import warp

from warp_harness.engine import SYMTABLE_MIN_CHARS, check_bytes
from warp_harness.model import source
from warp_harness.model.source import decode_source, parse_source, parses_cleanly

WARP = Path(warp.__file__).parent

SNIPPETS = [
    "x = 1\n",
    "def f(:\n    pass\n",
    "print('unclosed\n",
    "for x in y:\npass\n",
    "x = (1,\n",
    "class C:\n    def f(self):\n        return 1\n  y = 2\n",
    "f(**x, *y)\n",
    "a = 1 +\n",
    "def f():\n    x = 1\n    nonlocal x\n",
    "nonlocal x\n",  # only the symbol table rejects it: Python's compiler does, ast.parse does not
    "def f(a, a):\n    pass\n",  # a symbol-table error too
    "return 1\n",  # the compiler's error, neither the parser's nor the symbol table's
    'x = "\\d"\n',  # an invalid escape: a SyntaxWarning
    "x = " + "(" * 250 + ")" * 250 + "\n",  # too deep for the parser
    "x = " + " + ".join(["1"] * 3000) + "\n",  # a deep tree from a flat text
    "x = [i async for i in y]\n",
    "with (open(a) as b, open(c) as d):\n    pass\n",
    "match x:\n    case 1:\n        pass\n",
    "\ufeffx = 1\n",
]


@pytest.mark.parametrize("text", SNIPPETS)
def test_a_clean_verdict_is_parse_sources(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the check warns about nothing the user wrote
        clean = parses_cleanly(text)
    parsed = parse_source(text)
    if clean:
        assert parsed.syntax_error is None
    # and the records are those of the parse, whichever way they were found
    decoded, _ = decode_source(text.encode())  # a BOM is dropped
    assert decoded is not None
    expected = ["WH000"] if parse_source(decoded).syntax_error is not None else []
    assert [r.rule for r in check_bytes(text.encode(), "t.py").records] == expected


def test_a_module_level_nonlocal_is_no_syntax_error() -> None:
    assert not parses_cleanly("nonlocal x\n")
    assert parse_source("nonlocal x\n").syntax_error is None
    assert check_bytes(b"nonlocal x\n", "t.py").records == ()


def test_real_files_and_their_broken_halves_get_the_same_verdict() -> None:
    files = sorted((WARP / "examples").rglob("*.py"))[:60]
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        for cut in (text, text[: len(text) // 2], text[: len(text) // 3] + ")"):
            assert parses_cleanly(cut) == (parse_source(cut).syntax_error is None), (path, len(cut))


def test_a_file_without_kernels_and_errors_is_never_parsed_into_a_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_tree(text: str) -> source.ParsedSource:
        raise AssertionError("parsed into a tree")

    monkeypatch.setattr(source, "parse_source", no_tree)
    text = "import os\n" + "".join(f"\n\ndef f{i}():\n    return os.getcwd()\n" for i in range(600))
    assert len(text) >= SYMTABLE_MIN_CHARS
    result = check_bytes(text.encode(), "t.py")
    assert result.records == ()
    assert result.source_lines == tuple(text.splitlines())
    assert check_bytes(text.encode(), "t.py", keep_lines=False).source_lines is None


def test_a_small_file_without_kernels_is_parsed_not_symbol_tabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing symtable costs more than parsing a small text (a one-file check of an empty file)."""

    def no_symtable(text: str) -> bool:
        raise AssertionError("symtable asked")

    monkeypatch.setattr(source, "parses_cleanly", no_symtable)
    assert check_bytes(b"import os\n", "t.py").records == ()
    assert [r.rule for r in check_bytes(b"def f(:\n", "t.py").records] == ["WH000"]


@pytest.mark.parametrize(
    "text",
    [
        "import os\r\nx = (1,\n",  # a syntax error
        "import os\n" + "x = 1\r\n" * SYMTABLE_MIN_CHARS,  # no record, never parsed into a tree
        "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    i = wp.tid()\r\n"
        "    a[i] = 1.0\n\n\ndef run(a, n):\n    wp.launch(k, dim=(n, n), inputs=[a])\n",  # WH007
    ],
)
def test_a_result_keeps_only_the_lines_its_records_point_at_when_asked(text: str) -> None:
    every = check_bytes(text.encode(), "t.py")
    assert every.source_lines == tuple(line.rstrip("\r\n") for line in text.splitlines(keepends=True))
    wanted = {r.location.line for r in every.records}
    kept = check_bytes(text.encode(), "t.py", keep_lines="records")
    assert kept.records == every.records
    assert kept.source_lines == tuple(
        line if n in wanted else "" for n, line in enumerate(every.source_lines, 1)
    )
