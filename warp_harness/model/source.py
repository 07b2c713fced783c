"""Reading and parsing a source file without ever failing.

A syntax error becomes one `SyntaxIssue`; the rest of the file is still parsed chunk by
chunk (top-level statements), so kernels above and below a half-typed line keep their
diagnostics while the user types.
"""

from __future__ import annotations

import ast
import gc
import io
import threading
import tokenize
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple

from warp_harness.model import parse_freezing

# A file larger than this is not analysed (it is reported instead); kernels live in source files
# written by people, and the language server must stay responsive.
MAX_SOURCE_BYTES = 8 * 1024 * 1024

_CONTINUATION_PREFIXES = ("else", "elif", "except", "finally", "case", ")", "]", "}")


@dataclass(frozen=True)
class SyntaxIssue:
    line: int
    col: int
    message: str
    end_line: int | None = None
    end_col: int | None = None


@dataclass
class ParsedSource:
    text: str
    lines: list[str]
    tree: ast.Module
    syntax_error: SyntaxIssue | None = None
    # top-level chunks that could not be parsed: (first line, last line), 1-based inclusive
    skipped: list[tuple[int, int]] = field(default_factory=list)
    # whether `lines` are the tokenizer's lines (no form feed, vertical tab or other line separator
    # that `str.splitlines` splits at and Python does not); None: not asked yet
    _plain_lines: bool | None = field(default=None, repr=False, compare=False)

    def node_text(self, node: ast.AST) -> str:
        """The source text of ``node``: what ``ast.get_source_segment`` returns (``ast.unparse`` for a
        node without a position), sliced from ``lines`` instead of re-splitting the whole text."""
        first: int | None = getattr(node, "lineno", None)
        last: int | None = getattr(node, "end_lineno", None)
        col: int | None = getattr(node, "col_offset", None)
        end_col: int | None = getattr(node, "end_col_offset", None)
        lines = self.lines
        if self._plain_lines is None:
            self._plain_lines = not any(c in self.text for c in _OTHER_LINE_BREAKS)
        if (
            not self._plain_lines
            or first is None
            or last is None
            or col is None
            or end_col is None
            or not 0 < first <= last <= len(lines)
        ):
            segment = ast.get_source_segment(self.text, node)
            return segment if segment is not None else ast.unparse(node)
        text = lines[first - 1 : last]
        if all(line.isascii() for line in text):  # byte columns are character columns
            if first == last:
                return text[0][col:end_col]
            return text[0][col:] + "".join(text[1:-1]) + text[-1][:end_col]
        chunk = [line.encode("utf-8") for line in text]
        chunk[-1] = chunk[-1][:end_col]
        chunk[0] = chunk[0][col:]
        return b"".join(chunk).decode("utf-8", errors="replace")


# characters `str.splitlines` breaks lines at besides \n and \r (Python's tokenizer does not)
_OTHER_LINE_BREAKS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def may_spell(text: str, *words: str) -> bool:
    """Whether an identifier of ``text`` may be one of ``words``. Python reads identifiers NFKC-normalised
    (``import ｗarp`` imports warp), so a text that is not ASCII may spell any of them in other letters."""
    return not text.isascii() or any(word in text for word in words)


