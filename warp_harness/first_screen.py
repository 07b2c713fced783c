"""The first screen of a large file judged from its first statements alone, before the rest is parsed.

A file never analysed gets its first diagnostics from the start-up process (`server/start_up_process.py`):
the records of the kernels starting on its first screen, then the whole. Parsing and modelling the whole
of newton's 10k-line steel solver takes ~100 ms of CPU before any kernel can be judged; the statements up
to the end of the first screen take a few. So the text is cut at a top-level statement starting after the
first screen (`slice_end`), the slice alone is parsed and modelled, and the kernel rules run on its kernels
there (`engine.first_screen_records`), only where the rest of the text cannot change what they say.

Never a false alarm: a kernel's records depend on its own text and on what the model says of the names it
reads (imports, constants, structs, Warp functions, other kernels), besides a few module-wide scans. The
rest is scanned as text, not parsed (`_Rest`): the names it may bind (every ``def`` and ``class`` name at
any depth, every name on an ``import``, ``global`` or ``nonlocal`` line, and what its top-level statements
other than definitions store, those parsed one by one: a few small statements). Nothing is said early when
a name the first screen's kernels read (their statements' identifiers, and those of the slice's statements
binding them, transitively) may be bound below (WH045 would call a name defined below unassigned, WH003
would miss a redefined function), when the rest mentions a kernel's factory (its calls give the sizes), or
a kernel of the first screen while it may launch one, holds a file-wide suppression or a star import, or
when a rule reads a module-wide scan the rest may feed (module options with ``max_unroll`` or ``block_dim``
below; builtins registered below: `_SliceContext`).
"""

from __future__ import annotations

import ast
import keyword
import re
import unicodedata
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TYPE_CHECKING

from warp_harness.model.source import _CONTINUATION_PREFIXES, _DEFINITIONS, _chunk_starts
from warp_harness.rules.base import Fact, RuleContext

if TYPE_CHECKING:
    from warp_harness.builtins import BuiltinTable
    from warp_harness.config import Settings
    from warp_harness.model.index import NodeIndex
    from warp_harness.model.kernel import KernelDef
    from warp_harness.model.module import ModuleModel
    from warp_harness.record import Record

# the most lines a slice holds (the statement the first screen ends in may be a long class: then no slice)
MAX_SLICE_LINES = 2_000
# the most pieces (`_pieces`) one top-level statement of the rest may be made of (a string with lines at
# column 0): beyond it, nothing is said early
MAX_PIECES = 16

_WORD = re.compile(r"[^\W\d]\w*")
_GAP = r"(?:[ \t\f]|\\\r?\n)"  # blanks, and a backslash's line break
# the statements that bind a name below the top level: a definition starts a line; an import or a
# declaration may also follow a ``;`` or ``:`` (``try: import x``). Found with `str.find` (C speed), each
# occurrence then looked at: a regular expression is tried at every line or character (~10 ms here).
_BINDING_KEYWORDS = ("def", "class", "import", "from", "global", "nonlocal")
_DEFINED_NAME = re.compile(rf"{_GAP}+([^\W\d]\w*)")
# what follows ``global`` / ``nonlocal`` in such a statement, to its end: names and commas only
_DECLARED_NAMES = re.compile(rf"{_GAP}+([^\W\d]\w*(?:{_GAP}*,{_GAP}*[^\W\d]\w*)*){_GAP}*(?:[;#\r\n]|$)")
_STAR = re.compile(r"[\s(\\]*\*")  # after ``import``: a star import
_LINE_START = re.compile(r"\n[^ \t#\r\n\f]")
# characters `str.splitlines` breaks lines at but Python's tokenizer does not (a lone carriage return too),
# each looked for with `in` (C speed; a regular expression's character class is tried at every character)
_ODD_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\0")
_ODD_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")
# the text read for the slice's lines: enough for `MAX_SLICE_LINES` of most files
MAX_SLICE_CHARS = 64 * 1024
# calls that may add a name to Warp's module (`rules/wh004_builtin_call.py`, `_registrations`)
_REGISTERING = ("add_builtin", "register_builtin", "setattr")
# what the module options a rule reads are read from (`Fact.MODULE_OPTIONS`: WH015)
_OPTIONS = ("max_unroll", "block_dim")
_FILE_SUPPRESSION = "ignore-file"
# what follows an attribute assigned to (``wp.name = ...``, ``+=``, ``: T = ...``; over-approximated)
_STORED = r"[\s)\]\\]*(?:(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)|:(?!=))"


