"""A module too large to keep parsed is summarised piece by piece (`project.summarise_pieces`): the very
summary `summarise` makes of its whole tree, without ever holding that tree (it stayed in the parse cache,
the newest entry, while the file asking went on: the peak memory of a check)."""

from __future__ import annotations

import ast
import gc
import tracemalloc
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_project_pieces import _counted_parses, _package

from warp_harness.model import project, source
from warp_harness.model.project import ModuleSummary, ProjectIndex, summarise, summarise_pieces
from warp_harness.model.source import (
    PIECE_MIN_CHARS,
    NotInPieces,
    parse_in_pieces,
    top_level_pieces,
)

HEADER = '''"""Kernels."""

from __future__ import annotations

import functools

import warp as wp

SCALE = 2.0
'''

BLOCK = """

@wp.kernel
def k{n}(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * SCALE + {n}.0


@functools.cache
def make{n}(dtype):
    @wp.kernel
    def made(a: wp.array(dtype=dtype)):
        a[0] = dtype({n})

    return made


alias{n} = k{n} if SCALE else make{n}(float)


class Solver{n}:
    kernel = k{n}

    def __init__(self):
        self.made = make{n}(float)

    @staticmethod
    def factory():
        @wp.kernel
        def inner(a: wp.array(dtype=float)):
            a[0] = 1.0

        return inner
"""

# a string spanning lines that start at the first column, one of them like a definition: no place to cut
SNIPPET = '''

SNIPPET{n} = """
#include <cuda.h>
def not_python():
{body}
"""
'''


def _module(blocks: int, tail: str = "") -> str:
    parts = [HEADER]
    for n in range(blocks):
        parts.append(BLOCK.format(n=n))
        if n % 40 == 20:
            parts.append(SNIPPET.format(n=n, body="x" * 40))
    return "".join(parts) + tail


def _plain(value: object, scopes: dict[int, int] | None = None) -> object:
    """What a summary holds, comparable: nodes dumped, the stand-ins of methods by content (one met again,
    its bindings leading back to it, by the order it was first met in)."""
    scopes = {} if scopes is None else scopes
    if isinstance(value, ast.AST):
        return ast.dump(value, include_attributes=True)
    if isinstance(value, project._Scope):
        if id(value) in scopes:
            return ("scope", scopes[id(value)])
        scopes[id(value)] = len(scopes)
        return ("scope", value.self_name, _plain(value.bindings, scopes))
    if isinstance(value, project._ClassSummary):
        fields = (value.bases, value.attrs, value.methods, value.imports, value._factories)
        return ("class", value.name, value.module, _plain(fields, scopes))
    if isinstance(value, project.ImportMap):
        return ("imports", list(value.modules.items()), list(value.objects.items()))
    if isinstance(value, dict):
        return [(_plain(k, scopes), _plain(v, scopes)) for k, v in value.items()]  # in order
    if isinstance(value, list | tuple):
        return [_plain(v, scopes) for v in value]
    return value


def _summary(summary: ModuleSummary | None) -> object:
    assert summary is not None
    return _plain(
        (
            summary.name,
            summary.package,
            summary.digest,
            summary.names,
            summary.stars,
            summary.classes,
            summary.imports,
            summary._classes,
            summary._factories,
        )
    )


def _both(text: str, module: str = "pkg.m") -> tuple[object, object]:
    whole = summarise(parse_in_pieces(text).tree, module, False, "d", detached=True)
    pieces = summarise_pieces(top_level_pieces(text), module, False, "d")
    return _summary(pieces), _summary(whole)


def test_the_pieces_summary_is_the_whole_tree_s() -> None:
    text = _module(300)
    assert len(text) > 2 * PIECE_MIN_CHARS
    pieces, whole = _both(text)
    assert pieces == whole
    summary = summarise_pieces(top_level_pieces(text), "pkg.m", False, "d")
    assert summary is not None
    line = text.splitlines().index("def k3(a: wp.array(dtype=float)):") + 1
    assert summary.names["k3"] == [("kernel", project.KernelRef("pkg.m", line, 0, "k3"))]
    assert summary.names["make3"][0][0] == "factory"
    assert "Solver3" in summary._classes and summary.classes == {}


def test_a_string_spanning_a_piece_boundary() -> None:
    text = _module(300)
    calls = [len(body) for body in top_level_pieces(text)]
    assert len(calls) > 4
    pieces, whole = _both(text)
    assert pieces == whole


def _newton_files() -> Iterator[Path]:
    root = Path.home() / ".cache/warp-harness-bench/newton-1.8.0/newton"
    return iter(sorted(p for p in root.rglob("*.py") if p.stat().st_size >= PIECE_MIN_CHARS))


@pytest.mark.parametrize("path", list(_newton_files()), ids=lambda p: p.name)
def test_real_modules(path: Path) -> None:
    """Newton's large modules (when its tree is there, as the benchmarks download it)."""
    text, _ = source.decode_source(path.read_bytes())
    assert text is not None
    pieces, whole = _both(text, "newton.m")
    assert pieces == whole


