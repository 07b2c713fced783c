"""The workspace model parses a large module piece by piece (`source.parse_in_pieces`): the same tree as a
whole parse, without `ast.parse`'s C syntax tree of the whole text next to the Python one (the peak memory
of a check was a launch target parsed while the launching file's tree was alive)."""

from __future__ import annotations

import ast
import tracemalloc
from pathlib import Path

import pytest

from warp_harness import engine, freed_memory
from warp_harness.engine import check_bytes
from warp_harness.model import project, source
from warp_harness.model.project import ProjectIndex
from warp_harness.model.source import PIECE_MIN_CHARS, parse_in_pieces, parse_source

HEADER = '''"""Kernels."""

from __future__ import annotations

import warp as wp

SCALE = 2.0
'''

KERNEL = """

@wp.kernel
def k{n}(a: wp.array(dtype=float), b: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    v = b[i] * SCALE + wp.vec3(1.0, 2.0, {n}.0)
    a[i] = wp.length(v) + float(i) * {n}.0
"""

# a string spanning lines that start at the first column, one of them like a definition: no place to cut
SNIPPET = '''

SNIPPET = """
#include <cuda.h>
def not_python():
{body}
"""
'''


def _module(kernels: int) -> str:
    parts = [HEADER]
    for n in range(kernels):
        parts.append(KERNEL.format(n=n))
        if n % 50 == 25:
            parts.append(SNIPPET.format(body="x" * 40))
    return "".join(parts)


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=True)


def test_pieces_give_the_whole_parse() -> None:
    text = _module(1000)
    assert len(text) > 2 * PIECE_MIN_CHARS
    whole = parse_source(text)
    pieces = parse_in_pieces(text)
    assert _dump(pieces.tree) == _dump(whole.tree)
    assert pieces.lines == whole.lines
    assert pieces.syntax_error is None


def test_a_syntax_error_is_the_whole_parse_s() -> None:
    text = _module(1000) + "\ndef broken(:\n    pass\n"
    whole = parse_source(text)
    pieces = parse_in_pieces(text)
    assert pieces.syntax_error == whole.syntax_error
    assert _dump(pieces.tree) == _dump(whole.tree)


def _package(tmp_path: Path, **modules: str) -> Path:
    """The package ``pkg`` in ``tmp_path`` with these modules (name: text)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in modules.items():
        (pkg / f"{name}.py").write_text(text)
    return pkg


def _counted_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the texts `ast.parse` is given from now on (through `source._parse`)."""
    calls: list[int] = []
    parse = source._parse

    def counting(text: str) -> ast.Module:
        calls.append(len(text))
        return parse(text)

    monkeypatch.setattr(source, "_parse", counting)
    return calls


def test_a_large_module_is_parsed_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counted_parses(monkeypatch)
    parse_in_pieces(_module(1000))
    assert len(calls) > 3


def _peak(parse: object, text: str) -> int:
    tracemalloc.start()
    try:
        tree = parse(text)  # type: ignore[operator]
        peak = tracemalloc.get_traced_memory()[1]
        del tree
    finally:
        tracemalloc.stop()
    return peak


def test_a_launch_target_is_parsed_without_the_whole_c_tree(tmp_path: Path) -> None:
    # what the workspace model holds at the peak of parsing a target: its tree, and the C tree of one piece
    text = _module(1200)
    index = ProjectIndex.for_paths([_package(tmp_path, kernels=text)])
    loaded = index._load("pkg.kernels")
    assert loaded is not None
    in_index = _peak(lambda _: loaded.parsed, text)
    whole = _peak(ast.parse, text)
    assert in_index < 0.75 * whole


def test_a_launch_into_a_module_parsed_in_pieces_has_the_same_records(tmp_path: Path) -> None:
    pkg = _package(tmp_path, kernels=_module(1000))
    launcher = pkg / "run.py"
    launcher.write_text(
        "import warp as wp\nfrom pkg.kernels import k7\n\n\ndef run(a, b, n: float):\n"
        "    wp.launch(k7, dim=2.5, inputs=[a])\n"
    )
    data = launcher.read_bytes()
    pieces = check_bytes(data, str(launcher), project=ProjectIndex.for_paths([pkg]).view(str(launcher)))
    assert pieces.records  # the launch is judged against the kernel in the other module
    whole_index = ProjectIndex.for_paths([pkg])
    original = source.PIECE_MIN_CHARS
    source.PIECE_MIN_CHARS = 1 << 40
    try:
        whole = check_bytes(data, str(launcher), project=whole_index.view(str(launcher)))
    finally:
        source.PIECE_MIN_CHARS = original
    assert pieces.records == whole.records


def test_memory_freed_by_a_large_parse_is_handed_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[bool] = []
    monkeypatch.setattr(engine, "release_freed_memory", lambda: released.append(True))
    pkg = _package(tmp_path, large=_module(2000), small=_module(3))
    large, small = pkg / "large.py", pkg / "small.py"
    index = ProjectIndex.for_paths([pkg])
    assert len(large.read_text()) >= engine.TRIM_MIN_CHARS
    check_bytes(small.read_bytes(), str(small), project=index.view(str(small)))
    assert not released
    check_bytes(large.read_bytes(), str(large), project=index.view(str(large)))
    assert released == [True]
    freed_memory._malloc_trim = None
    monkeypatch.undo()
    freed_memory.release_freed_memory()  # wherever it runs: glibc's malloc_trim, or nothing


def test_a_large_checked_file_is_parsed_in_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counted_parses(monkeypatch)
    pkg = _package(tmp_path, large=_module(1000))
    large = pkg / "large.py"
    index = ProjectIndex.for_paths([pkg])
    check_bytes(large.read_bytes(), str(large), project=index.view(str(large)))
    assert len(calls) > 3