class _Unsure(Exception):
    """The slice cannot tell what the whole would."""


def slice_ends(lines: list[str], last_line: int) -> Iterator[int]:
    """The numbers of lines of the slices that hold every statement starting on lines 1 to ``last_line``:
    each top-level statement starting after them (`model.source._chunk_starts`: a decorator with lines at
    column 0 may be taken for one; the first slice that parses is the one), up to `MAX_SLICE_LINES`."""
    starts = (start for start in _chunk_starts(lines[: MAX_SLICE_LINES + 1]) if start >= last_line)
    for _, start in zip(range(MAX_PIECES), starts, strict=False):
        yield start


def first_screen_records(
    text: str, path: str, settings: Settings, table: BuiltinTable, last_line: int
) -> list[Record] | None:
    """The records of the kernels and Warp functions starting on lines 1 to ``last_line`` of ``text``, as
    the analysis of the whole text gives them (`engine.first_screen_records` on the whole), from a parse of
    the statements up to the first screen's end only; None where the rest might change them (see above),
    or where no slice parses (a syntax error: the whole tells)."""
    from warp_harness import engine
    from warp_harness.model.module import build_model
    from warp_harness.model.source import ParsedSource

    lines = text[:MAX_SLICE_CHARS].splitlines(keepends=True)
    if len(text) > MAX_SLICE_CHARS:
        lines.pop()  # maybe cut short
    prefix = "".join(lines)
    odd = _ODD_BREAKS if prefix.isascii() else _ODD_BREAKS + _ODD_UNICODE_BREAKS
    # the slice's lines numbered as Python numbers them; below, a lone carriage return starts a line
    if any(c in prefix for c in odd) or ("\r" in text and text.count("\r") != text.count("\r\n")):
        return None
    for end in slice_ends(lines, last_line):
        head = "".join(lines[:end])
        tree = _parsed(head)
        if tree is not None:
            break
    else:
        return None
    rest = _Rest(text[len(head) :])
    if _FILE_SUPPRESSION in rest.text:
        return None
    parsed = ParsedSource(head, lines[:end], tree)  # as `parse_source` makes it of a text that parses
    model = build_model(head, path, table, parsed)
    try:
        shown = [k for k in model.kernels if _first_line(k.node) <= last_line]
        if not shown:
            return []
        # what a launch of theirs passes may be told by host code anywhere (array dtypes, shapes)
        if any(model.launches_of(kernel) for kernel in shown if kernel.is_kernel):
            return None
        _check_names(model, shown, rest)
        context = partial(_SliceContext, rest=rest)
        return engine.first_screen_records(parsed, path, settings, table, model, last_line, None, context)
    except _Unsure:
        return None