def decode_source(data: bytes) -> tuple[str | None, SyntaxIssue | None]:
    """Decode file bytes the way Python does (PEP 263 coding line, BOM, default UTF-8)."""
    if len(data) > MAX_SOURCE_BYTES:
        return None, SyntaxIssue(
            1,
            0,
            f"file is {len(data) // (1024 * 1024)} MiB; files over "
            f"{MAX_SOURCE_BYTES // (1024 * 1024)} MiB are not analysed",
        )
    if b"\x00" in data:
        offset = data.index(b"\x00")
        line = data.count(b"\n", 0, offset) + 1
        return None, SyntaxIssue(line, 0, "source code cannot contain null bytes (is this a binary file?)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "coding" in data[:200].decode("latin-1"):
            return None, SyntaxIssue(1, 0, f"invalid encoding declaration: {exc.msg}")
        encoding = "utf-8"  # tokenize complains about undecodable bytes in the first two lines
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        start = getattr(exc, "start", 0)
        line = data.count(b"\n", 0, start) + 1
        return None, SyntaxIssue(line, 0, f"file is not valid {encoding}: {exc}")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text, None


def _issue_from(exc: SyntaxError, lines: list[str]) -> SyntaxIssue:
    line = exc.lineno or 1
    col = max((exc.offset or 1) - 1, 0)
    if line > len(lines):
        line = max(len(lines), 1)
        col = len(lines[-1]) if lines else 0
    end_line = getattr(exc, "end_lineno", None)
    end_col = getattr(exc, "end_offset", None)
    return SyntaxIssue(
        line,
        col,
        exc.msg,
        end_line if end_line and end_line >= line else None,
        (end_col - 1) if end_col and end_line == line and end_col - 1 > col else None,
    )


def _chunk_starts(lines: list[str]) -> list[int]:
    """0-based indices of lines that start a new top-level statement (decorators stay with their def)."""
    starts: list[int] = []
    previous_was_decorator = False
    for index, line in enumerate(lines):
        if not line or line[0] in " \t#\r\n\f":
            continue
        if line.startswith(_CONTINUATION_PREFIXES):
            previous_was_decorator = False
            continue
        if not previous_was_decorator:
            starts.append(index)
        previous_was_decorator = line.startswith("@")
    return starts


def _parse_chunks(text: str, lines: list[str]) -> tuple[ast.Module, list[tuple[int, int]]]:
    body: list[ast.stmt] = []
    skipped: list[tuple[int, int]] = []
    starts = _chunk_starts(lines)
    bounds = list(zip(starts, [*starts[1:], len(lines)][: len(starts)], strict=True))
    for first, end in bounds:
        chunk = "".join(lines[first:end])
        try:
            tree = _parse(chunk)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            skipped.append((first + 1, end))
            continue
        ast.increment_lineno(tree, first)
        body.extend(tree.body)
    return ast.Module(body=body, type_ignores=[]), skipped


def _parse_quietly(text: str) -> ast.Module:
    # "invalid escape sequence" and friends are the user's business, not noise on our stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(text)


_shallow_parser: ThreadPoolExecutor | None = None
_shallow_parser_lock = threading.Lock()


def _parse(text: str) -> ast.Module:
    try:
        return _parse_quietly(text)
    except RecursionError:
        # ast.parse builds its Python objects within the recursion limit *less the caller's stack
        # depth*: a deeply nested expression parsed in the language server (deep in its event loop)
        # but not in `check`, or the other way round. Re-parsed on a thread of our own, whose stack
        # is always shallower than any caller's, the verdict is the same whoever asks.
        global _shallow_parser
        with _shallow_parser_lock:
            if _shallow_parser is None:
                _shallow_parser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wh-parse")
        return _shallow_parser.submit(_parse_quietly, text).result()


def parses_cleanly(text: str) -> bool:
    """True when `parse_source` finds no syntax issue in ``text``, told without building its tree:
    ``symtable`` parses with the same parser but keeps no AST objects (~0.7x the time of ``ast.parse``).
    False when it raises: a syntax error, or one of the few errors only a symbol table sees (``nonlocal``
    at module level); ask `parse_source` then."""
    import symtable  # only here: a check that analyses no such file does not import it

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            symtable.symtable(text, "<check>", "exec")
    except Exception:  # whatever it is, parse_source tells
        return False
    return True


def parse_source(text: str) -> ParsedSource:
    parsed = _parse_source(text)
    if parse_freezing.active:
        gc.freeze()
    return parsed


# a text from this size is parsed in pieces of about this much (`parse_in_pieces`)
PIECE_MIN_CHARS = 65_536
PIECE_CHARS = 32_768
# from this size a text's tree shares its line numbers (`_share_line_numbers`)
SHARED_LINE_NUMBERS_CHARS = 1_000_000
_DEFINITIONS = ("def ", "class ", "@", "async def ")


class NotInPieces(Exception):
    """`top_level_pieces` cannot cut the text: it is small, has a line break Python does not count, or a
    piece does not parse (a syntax error, ...). Parse it whole."""


class Piece(NamedTuple):
    """Top-level statements of a text parsed in pieces; ``continues``: they are the rest of the body of the
    class that ended the piece before (one large class is cut between its methods)."""

    statements: list[ast.stmt]
    continues: bool = False


# what follows a line's indentation when no statement starts there
_NOT_A_STATEMENT = ("", " ", "\t", "\r", "\n", "#")


def _class_cuts(lines: list[str], first: int, end: int) -> list[int]:
    """Where the top-level chunk ``lines[first:end]``, a class, may be cut: before its methods (the lines
    starting a definition at the indentation of the first one; `top_level_pieces` checks it is the body's),
    about every `PIECE_CHARS`."""
    header = first
    while header < end and lines[header].startswith("@"):
        header += 1
    if header == end or not lines[header].startswith("class "):
        return []
    indent: str | None = None
    cuts: list[int] = []
    size = 0
    previous_was_decorator = False
    for index in range(header + 1, end):
        line = lines[index]
        size += len(line)
        stripped = line.lstrip(" \t")
        if indent is None:
            if stripped.startswith(_DEFINITIONS) and stripped != line:
                indent = line[: len(line) - len(stripped)]
            else:
                continue
        if not line.startswith(indent) or line[len(indent) : len(indent) + 1] in _NOT_A_STATEMENT:
            continue
        if stripped.startswith(_DEFINITIONS):
            if size >= PIECE_CHARS and not previous_was_decorator:
                cuts.append(index)
                size = 0
            previous_was_decorator = stripped.startswith("@")
        else:
            previous_was_decorator = False
    return cuts


def top_level_pieces(text: str, lines: list[str] | None = None) -> Iterator[Piece]:
    """The top-level statements of ``text`` (``lines``: its lines, kept ends), parsed in runs of about
    `PIECE_CHARS` (`parse_in_pieces`), positions being the whole text's; a larger class comes in runs of
    its methods. Each run comes as soon as parsed and is no longer held here once the next one is asked
    for, so a caller dropping them never holds the whole tree. Raises `NotInPieces` (maybe after some
    runs) when the text must be parsed whole.

    A run is cut before a line starting a definition (a line a string spans rarely does); a cut inside a
    statement (a string, brackets) leaves a run that does not parse, which then goes on to the next cut.
    A run continuing a class is parsed under a stand-in ``class _:`` line in place of the line before it;
    a class is cut only at the indentation of its body's first statement."""
    if len(text) < PIECE_MIN_CHARS or any(c in text for c in _OTHER_LINE_BREAKS):
        raise NotInPieces
    if lines is None:
        lines = text.splitlines(keepends=True)
    # (where a run ends, whether the next one continues a class, where that class ends)
    bounds: list[tuple[int, bool, int]] = []
    size = 0
    starts = _chunk_starts(lines)
    # where each line starts in the text: a chunk's size without a sum over its lines (a third of this
    # function's time went to those sums over newton)
    offsets = list(accumulate(map(len, lines), initial=0))
    for first, end in zip(starts, [*starts[1:], len(lines)], strict=True):
        chunk = offsets[end] - offsets[first]
        cuts = _class_cuts(lines, first, end) if chunk > 2 * PIECE_CHARS else []
        if cuts:
            bounds.extend((cut, True, end) for cut in cuts)
            if end < len(lines):
                bounds.append((end, False, end))
            size = 0
            continue
        size += chunk
        if size >= PIECE_CHARS and end < len(lines) and lines[end].startswith(_DEFINITIONS):
            bounds.append((end, False, end))
            size = 0
    bounds.append((len(lines), False, len(lines)))
    first = 0
    inside = False  # whether the run from `first` continues a class
    uncut = 0  # a class whose cuts proved wrong is not cut before this line
    for end, continued, class_end in bounds:
        if end < uncut:
            continue
        padding = "\n" * (first - 1) + "class _:\n" if inside else "\n" * first
        try:
            body = _parse(padding + "".join(lines[first:end])).body
        except SyntaxError:
            if end < len(lines):
                continue  # cut inside a statement (a string's line that looks like a definition)
            raise NotInPieces from None
        except (ValueError, MemoryError, RecursionError):
            raise NotInPieces from None
        # a run ending inside a class it starts (not one continuing it): is the cut in the class's body?
        if continued and (not inside or len(body) > 1) and not _cut_in_body(body, lines, end):
            uncut = class_end
            continue
        first = end
        if inside:  # the stand-in class, and what follows it when the run went on past the class's end
            rest = body[1:]
            yield Piece(body.pop(0).body, True)  # type: ignore[attr-defined]
            if rest:
                yield Piece(rest, False)
            del rest
        else:
            yield Piece(body, False)
        del body  # not alive while the next run is parsed
        inside = continued


def _cut_in_body(body: list[ast.stmt], lines: list[str], cut: int) -> bool:
    """Whether a run ending with a class, ``body``, ends between two statements of that class's body: the
    line at ``cut`` is indented as the body's first statement (a run parsing whole ends between statements;
    at another indentation, it may end inside one of the methods)."""
    cls = body[-1] if body else None
    if not isinstance(cls, ast.ClassDef) or not cls.body:
        return False
    head = cls.body[0]
    indent = lines[head.lineno - 1][: head.col_offset]
    line = lines[cut]
    return (
        not indent.strip(" \t")
        and line.startswith(indent)
        and line[len(indent) : len(indent) + 1] not in _NOT_A_STATEMENT
    )


def parse_in_pieces(text: str) -> ParsedSource:
    """`parse_source` of ``text`` (the same tree), a large text parsed piece by piece: `ast.parse` holds
    its C syntax tree next to the Python one it builds, as large again (382 kB of newton's steel kernels:
    +38 MB at once for 17.5 MB kept), and that memory, freed to malloc, is not reused for Python objects.
    A launch target is parsed while the launching file's tree is alive: that moment was the peak memory
    of a check (the engine parses the checked file this way too). The pieces are runs of top-level
    statements (`top_level_pieces`), each padded with the newlines before it so that positions are the
    whole text's; anything unexpected (a syntax error, a line break Python does not count) parses the
    text whole."""
    if len(text) < PIECE_MIN_CHARS or any(c in text for c in _OTHER_LINE_BREAKS):
        return parse_source(text)
    lines = text.splitlines(keepends=True)
    body: list[ast.stmt] = []
    try:
        for statements, continues in top_level_pieces(text, lines):
            if continues:  # the rest of the class ending the body so far
                cls = body[-1]
                assert isinstance(cls, ast.ClassDef)
                cls.body.extend(statements)
                cls.end_lineno = statements[-1].end_lineno
                cls.end_col_offset = statements[-1].end_col_offset
            else:
                body.extend(statements)
    except NotInPieces:
        body.clear()
        return parse_source(text)
    if len(text) >= SHARED_LINE_NUMBERS_CHARS:
        _share_line_numbers(body)
    parsed = ParsedSource(text, lines, ast.Module(body=body, type_ignores=[]))
    if parse_freezing.active:  # as `parse_source` does
        gc.freeze()
    return parsed


def _share_line_numbers(roots: list[ast.stmt]) -> None:
    """One int object per line number in the trees of ``roots``: the parser makes a new one for every
    ``lineno`` and ``end_lineno`` above 256 (CPython's small ints stop there), 3.1 of the 24.5 MiB of
    newton's 1.1 MB steel solver, whose tree sets the peak memory of the process checking it. Costs a
    walk (a third of the parse): done only for the largest texts."""
    from warp_harness.model.walk import walk

    shared: dict[int, int] = {}
    share = shared.setdefault
    for root in roots:
        for node in walk(root):
            fields = node.__dict__
            end = fields.get("end_lineno")
            if end is not None and end > 256:  # a node ends on or after its first line
                fields["end_lineno"] = share(end, end)
                line = fields["lineno"]
                if line > 256:
                    fields["lineno"] = share(line, line)


def _parse_source(text: str) -> ParsedSource:
    lines = text.splitlines(keepends=True)
    try:
        tree = _parse(text)
    except SyntaxError as exc:
        tree, skipped = _parse_chunks(text, lines)
        return ParsedSource(text, lines, tree, _issue_from(exc, lines), skipped)
    except (ValueError, MemoryError, RecursionError) as exc:
        # ValueError: e.g. NUL bytes in a str; RecursionError: absurdly nested expressions
        tree, skipped = _parse_chunks(text, lines)
        return ParsedSource(text, lines, tree, SyntaxIssue(1, 0, f"cannot parse: {exc}"), skipped)
    return ParsedSource(text, lines, tree)