def test_an_import_after_a_definition_changing_the_imports_is_the_whole_tree_s(tmp_path: Path) -> None:
    # `late` is judged before `kp` names Warp: only the whole tree's summary knows it is a kernel
    late = "\n\n@kp.kernel\ndef late(a):\n    pass\n"
    text = HEADER + late + _module(300)[len(HEADER) :] + "\nimport warp as kp\n"
    assert summarise_pieces(top_level_pieces(text), "pkg.m", False, "d") is None
    index = _index(tmp_path, text)
    summary = index.summary("pkg.m")
    assert summary is not None
    line = text.splitlines().index("def late(a):") + 1
    assert summary.names["late"] == [("kernel", project.KernelRef("pkg.m", line, 0, "late"))]
    whole = summarise(parse_in_pieces(text).tree, "pkg.m", False, index.digest("pkg.m"), detached=True)
    assert _summary(summary) == _summary(whole)


def test_an_import_after_a_definition_changing_nothing_is_summarised_in_pieces() -> None:
    text = _module(300, "\nimport warp as wp\nimport functools\n")
    pieces, whole = _both(text)
    assert pieces == whole


def test_a_syntax_error_is_the_whole_tree_s(tmp_path: Path) -> None:
    text = _module(300, "\ndef broken(:\n    pass\n")
    with pytest.raises(NotInPieces):
        for _ in top_level_pieces(text):
            pass
    index = _index(tmp_path, text)
    summary = index.summary("pkg.m")
    whole = summarise(parse_in_pieces(text).tree, "pkg.m", False, index.digest("pkg.m"), detached=True)
    assert _summary(summary) == _summary(whole)
    assert "k7" in whole.names


def test_a_small_text_is_not_cut() -> None:
    with pytest.raises(NotInPieces):
        next(top_level_pieces(_module(2)))
    with pytest.raises(NotInPieces):
        next(top_level_pieces(_module(300) + "\f\n"))


def _index(tmp_path: Path, text: str) -> ProjectIndex:
    return ProjectIndex.for_paths([_package(tmp_path, m=text)])


def test_a_module_too_large_to_keep_parsed_is_summarised_without_its_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project, "LOADED_CACHE_BYTES", 50_000)
    text = _module(300)
    index = _index(tmp_path, text)

    def no_whole_parse(text: str) -> object:
        raise AssertionError("parsed whole")

    monkeypatch.setattr(project, "parse_in_pieces", no_whole_parse)
    summary = index.summary("pkg.m")
    assert index._loaded["pkg.m"]._parsed is None  # its tree is not kept
    monkeypatch.undo()
    whole = summarise(parse_in_pieces(text).tree, "pkg.m", False, index.digest("pkg.m"), detached=True)
    assert _summary(summary) == _summary(whole)


def test_a_module_parsed_already_is_summarised_from_its_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project, "LOADED_CACHE_BYTES", 50_000)
    index = _index(tmp_path, _module(300))
    assert index.model("pkg.m") is not None
    parses = _counted_parses(monkeypatch)
    assert index.summary("pkg.m") is not None
    assert parses == []


SOLVER_METHODS = """
    @wp.kernel
    def class_kernel{n}(a: wp.array(dtype=float)):
        a[0] = {n}.0

    def __init__{n}(self):
        made = make{m}(float)
        self.k{n} = made if SCALE else k{m}
        self.shared = k{m}

    def factory{n}(self):
        @wp.kernel
        def inner(a: wp.array(dtype=float)):
            a[0] = {n}.0

        return inner
"""


def _solver_module(methods: int) -> str:
    """A module ending with a class large enough to be cut (`top_level_pieces`) between its methods."""
    parts = [_module(5), "\n\nclass Solver(Solver1):\n    body_kernel = k1\n"]
    parts.extend(SOLVER_METHODS.format(n=n, m=n % 5) for n in range(methods))
    parts.append("\n    def factory3(self):  # defined again: this one counts\n        return None\n")
    return "".join(parts)


def test_a_class_cut_in_parts_is_summarised_as_a_whole() -> None:
    text = _solver_module(800)
    assert sum(piece.continues for piece in top_level_pieces(text)) > 3
    pieces, whole = _both(text)
    assert pieces == whole
    summary = summarise_pieces(top_level_pieces(text), "pkg.m", False, "d")
    assert summary is not None
    solver = summary.class_summary("Solver")
    assert solver is not None
    assert solver.factory("factory3") is None and solver.factory("factory700") is not None
    assert len(solver.attrs["shared"]) == 800


def test_a_large_class_is_summarised_without_its_whole_tree() -> None:
    text = _solver_module(1500)
    whole = _peak(lambda: summarise(parse_in_pieces(text).tree, "pkg.m", False, "d", detached=True))
    pieces = _peak(lambda: summarise_pieces(top_level_pieces(text), "pkg.m", False, "d"))
    assert pieces < 0.5 * whole


def _peak(make: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        made = make()
        peak = tracemalloc.get_traced_memory()[1]
        del made
    finally:
        tracemalloc.stop()
    return peak


def test_a_summary_in_pieces_keeps_no_node_of_them() -> None:
    shared = ast.expr_context | ast.operator | ast.boolop | ast.unaryop | ast.cmpop  # singletons
    nodes: list[weakref.ref[ast.AST]] = []

    def watched(text: str) -> Iterator[source.Piece]:
        for piece in top_level_pieces(text):
            for stmt in piece.statements:
                nodes.extend(weakref.ref(n) for n in ast.walk(stmt) if not isinstance(n, shared))
            yield piece

    summary = summarise_pieces(watched(_solver_module(300)), "pkg.m", False, "d")
    gc.collect()
    assert summary is not None and nodes
    assert [ref() for ref in nodes if ref() is not None] == []