def _check_names(model: ModuleModel, shown: list[KernelDef], rest: _Rest) -> None:
    """Raise `_Unsure` where the rest may change what the model says about the shown kernels."""
    body = model.tree.body
    tops = [_top_statement(body, kernel.node) for kernel in shown]
    read: set[str] = set()
    for stmt in body:  # what the slice's statements other than definitions say may feed any kernel
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            read |= _identifiers(stmt)
    for top in tops:
        read |= _identifiers(top)
    # the definitions of the slice a name read names, and what they read, transitively
    definitions = [s for s in body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    taken = {id(top) for top in tops}
    grown = True
    while grown:
        grown = False
        for stmt in definitions:
            if id(stmt) not in taken and stmt.name in read:
                taken.add(id(stmt))
                read |= _identifiers(stmt)
                grown = True
    if read & rest.bound:
        raise _Unsure(sorted(read & rest.bound))
    for kernel, top in zip(shown, tops, strict=True):
        # a factory's calls below give its kernels' sizes (`model.tiles`); a launch below, their launches
        if any(rest.mentions(name) for name in _enclosing_names(top, kernel.node)):
            raise _Unsure(kernel.name)
        if kernel.is_kernel and rest.may_launch and rest.mentions(kernel.name):
            raise _Unsure(kernel.name)


def _top_statement(body: list[ast.stmt], node: ast.AST) -> ast.stmt:
    """The top-level statement of ``body`` that holds ``node``."""
    line = getattr(node, "lineno", 0)
    for stmt in body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            return stmt
    raise _Unsure("no statement")


def _enclosing_names(top: ast.stmt, node: ast.AST) -> list[str]:
    """The names of the functions around ``node`` inside ``top`` (its factories), outermost first."""
    names: list[str] = []
    current: ast.AST = top
    while current is not node:
        if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(current.name)
        line = getattr(node, "lineno", 0)
        inner = [
            child
            for child in ast.iter_child_nodes(current)
            if isinstance(child, ast.stmt) and child.lineno <= line <= (child.end_lineno or child.lineno)
        ]
        if not inner:
            raise _Unsure("not found")
        current = inner[0]
    return names


def _identifiers(node: ast.AST) -> set[str]:
    """Every identifier in ``node`` (names, attributes, parameters, keywords, imported names), and the
    words of its strings but docstrings (a string annotation names a type)."""
    found: set[str] = set()
    docstrings: set[int] = set()
    add = found.add
    for sub in ast.walk(node):
        kind = type(sub)
        if kind is ast.Name:
            add(sub.id)  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            add(sub.attr)  # type: ignore[attr-defined]
        elif kind is ast.Constant:
            value = sub.value  # type: ignore[attr-defined]
            if type(value) is str and id(sub) not in docstrings:
                found.update(_WORD.findall(value))
        elif kind is ast.arg or kind is ast.keyword:
            if sub.arg:  # type: ignore[attr-defined]
                add(sub.arg)  # type: ignore[attr-defined]
        elif kind in _DEFINITION_KINDS:
            if kind is not ast.Module:
                add(sub.name)  # type: ignore[attr-defined]
            body = sub.body  # type: ignore[attr-defined]
            if body and type(body[0]) is ast.Expr and type(body[0].value) is ast.Constant:
                docstrings.add(id(body[0].value))
        elif kind in _NAMING_KINDS:
            for field in _NAMING_KINDS[kind]:
                value = getattr(sub, field, None)
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str):
                        found.update(item.split("."))
    return found


_DEFINITION_KINDS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module})
# the other nodes that hold identifiers, and where
_NAMING_KINDS: dict[type[ast.AST], tuple[str, ...]] = {
    ast.alias: ("name", "asname"),
    ast.ImportFrom: ("module",),
    ast.Global: ("names",),
    ast.Nonlocal: ("names",),
    ast.ExceptHandler: ("name",),
    ast.MatchAs: ("name",),
    ast.MatchStar: ("name",),
    ast.MatchMapping: ("rest",),
    ast.MatchClass: ("kwd_attrs",),
}


