"""Parsing a file as top-level chunks with a cache, so that after an edit only changed chunks are parsed.

The result is exactly `parse_source(text)` (same tree shape, same positions, same syntax issue), plus the
chunks the tree is made of. A chunk is one or more top-level statements starting at a line
`_chunk_starts` picks; it is cached by (first line, text), so its nodes (and the indexes kept for them)
are reused as long as neither changes. Concatenating chunks that each parse on their own is the parse
of the whole: each ends outside any bracket, string or continuation, where the tokenizer starts afresh.

A chunk's lines may be moved without its nodes (`Chunk.shift`, for an edit above it that changed the line
count): its nodes then lag behind its lines until `Chunk.settle` (or a reuse by the parser) moves them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from warp_harness.model.index import NodeIndex
from warp_harness.model.source import (
    ParsedSource,
    SyntaxIssue,
    _chunk_starts,
    _issue_from,
    _parse,
    parse_source,
)

# characters `str.splitlines` breaks lines at but Python's tokenizer does not (\r and \r\n it does)
_ODD_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_PARSE_ERRORS = (SyntaxError, ValueError, MemoryError, RecursionError)


@dataclass(eq=False)
class Chunk:
    """A run of top-level lines of a file, parsed on its own when it can be."""

    first: int  # 0-based first line
    end: int  # 0-based line after the last
    text: str
    body: list[ast.stmt] | None  # None: the chunk does not parse on its own
    _index: NodeIndex | None = field(default=None, repr=False)
    # what callers derive from the chunk alone, kept with it (e.g. names it mentions)
    facts: dict[str, object] = field(default_factory=dict, repr=False)
    # how many lines the nodes' line numbers are behind ``first`` (see `shift`)
    lag: int = field(default=0, repr=False)

    @property
    def index(self) -> NodeIndex:
        if self._index is None:
            self._index = NodeIndex(self.body or [])
        return self._index

    def shift(self, delta: int) -> None:
        """Move the chunk ``delta`` lines, its nodes not yet (they lag until `settle`)."""
        self.first += delta
        self.end += delta
        self.lag += delta

    def settle(self) -> None:
        """Give the nodes the line numbers of the chunk's lines (after `shift`)."""
        if self.lag:
            _move(self, self.first)