def test_a_checked_file_too_large_to_keep_parsed_is_summarised_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project, "LOADED_CACHE_BYTES", 10_000)
    launcher = (
        "import warp as wp\nfrom pkg.large import k3\n\n\ndef run(a):\n    wp.launch(k3, dim=1, inputs=[a])\n"
    )
    pkg = _package(tmp_path, large=_module(200), other=launcher)
    large, other = pkg / "large.py", pkg / "other.py"
    index = ProjectIndex.for_paths([pkg])
    check_bytes(large.read_bytes(), str(large), project=index.view(str(large)))
    view = index.view(str(other))  # the large file's parse goes
    assert index._loaded.get("pkg.large") is None or index._loaded["pkg.large"]._parsed is None

    def no_parse(text: str) -> object:
        raise AssertionError("parsed again")

    monkeypatch.setattr(project, "parse_in_pieces", no_parse)
    summary = index.summary("pkg.large")
    assert summary is not None and "k3" in summary.names
    del view


CLASS_HEADER = '''

class Solver(
    Base,
):
    """A large class: cut between its methods."""

    doc = """
    def not_a_method():
    """
    body_kernel = k1

'''

METHOD = """
    @staticmethod
    def helper{n}(x):
        def nested(y):
            return y

        return nested(x) + {n}

    def step{n}(self, a):
        self.k{n} = k{n}
        local = make(float)
        self.made = local
        wp.launch(k{n}, dim=1, inputs=[a])
"""

# a method's string spanning lines that look like methods: no place to cut there
STRING_METHOD = '''
    def text{n}(self):
        return """
    def looks_like_a_method(self):
        pass
    """
'''


def _class_module(methods: int, *, after: str = "") -> str:
    parts = [_module(3), "\n\nclass Base:\n    pass\n", CLASS_HEADER]
    for n in range(methods):
        parts.append(METHOD.format(n=n))
        if n % 30 == 15:
            parts.append(STRING_METHOD.format(n=n))
    parts.append("    def step0(self, a):  # defined again\n        self.k0 = k1\n")
    return "".join(parts) + after


def _pieces(text: str) -> list[source.Piece]:
    return list(source.top_level_pieces(text))


@pytest.mark.parametrize(
    "after", ["", "\n\nTAIL = 1\n", "\n\n@wp.kernel\ndef tail(a: wp.array(dtype=float)):\n    pass\n"]
)
def test_a_large_class_is_cut_between_its_methods(after: str) -> None:
    text = _class_module(600, after=after)
    pieces = _pieces(text)
    assert sum(piece.continues for piece in pieces) > 3
    assert _dump(parse_in_pieces(text).tree) == _dump(parse_source(text).tree)


def test_a_class_is_cut_only_at_its_body_s_indentation() -> None:
    # the first line starting a definition is in a string, deeper than the methods, as are the functions
    # nested in the class's last method: cut there, each run would parse, as another tree
    nested = "".join(f"        def f{n}(x):\n            return x + {n}\n\n" for n in range(3000))
    text = (
        _class_module(10).replace(
            '    doc = """\n    def not_a_method():', '    doc = """\n        def not_a_method():'
        )
        + f"\n    def last(self):\n{nested}        return f0\n"
    )
    assert not any(piece.continues for piece in _pieces(text))
    assert _dump(parse_in_pieces(text).tree) == _dump(parse_source(text).tree)


def test_a_class_cut_inside_a_string_goes_on_to_the_next_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    failed: list[int] = []
    parse = source._parse

    def failing(text: str) -> ast.Module:
        try:
            return parse(text)
        except SyntaxError:
            failed.append(len(text))
            raise

    monkeypatch.setattr(source, "PIECE_CHARS", 200)  # a cut before every method, in strings too
    monkeypatch.setattr(source, "_parse", failing)
    text = _class_module(600)
    assert any(piece.continues for piece in _pieces(text))
    assert failed
    assert _dump(parse_in_pieces(text).tree) == _dump(parse_source(text).tree)


def test_a_very_large_text_shares_its_line_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """From `SHARED_LINE_NUMBERS_CHARS` on, equal line numbers of the tree are one int object: the tree
    equals the whole parse's, positions included."""
    monkeypatch.setattr(source, "SHARED_LINE_NUMBERS_CHARS", 100_000)
    one = 'def f{n}(a, b):\n    """doc"""\n    c = a + b * {n}\n    return (c,\n            a)\n\n\n'
    text = "import warp as wp\n\n" + "".join(one.format(n=n) for n in range(4000))
    assert len(text) >= 100_000
    parsed = source.parse_in_pieces(text)
    assert ast.dump(parsed.tree, include_attributes=True) == ast.dump(
        ast.parse(text), include_attributes=True
    )
    ends: dict[int, set[int]] = {}
    for node in ast.walk(parsed.tree):
        for field in ("lineno", "end_lineno"):
            line = getattr(node, field, None)
            if isinstance(line, int) and line > 256:
                ends.setdefault(line, set()).add(id(line))
    assert ends and all(len(objects) == 1 for objects in ends.values())
    # below the threshold, the parser's own ints
    monkeypatch.setattr(source, "SHARED_LINE_NUMBERS_CHARS", len(text) + 1)
    unshared = source.parse_in_pieces(text)
    returns = [n for n in ast.walk(unshared.tree) if isinstance(n, ast.Return) and n.lineno > 256]
    assert any(r.value is not None and r.lineno is not r.value.lineno for r in returns)