def _first_line(node: ast.FunctionDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


@dataclass
class _Rest:
    """The text below the slice, read as text: what it may bind, mention, launch or register."""

    raw: str
    _mentions: dict[str, bool] = field(default_factory=dict)
    # the modules its imports name (read with `bound`)
    imported_modules: set[str] = field(default_factory=set)

    @cached_property
    def text(self) -> str:
        """As Python reads its identifiers (NFKC-normalised)."""
        raw = self.raw
        if raw.isascii() or unicodedata.is_normalized("NFKC", raw):
            return raw
        return unicodedata.normalize("NFKC", raw)

    @cached_property
    def bound(self) -> frozenset[str]:
        """Every name the rest may bind, at any depth (over-approximated); `_Unsure` where a top-level
        statement cannot be read."""
        text = self.text
        names: set[str] = set()
        if any(_STAR.match(text, at + 6) for at in _occurrences(text, "import")):
            raise _Unsure("a star import")
        for word in _BINDING_KEYWORDS:
            for at in _occurrences(text, word):
                line_start = text.rfind("\n", 0, at) + 1
                before = text[line_start:at].rstrip(" \t\f")
                if before.endswith("async"):
                    before = before[:-5].rstrip(" \t\f")
                end = at + len(word)
                if word in ("def", "class"):
                    if not before and (defined := _DEFINED_NAME.match(text, end)) is not None:
                        names.add(defined.group(1))
                elif before and not before.endswith((";", ":")):
                    continue
                elif word in ("global", "nonlocal"):
                    if (declared := _DECLARED_NAMES.match(text, end)) is not None:
                        names.update(_WORD.findall(declared.group(1)))
                else:
                    names.update(self._imported(text, at))
        for stmt in _statements(text):
            names.update(_bindings(stmt))
        return frozenset(name for name in names if not keyword.iskeyword(name))

    def _imported(self, text: str, at: int) -> Iterator[str]:
        """The names the import statement at ``at`` binds (where it does not parse as one, as in a
        docstring's prose or a line cut short: every word after ``import``); the modules it names go to
        `imported_modules`."""
        statement = text[at : _logical_end(text, at)]
        tree = _parsed(statement)
        if tree is None or not tree.body or not isinstance(tree.body[0], ast.Import | ast.ImportFrom):
            after = statement.find("import")
            if after < 0:  # ``from`` in prose: no import
                return
            words = _WORD.findall(statement[after:])
            self.imported_modules.update(words)
            yield from words
            return
        for stmt in tree.body:
            if not isinstance(stmt, ast.Import | ast.ImportFrom):
                yield from _bindings(stmt)
                continue
            if isinstance(stmt, ast.ImportFrom) and stmt.module:
                self.imported_modules.add(stmt.module)
            for alias in stmt.names:
                if alias.name == "*":
                    raise _Unsure("a star import")
                if isinstance(stmt, ast.Import):
                    self.imported_modules.add(alias.name)
                yield alias.asname or alias.name.split(".")[0]

    def mentions(self, name: str) -> bool:
        """Whether the rest holds the identifier ``name`` (strings and comments too)."""
        found = self._mentions.get(name)
        if found is None:
            found = self._mentions[name] = next(_occurrences(self.text, name), None) is not None
        return found

    @cached_property
    def may_launch(self) -> bool:
        from warp_harness.model.launches import may_name_launch

        return may_name_launch(self.raw)

    @cached_property
    def sets_options(self) -> bool:
        """Whether the rest may set a module option a rule reads (`Fact.MODULE_OPTIONS`)."""
        return any(word in self.text for word in _OPTIONS)

    def may_register(self, warp_modules: Iterable[str]) -> bool:
        """Whether the rest may add a name to Warp's module (`Fact.REGISTRATIONS`): a registering call, an
        import naming Warp, or an assignment to an attribute of a name of Warp's module."""
        text = self.text
        self.bound  # noqa: B018 (reads the imports)
        if any(word in text for word in _REGISTERING) or any(
            module.split(".")[0] == "warp" for module in self.imported_modules
        ):
            return True
        aliases = "|".join(re.escape(m) for m in sorted(warp_modules))
        if not aliases:
            return False
        store = (
            rf"(?<![\w.])(?:{aliases})\s*\.\s*\w+[\s)\]\\]*(?:(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)|:(?!=))"
        )
        return re.search(store, text) is not None


def _occurrences(text: str, word: str) -> Iterator[int]:
    """Where ``word`` stands in ``text`` as an identifier (no letter, digit, ``_`` or ``.`` before it)."""
    at = text.find(word)
    size = len(word)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + size : at + size + 1]
        if not (before.isalnum() or before in "_.") and not (after.isalnum() or after == "_"):
            yield at
        at = text.find(word, at + size)