class ChunkParser:
    """Per-document cache of chunks; `parse` keeps only the chunks of the latest text.

    A chunk found again at another line is moved there in place (its nodes' line numbers shifted), so
    a tree handed out earlier changes under its holder: use a parse's nodes before the next `parse`.
    """

    def __init__(self) -> None:
        self._chunks: dict[str, list[Chunk]] = {}
        # chunks spanning several `_chunk_starts` pieces (a string with lines at column 0), by first line
        self._groups: dict[int, list[Chunk]] = {}
        self._groups_moved = False  # chunks were shifted since ``_groups`` was made: make it again

    def parse(self, text: str) -> tuple[ParsedSource, list[Chunk] | None]:
        """The parse of ``text`` and the chunks its tree is made of (None: only the full parse is known)."""
        if self._groups_moved:
            self._keep([c for same in self._chunks.values() for c in same])
            self._groups_moved = False
        lines = text.splitlines(keepends=True)
        if _ODD_BREAKS.search(text) or "\0" in text:
            return parse_source(text), None
        starts = _chunk_starts(lines)
        bounds = list(zip(starts, [*starts[1:], len(lines)][: len(starts)], strict=True))
        used: set[int] = set()
        head = lines[: starts[0]] if starts else lines
        if any(line.strip(" \t\n") and not line.lstrip(" \t").startswith("#") for line in head):
            return self._parse_whole(text, lines, bounds, used)  # indented code before the first chunk
        boundaries = {*starts, len(lines)}
        chunks: list[Chunk] = []
        i = 0
        while i < len(bounds):
            first, end = bounds[i]
            chunk = self._reuse(lines, first, end, used, boundaries)
            if chunk.body is None:
                return self._parse_from(text, lines, bounds, i, chunks, used)
            chunks.append(chunk)
            while i < len(bounds) and bounds[i][0] < chunk.end:
                i += 1
        return self._done(text, lines, chunks)

    def _done(self, text: str, lines: list[str], chunks: list[Chunk]) -> tuple[ParsedSource, list[Chunk]]:
        self._keep(chunks)
        body = [stmt for chunk in chunks for stmt in chunk.body or []]
        return ParsedSource(text, lines, ast.Module(body=body, type_ignores=[])), chunks

    def _reuse(
        self, lines: list[str], first: int, end: int, used: set[int], boundaries: set[int] | None
    ) -> Chunk:
        """The chunk of ``lines[first:end]``: cached (moved here if it was elsewhere) or parsed now."""
        text = "".join(lines[first:end])
        candidates = [c for c in self._chunks.get(text, ()) if id(c) not in used]
        if boundaries is not None:
            candidates += [
                g
                for g in self._groups.get(first, ())
                if id(g) not in used
                and g.first == first
                and g.end in boundaries
                and "".join(lines[first : g.end]) == g.text
            ]
        if candidates:
            chunk = next((c for c in candidates if c.first == first), candidates[0])
            _move(chunk, first)
        else:
            chunk = parse_chunk(first, end, text)
        used.add(id(chunk))
        return chunk

    def _keep(self, chunks: list[Chunk]) -> None:
        self._chunks = {}
        self._groups = {}
        for c in chunks:
            self._chunks.setdefault(c.text, []).append(c)
            if c.body and c.end > c.first + 1:
                self._groups.setdefault(c.first, []).append(c)

    def replace(self, old: Chunk, new: Chunk) -> None:
        """Keep ``new`` instead of ``old``, from the same line (a caller that re-chunked an edit itself: the
        latest text is the last one parsed with ``old`` in the place of ``new``, and the chunks after it
        `Chunk.shift`-ed by the lines it gained or lost)."""
        assert new.first == old.first
        if new.end != old.end:
            self.lines_moved()
        same = self._chunks.get(old.text, [])
        if old in same:
            same.remove(old)
            if not same:
                del self._chunks[old.text]
        self._chunks.setdefault(new.text, []).append(new)
        groups = self._groups.get(old.first)
        if groups is not None and old in groups:
            groups.remove(old)
        if new.body and new.end > new.first + 1:
            self._groups.setdefault(new.first, []).append(new)

    def lines_moved(self) -> None:
        """Kept chunks were `Chunk.shift`-ed (by a caller that re-chunked an edit itself)."""
        self._groups_moved = True

    def settle(self) -> None:
        """`Chunk.settle` every chunk kept (the nodes of the latest text's chunks at its lines)."""
        for same in self._chunks.values():
            for chunk in same:
                if chunk.lag:
                    _move(chunk, chunk.first)

    def _parse_from(
        self,
        text: str,
        lines: list[str],
        bounds: list[tuple[int, int]],
        i: int,
        done: list[Chunk],
        used: set[int],
    ) -> tuple[ParsedSource, list[Chunk] | None]:
        """``done`` parse and end where ``bounds[i]`` begins, and that chunk does not parse on its own.

        The chunks before it end where the tokenizer starts afresh, so Python's verdict on the whole
        text is its verdict on the text from there on (padded with newlines to keep line numbers)."""
        start = bounds[i][0]
        try:
            tree = _parse("\n" * start + "".join(lines[start:]))
        except SyntaxError as exc:
            return self._recover(text, lines, bounds, _issue_from(exc, lines), used)
        except (ValueError, MemoryError, RecursionError):
            return self._parse_whole(text, lines, bounds, used)
        rest = _group(tree.body, lines, bounds[i:])
        if rest is None:
            return self._parse_whole(text, lines, bounds, used)
        return self._done(text, lines, [*done, *rest])

    def _parse_whole(
        self, text: str, lines: list[str], bounds: list[tuple[int, int]], used: set[int]
    ) -> tuple[ParsedSource, list[Chunk] | None]:
        try:
            tree = _parse(text)
        except SyntaxError as exc:
            return self._recover(text, lines, bounds, _issue_from(exc, lines), used)
        except (ValueError, MemoryError, RecursionError) as exc:
            return self._recover(text, lines, bounds, SyntaxIssue(1, 0, f"cannot parse: {exc}"), used)
        chunks = _group(tree.body, lines, bounds)
        if chunks is None:
            return ParsedSource(text, lines, tree), None
        self._keep(chunks)
        return ParsedSource(text, lines, tree), chunks

    def _recover(
        self, text: str, lines: list[str], bounds: list[tuple[int, int]], issue: SyntaxIssue, used: set[int]
    ) -> tuple[ParsedSource, list[Chunk]]:
        """The recovery of `parse_source`: every `_chunk_starts` piece that parses on its own."""
        used.clear()
        chunks = [self._reuse(lines, first, end, used, None) for first, end in bounds]
        self._keep(chunks)
        body = [stmt for chunk in chunks for stmt in chunk.body or []]
        skipped = [(c.first + 1, c.end) for c in chunks if c.body is None]
        return ParsedSource(text, lines, ast.Module(body=body, type_ignores=[]), issue, skipped), chunks


_POSITIONED: dict[type[ast.AST], bool] = {}


def _move(chunk: Chunk, first: int) -> None:
    """Move the chunk to ``first`` and its nodes with it (those lagging too)."""
    delta = first - chunk.first + chunk.lag
    chunk.end += first - chunk.first
    chunk.first = first
    chunk.lag = 0
    if not delta:
        return
    for node in chunk.index.nodes:
        kind = type(node)
        positioned = _POSITIONED.get(kind)
        if positioned is None:
            positioned = _POSITIONED[kind] = "lineno" in kind._attributes
        if positioned:
            node.lineno += delta  # type: ignore[attr-defined]
            end = getattr(node, "end_lineno", None)
            if end is not None:
                node.end_lineno = end + delta  # type: ignore[attr-defined]


def parse_chunk(first: int, end: int, text: str) -> Chunk:
    """The chunk of ``text``, the file's lines ``first`` to ``end`` (0-based, end excluded)."""
    try:
        tree = _parse(text)
    except _PARSE_ERRORS:
        return Chunk(first, end, text, None)
    chunk = Chunk(0, end - first, text, tree.body)
    _move(chunk, first)  # the nodes get their line numbers in the file
    return chunk


def _first_line(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)]) - 1


def _group(stmts: list[ast.stmt], lines: list[str], bounds: list[tuple[int, int]]) -> list[Chunk] | None:
    """Chunks of statements parsed together: `_chunk_starts` pieces merged where a statement spans several."""
    firsts = {_first_line(stmt) for stmt in stmts}
    cuts = [first for first, _ in bounds if first in firsts]
    if not stmts or not cuts or _first_line(stmts[0]) < cuts[0]:
        return None
    ends = [*cuts[1:], bounds[-1][1]]
    chunks: list[Chunk] = []
    position = 0
    for first, end in zip(cuts, ends, strict=True):
        body: list[ast.stmt] = []
        while position < len(stmts) and _first_line(stmts[position]) < end:
            body.append(stmts[position])
            position += 1
        chunks.append(Chunk(first, end, "".join(lines[first:end]), body))
    return chunks
