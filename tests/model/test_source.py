from __future__ import annotations

import ast
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from warp_harness.model.source import decode_source, parse_source


def test_syntax_error_keeps_the_rest_of_the_file() -> None:
    text = (
        "import warp as wp\n\n"
        "@wp.kernel\ndef good_a(x: wp.array(dtype=float)):\n    i = wp.tid()\n\n"
        "@wp.kernel\ndef broken(x: wp.array(dtype=float)\n    i = wp.tid()\n\n"
        "@wp.kernel\ndef good_b(x: wp.array(dtype=float)):\n    i = wp.tid()\n"
    )
    parsed = parse_source(text)
    assert parsed.syntax_error is not None and parsed.syntax_error.line == 8
    names = [n.name for n in ast.walk(parsed.tree) if isinstance(n, ast.FunctionDef)]
    assert names == ["good_a", "good_b"]
    good_b = next(n for n in ast.walk(parsed.tree) if isinstance(n, ast.FunctionDef) and n.name == "good_b")
    assert good_b.lineno == 12  # line numbers of recovered chunks are the file's


def test_decorator_and_else_stay_with_their_statement() -> None:
    text = "if x:\n    pass\nelse:\n    pass\n@deco\ndef f():\n    pass\ndef g(:\n"
    parsed = parse_source(text)
    assert [type(s).__name__ for s in parsed.tree.body] == ["If", "FunctionDef"]


def test_decode_rejects_binary_and_bad_utf8() -> None:
    text, issue = decode_source(b"\x7fELF\x00\x01")
    assert text is None and issue is not None and "null bytes" in issue.message
    text, issue = decode_source(b"x = '\xff\xfe'\n")
    assert text is None and issue is not None and "utf-8" in issue.message.lower()


def test_decode_honours_coding_declaration_and_bom() -> None:
    text, issue = decode_source("# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1"))
    assert issue is None and text is not None and "café" in text
    text, issue = decode_source(b"\xef\xbb\xbfx = 1\n")
    assert issue is None and text == "x = 1\n"


def test_empty_and_deeply_nested_input_never_raise() -> None:
    assert parse_source("").syntax_error is None
    nested = "x = " + "(" * 5000 + ")" * 5000 + "\n"
    parsed = parse_source(nested)
    assert parsed.tree is not None


def test_deep_expressions_get_the_same_verdict_at_any_stack_depth() -> None:
    """ast.parse's limit depends on the caller's stack depth; the language server parses deep in
    its event loop, `check` near the top. Found by the server fuzzer: a 2,923-term sum."""
    text = "y = " + "1 + " * 2923 + "1\n"

    def at_depth(n: int, parse: Callable[[], object]) -> object:
        return parse() if n == 0 else at_depth(n - 1, parse)

    def raw() -> str:
        try:
            ast.parse(text)
        except RecursionError:
            return "RecursionError"
        return "ok"

    with ThreadPoolExecutor(1) as fresh_stack:  # the hazard itself: fine on a shallow stack only
        assert fresh_stack.submit(raw).result() == "ok"
    assert at_depth(200, raw) == "RecursionError"
    shallow = parse_source(text)
    deep = at_depth(200, lambda: parse_source(text))
    assert shallow.syntax_error is None and deep.syntax_error is None  # type: ignore[attr-defined]