def _logical_end(text: str, at: int) -> int:
    """Where the line of ``text`` holding ``at`` ends, with the lines its open brackets or a backslash
    carry on to (strings are not told apart: a longer line only has more names)."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    for _ in range(1000):
        if end < 0:
            return len(text)
        line = text[start:end]
        depth = sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        if depth <= 0 and not line.rstrip("\r").endswith("\\"):
            return end
        end = text.find("\n", end + 1)
    raise _Unsure("a line too long")


def _statements(text: str) -> Iterator[ast.AST]:
    """The parsed top-level statements of ``text`` other than definitions (`_DEFINITIONS`), each made of
    the pieces that parse together: a piece that parses neither alone nor after the definition before it
    nor with the pieces after it is `_Unsure`."""
    pieces = _pieces(text)
    i = 0
    previous_definition: str | None = None
    while i < len(pieces):
        piece = pieces[i]
        if piece.startswith(_DEFINITIONS):
            previous_definition = piece
            i += 1
            continue
        tree = _parsed(piece)
        if tree is None and previous_definition is not None:
            # a piece of the definition before it (a string in it with lines at column 0)
            together = _parsed(previous_definition + piece)
            if together is not None and len(together.body) == 1 and _is_definition(together.body[0]):
                previous_definition += piece
                i += 1
                continue
        taken = 1
        while tree is None and taken < MAX_PIECES and i + taken < len(pieces):
            piece += pieces[i + taken]
            taken += 1
            tree = _parsed(piece)
        if tree is None:
            raise _Unsure("a statement below does not parse")
        yield tree
        previous_definition = None
        i += taken


def _is_definition(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)


def _pieces(text: str) -> list[str]:
    """``text`` cut where a line starts a top-level statement (`model.source._chunk_starts`, on offsets)."""
    starts: list[int] = []
    after_decorator = False
    for match in _LINE_START.finditer("\n" + text):
        at = match.start()  # the line's offset in ``text``
        if text.startswith(_CONTINUATION_PREFIXES, at):
            after_decorator = False
            continue
        if not after_decorator:
            starts.append(at)
        after_decorator = text.startswith("@", at)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _parsed(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _bindings(tree: ast.AST) -> Iterator[str]:
    """The names ``tree`` may bind, at any depth (and the attributes it assigns: ``wp.<name> = ...``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute) and not isinstance(node.ctx, ast.Load):
            yield node.id if isinstance(node, ast.Name) else node.attr
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    raise _Unsure("a star import")
                yield alias.asname or alias.name.split(".")[0]
        elif isinstance(node, ast.Global | ast.Nonlocal):
            yield from node.names
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest
        elif isinstance(node, ast.arg):
            yield node.arg


@dataclass(eq=False)
class _SliceContext(RuleContext):
    """The rules' context on the slice: a module-wide scan the rest may feed is `_Unsure`."""

    rest: _Rest | None = None

    def _check(self, fact: Fact) -> None:
        rest = self.rest
        assert rest is not None
        if fact is Fact.MODULE_OPTIONS and rest.sets_options:
            raise _Unsure(fact)
        if fact is Fact.REGISTRATIONS:
            imports = self.model.imports
            if rest.may_register(local for local, module in imports.modules.items() if module == "warp"):
                raise _Unsure(fact)
        if fact is Fact.LAUNCHES and rest.may_launch:
            raise _Unsure(fact)

    def module_nodes(self, fact: Fact) -> NodeIndex:
        self._check(fact)
        return super().module_nodes(fact)

    def module_body(self, fact: Fact) -> list[ast.stmt]:
        self._check(fact)
        return super().module_body(fact)

    def require(self, *facts: Fact) -> None:
        for fact in facts:
            self._check(fact)
        super().require(*facts)


__all__ = ["first_screen_records", "slice_ends"]
