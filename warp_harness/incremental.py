"""Re-analysis after an edit, for the language server: the records of `engine.analyse_source`, fast.

Four caches, each exact:

- chunks (`model.chunks`): only top-level statements whose text changed are parsed again (moved ones
  are shifted in place), and the module's node index is the cached chunk indexes put end to end;
- units: a *unit* is a top-level ``@wp.kernel``, or a top-level function that only defines kernels (a
  kernel factory: ``def make(dtype): @wp.kernel def k(...): ...; return k``), whose chunk feeds none of
  the module-wide facts (`rules.base.Fact`) the rules declare they read (`Rule.reads`; imports, classes,
  other nested functions, dicts, launches, builtin registrations, assignments to ``wp.<name>``), and, for
  a factory, whose name no kernel or function mentions. What the rules say about a unit's kernels (and
  about the launch sites that certainly launch them) depends only on its own text, on the rest of the
  file (the *context*: every parsed chunk that is not a unit; of the undecorated host functions holding
  nothing a fact is read from, only those that launch the unit or that it names), on the names of the
  other units' kernels it mentions, and on the settings; that is its key. Records are kept with the lines
  they were computed at and moved with their chunks when lines are inserted or deleted elsewhere, the line
  numbers their texts quote too (`Record.quotes`: data, the texts rendered from it);
- the rest: records of every other kernel or function and of the other launch sites, keyed by the whole
  context, the names of the units and the settings.

- the last analysis (`_Snapshot`): a keystroke inside one unit's chunk that leaves it the same kernel
  (most keystrokes in a kernel body) is spliced into it: the text is compared with the last one (memcmp
  speed), only that chunk is parsed, the model is the last one with that kernel replaced
  (`module.with_kernel_replaced`), the other units' keys and records, the rest's records, the context's
  node index and what the rules computed once for the whole file (`RuleContext.once`) are kept, and the
  rules run on that kernel only: a cost that does not grow with the kernels the edit does not touch, but
  for a few copies of lists at C speed. Any other edit takes the way below.
  An edit that adds or deletes lines there (Enter, a deleted or pasted line) moves the later chunks'
  lines (`Chunk.shift`) and the records on them and the line numbers records quote (`_Shift`; not when a
  record quotes a line of the edited chunk),
  not their nodes: those lag (`Chunk.lag`) until the model is read (`_Settling`) or the chunk parser
  reuses them. While any lag, the rules see only the chunks the unit's records depend on (its key's),
  settled, and what they compute once is not kept.
  The records returned are the last ones updated (`_finish_splice`): the unit's taken out and put in
  again at their place in the order, the moved ones replaced, not every record finished again (only while
  finishing drops and changes none: no suppression comment, no conflicting spans, no severity override).

The rules run only on what missed, over a model whose ``kernels`` / ``launches`` list only those; the
engine (`engine.scoped_records`) calls a rule once per kernel or launch site of its declared `Scope` and
files each record under that item, and the records are put back together in the order a full run emits
them. Rules of scope MODULE run on the whole model every time. A chunk holding the marker text of a
fact (``max_unroll``) is context, never a unit. A rule that raises sends the text to the full analysis
(which reports it).
"""

from __future__ import annotations

import ast
import bisect
import gc
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import TYPE_CHECKING, TypeVar

from warp_harness.config import Settings
from warp_harness.engine import (
    Analysis,
    analyse_parsed,
    analyse_source,
    finish_records,
    first_screen_records,
    judged_findings,
    scoped_records,
    syntax_record,
)
from warp_harness.hardware import HardwareProfile, load_profile
from warp_harness.model import func_calls
from warp_harness.model.chunks import _ODD_BREAKS, Chunk, ChunkParser, parse_chunk
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import NodeIndex, body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel, build_model, with_kernel_replaced
from warp_harness.model.source import ParsedSource, _chunk_starts
from warp_harness.record import Location, Quotes, Record, Related, Stage
from warp_harness.rules import all_rules
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.suppressions import MARK, remember_scan

if TYPE_CHECKING:
    from warp_harness.builtins import BuiltinTable
    from warp_harness.model.project import ProjectIndex, ProjectView

UNIT_CACHE_SIZE = 1024  # besides the units of the document analysed last
DOCUMENT_CACHE_SIZE = 64
REST_CACHE_SIZE = 4
# how long reading a lagging model (another thread, during an analysis) waits to move its nodes
SETTLE_WAIT_S = 0.05
# `IncrementalAnalyser.analyse`'s early records: the last line of the first screen, and whom to hand them
Early = tuple[int, Callable[[list[Record]], None]]


@dataclass(frozen=True)
class _Facts:
    """What feeds the module-wide facts the rules declare they read (`rules.base.Fact`): a chunk holding
    any of it is context, never a unit."""

    nodes: tuple[type[ast.AST], ...]
    calls: frozenset[str]  # callees by name (``f(...)``, ``x.f(...)``)
    warp_calls: frozenset[str]  # ``wp.<name>(...)`` (a host function may launch: not these)
    warp_assignments: bool
    markers: tuple[str, ...]

    @classmethod
    def of(cls, rules: tuple[Rule, ...]) -> _Facts:
        # what the rules declare they read (`rules.base.ITEM_FACTS`: their items' facts among them)
        facts = sorted({f for rule in rules for f in rule.reads}, key=lambda f: f.name)
        nodes = tuple(dict.fromkeys(n for f in facts for n in f.value.nodes))
        launch = Fact.LAUNCHES.value.calls
        return cls(
            nodes,
            frozenset(c for f in facts if f is not Fact.LAUNCHES for c in f.value.calls),
            launch,
            any(f.value.warp_assignments for f in facts),
            tuple(f.value.marker for f in facts if f.value.marker),
        )


class _RuleFailed(Exception):
    """A rule raised: this text is analysed in full (which reports it)."""


class _Key:
    """A tuple with its hash computed once (the context is part of every unit's key)."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: tuple[object, ...]) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and (
            self.value is other.value or (self._hash == other._hash and self.value == other.value)
        )


# rule id -> (records of each of its kernels, records of each launch site it owns, in launch order)
_UnitRecords = dict[str, tuple[list[list[Record]], list[list[Record]]]]
# rule id -> (records by kernel node position, records by launch call position)
_PlacedRecords = dict[str, tuple[dict[tuple[int, int], list[Record]], dict[tuple[int, int], list[Record]]]]


@dataclass
class _Unit:
    """Kernels analysed together: those of one chunk of the text."""

    position: int  # in model.kernels, of its first kernel (the unit's number)
    kernels: list[tuple[int, KernelDef]]  # with their positions in model.kernels
    chunk: Chunk
    sites: list[int]  # positions in model.launches of the launches it owns
    key: tuple[object, ...] = ()
    layout: _Layout = ()  # the chunks its records may point into, without itself

    @property
    def names(self) -> set[str]:
        return {k.name for _, k in self.kernels}


_Layout = tuple[tuple[int, int], ...]


class _NotMovable(Exception):
    pass


# the layout of a `_UnitEntry` moved by `_UnitEntry.shifted` (no layout is)
_MOVED: _Layout = ((-1, -1),)


@dataclass(frozen=True)
class _UnitEntry:
    """A unit's records, with the lines (context chunks, the unit) they were computed at."""

    records: _UnitRecords
    layout: _Layout
    first: int
    end: int
    # the lines the records quote in their texts, sorted (`Record.quotes`)
    quotes: tuple[int, ...]
    # the non-empty lists of ``records``: (rule id, of a launch site, the kernel's or site's number, records)
    found: tuple[tuple[str, bool, int, list[Record]], ...]
    # no line the records' locations, related places and fixes point at is below this one (1-based)
    reach: int = 0

    @classmethod
    def of(cls, records: _UnitRecords, layout: _Layout, chunk: Chunk) -> _UnitEntry:
        found_lists: list[tuple[str, bool, int, list[Record]]] = []
        for rule, (kernels, sites) in records.items():
            # most rules have no record: a scan in C tells so without enumerating
            if any(kernels):
                found_lists.extend((rule, False, number, part) for number, part in enumerate(kernels) if part)
            if any(sites):
                found_lists.extend((rule, True, number, part) for number, part in enumerate(sites) if part)
        found = tuple(found_lists)
        every = [r for *_, part in found for r in part]
        quotes = _all_quotes(every)
        return cls(records, layout, chunk.first, chunk.end, quotes, found, max(map(_reach, every), default=0))

    @property
    def every(self) -> list[Record]:
        return [r for *_, part in self.found for r in part]

    def at(self, layout: _Layout, chunk: Chunk) -> _UnitEntry | None:
        """These records where the same chunks now sit at ``layout`` and ``chunk`` (None: cannot tell)."""
        if self.layout is _MOVED:
            return None
        if self.first == chunk.first and (self.layout is layout or self.layout == layout):
            return self
        if len(layout) != len(self.layout):
            return None
        lines = _LineMap([*self.layout, (self.first, self.end)], [*layout, (chunk.first, chunk.end)])
        try:
            moved = {
                rule: (
                    [[lines.record(r) for r in kernel] for kernel in kernels],
                    [[lines.record(r) for r in site] for site in sites],
                )
                for rule, (kernels, sites) in self.records.items()
            }
        except _NotMovable:
            return None
        return _UnitEntry.of(moved, layout, chunk)

    def shifted(self, shift: _Shift, moved: dict[int, Record]) -> _UnitEntry:
        """These records after an edit above some of their lines (`_Shift`); ``moved`` gains each record
        that changed, by the id of the one it replaces."""
        # only the rules with records move (most rules have none); an entry moved so is never looked up
        # in the cache of units (`at`): only the rules with records are kept, and the layout is not moved
        records: _UnitRecords = {}
        found = []
        move = shift.record
        for rule, site, number, part in self.found:
            lists = records.get(rule)
            if lists is None:
                kernels, sites = self.records[rule]
                lists = records[rule] = (list(kernels), list(sites))
            new_part = []
            for record in part:
                new = move(record)
                if new is not record:
                    moved[id(record)] = new
                new_part.append(new)
            lists[site][number] = new_part
            found.append((rule, site, number, new_part))
        entry = object.__new__(_UnitEntry)
        fields = entry.__dict__
        fields.update(self.__dict__)
        fields["records"] = records
        fields["layout"] = _MOVED
        fields["first"], fields["end"] = shift.span((self.first, self.end))
        if self.quotes:
            fields["quotes"] = tuple(map(shift.line, self.quotes))
        fields["found"] = tuple(found)
        if self.reach > shift.after:
            fields["reach"] = max(self.reach + shift.delta, shift.after)
        return entry


@dataclass(frozen=True)
class _RestEntry:
    """The records and layout of the text outside the kernels, for one key of that text."""

    key: tuple[object, ...]
    records: _PlacedRecords
    layout: _Layout

    @classmethod
    def of(cls, key: tuple[object, ...], records: _PlacedRecords, layout: _Layout) -> _RestEntry:
        return cls(key, records, layout)

    def at(self, layout: _Layout) -> _RestEntry | None:
        if self.layout == layout:
            return self
        if len(layout) != len(self.layout):
            return None
        lines = _LineMap(list(self.layout), list(layout))
        try:
            moved: _PlacedRecords = {
                rule: tuple(  # type: ignore[misc]
                    {lines.place(place): [lines.record(r) for r in rs] for place, rs in part.items()}
                    for part in parts
                )
                for rule, parts in self.records.items()
            }
        except _NotMovable:
            return None
        return _RestEntry(self.key, moved, layout)


def _all_quotes(records: Iterable[Record]) -> tuple[int, ...]:
    """The lines quoted by any of ``records``, sorted."""
    every: list[int] = []
    for record in records:
        if record.quotes is not None:
            every += record.quotes.lines
    return tuple(sorted(every))


def _requoted(record: Record, quotes: Quotes) -> dict[str, str]:
    """The texts of ``record`` that quote lines, rendered with ``quotes`` (its quotes moved)."""
    return quotes.render() if quotes is not record.quotes else {}


class _Lines:
    """Old line -> new line (1-based lines), applied to records."""

    def line(self, line: int) -> int:
        raise NotImplementedError

    def quoted(self, line: int) -> int:
        """A line number quoted in a record's text."""
        return self.line(line)

    def place(self, place: tuple[int, int]) -> tuple[int, int]:
        return (self.line(place[0]), place[1])

    def location(self, loc: Location) -> Location:
        end = self.line(loc.end_line) if loc.end_line is not None else None
        return _replaced(loc, line=self.line(loc.line), end_line=end)

    def record(self, record: Record) -> Record:
        fix = record.fix
        if fix is not None:
            edits = tuple(
                _replaced(e, line=self.line(e.line), end_line=self.line(e.end_line)) for e in fix.edits
            )
            fix = _replaced(fix, edits=edits)
        related = tuple(_replaced(r, location=self.location(r.location)) for r in record.related)
        if record.quotes is not None:
            quotes = record.quotes.moved(self.quoted)
            record = _replaced(record, quotes=quotes, **_requoted(record, quotes))
        return _replaced(record, location=self.location(record.location), related=related, fix=fix)


_Value = TypeVar("_Value")


def _replaced(value: _Value, **changes: object) -> _Value:
    """`dataclasses.replace` for the record's frozen dataclasses (no ``__post_init__``), without calling
    ``__init__``: an edit moves every record below it, a few times faster so."""
    new = object.__new__(type(value))
    fields = new.__dict__
    fields.update(value.__dict__)
    fields.update(changes)
    return new


class _LineMap(_Lines):
    """Old line -> new line, for lines inside chunks that moved without changing (1-based lines)."""

    def __init__(self, old: list[tuple[int, int]], new: list[tuple[int, int]]) -> None:
        pairs = sorted(zip(old, new, strict=True))
        self._firsts = [o[0] for o, _ in pairs]
        self._pairs = pairs

    def line(self, line: int) -> int:
        i = bisect.bisect_left(self._firsts, line) - 1  # the chunk whose first (0-based) is < line
        if i < 0:
            raise _NotMovable
        (first, end), (new_first, _) = self._pairs[i]
        if not first < line <= end:
            raise _NotMovable
        return line + new_first - first


class _Shift(_Lines):
    """The lines after line ``after`` (1-based; ``after`` is also the 0-based line where the chunks that
    move begin) moved by ``delta``: an edit in the chunk ending there, from 0-based line ``start`` on, that
    changed its line count."""

    def __init__(self, after: int, delta: int, start: int) -> None:
        self.after = after
        self.delta = delta
        self.start = start
        self._layouts: dict[int, tuple[_Layout, _Layout]] = {}  # most units share their context's layout

    def layout(self, layout: _Layout) -> _Layout:
        known = self._layouts.get(id(layout))
        if known is None or known[0] is not layout:
            known = self._layouts[id(layout)] = (layout, tuple(map(self.span, layout)))
        return known[1]

    def _place(self, place: Location) -> Location:
        """``place`` moved (itself when it is above the edit); `_replaced` inlined (no keyword dict: through
        it a move measured 10-13% slower)."""
        line, end = place.line, place.end_line
        after = self.after
        if line <= after and (end is None or end <= after):
            return place
        moved = object.__new__(Location)
        fields = moved.__dict__
        fields.update(place.__dict__)
        if line > after:
            fields["line"] = line + self.delta
        if end is not None and end > after:
            fields["end_line"] = end + self.delta
        return moved

    def record(self, record: Record) -> Record:
        """``record`` moved (itself when nothing in it does: its parts that do not move are shared). Every
        record below an edit moves on every keystroke that adds or deletes a line: written for speed."""
        after = self.after
        delta = self.delta
        new = object.__new__
        loc = self._place(record.location)
        related = record.related
        if related:
            moved_related = []
            changed = False
            for part in related:
                moved_place = self._place(part.location)
                if moved_place is not part.location:
                    changed = True
                    moved_part = new(Related)
                    fields = moved_part.__dict__
                    fields.update(part.__dict__)
                    fields["location"] = moved_place
                    part = moved_part
                moved_related.append(part)
            if changed:
                related = tuple(moved_related)
        fix = record.fix
        if fix is not None:
            moved_edits = []
            changed = False
            for edit in fix.edits:
                line, end = edit.line, edit.end_line
                if line > after or end > after:
                    changed = True
                    moved_edit = new(type(edit))
                    fields = moved_edit.__dict__
                    fields.update(edit.__dict__)
                    if end > after:
                        fields["end_line"] = end + delta
                    if line > after:
                        fields["line"] = line + delta
                    edit = moved_edit
                moved_edits.append(edit)
            if changed:
                fix = _replaced(fix, edits=tuple(moved_edits))
        texts: dict[str, object] | None = None
        quotes = record.quotes
        if quotes is not None:
            moved_quotes = quotes.moved(self.quoted)
            if moved_quotes is not quotes:
                texts = {"quotes": moved_quotes, **moved_quotes.render()}
        if loc is record.location and related is record.related and fix is record.fix and texts is None:
            return record
        moved = new(Record)
        fields = moved.__dict__
        fields.update(record.__dict__)
        fields["location"] = loc
        fields["related"] = related
        fields["fix"] = fix
        if texts is not None:
            fields.update(texts)
        return moved

    def line(self, line: int) -> int:
        return line + self.delta if line > self.after else line

    def quoted(self, line: int) -> int:
        if self.start < line <= self.after:  # in the edited chunk: where it went is not known
            raise _NotMovable
        return self.line(line)

    def edits_quoted(self, quotes: tuple[int, ...]) -> bool:
        """Whether one of the (sorted) quoted lines is in the edited chunk."""
        i = bisect.bisect_right(quotes, self.start)
        return i < len(quotes) and quotes[i] <= self.after

    def span(self, span: tuple[int, int]) -> tuple[int, int]:
        """A chunk's (0-based first, end)."""
        return (span[0] + self.delta, span[1] + self.delta) if span[0] >= self.after else span

    def moves(self, record: Record) -> bool:
        after = self.after
        loc = record.location
        if loc.line > after or (loc.end_line or 0) > after:
            return True
        if record.quotes is not None and any(n > after for n in record.quotes.lines):
            return True
        if any(r.location.line > after or (r.location.end_line or 0) > after for r in record.related):
            return True
        return record.fix is not None and any(e.end_line > after for e in record.fix.edits)


def _reach(record: Record) -> int:
    """The last line ``record``'s location, related places and fix point at."""
    loc = record.location
    last = max(loc.line, loc.end_line or 0)
    if record.related:
        last = max(last, _reach_related(record.related))
    if record.fix is not None:
        last = max([last, *(max(e.line, e.end_line) for e in record.fix.edits)])
    return last


def _reach_related(related: tuple[Related, ...]) -> int:
    return max(max(r.location.line, r.location.end_line or 0) for r in related)


@dataclass
class _Document:
    """What the analyser keeps of one document between edits."""

    parser: ChunkParser = field(default_factory=ChunkParser)
    # a few, most recent last: typing in a kernel flips between "it parses" and "it does not"
    rest: OrderedDict[tuple[object, ...], _RestEntry] = field(default_factory=OrderedDict)
    # the latest (text, settings, analysis): a save or a re-open sends the same text again
    last: tuple[str, Settings, Analysis] | None = None
    # the units' keys and layouts at the last analysis, and what they were derived from (`_UnitKeys`)
    unit_keys: _UnitKeys | None = None
    snapshot: _Snapshot | None = None


@dataclass
class _UnitKeys:
    """Each unit's key and layout, by its chunk, valid while ``token`` (the context chunks, their lines, the
    imports, the units' kernel names, the settings) is unchanged; ``around`` keeps the chunks whose ids
    the token holds alive."""

    token: tuple[object, ...]
    around: list[Chunk]
    by_chunk: dict[int, tuple[Chunk, int, tuple[object, ...], _Layout]]


@dataclass
class _KeyContext:
    """What a unit's key and layout are derived from besides its own chunk: the context, as split by
    `IncrementalAnalyser._rule_records` (the chunks every unit depends on, and those only some do)."""

    launches: list[LaunchSite]
    hosts: dict[int, Chunk]
    funcs: dict[int, Chunk]
    selective: dict[int, Chunk]
    core: list[Chunk]
    core_key: _Key
    core_layout: _Layout
    names: Counter[str]  # the units' kernel names
    any_func: bool | None
    settings_key: tuple[object, ...]
    _graph: tuple[dict[str, list[int]], dict[str, set[int]]] | None = None
    _core_firsts: list[int] | None = None

    def _own(self, unit: _Unit) -> tuple[set[str], list[Chunk]]:
        """The names the unit reaches and the selective chunks it depends on, in order."""
        if self._graph is None:
            self._graph = _graph(self.launches, self.hosts, self.selective)
        named, launchers = self._graph
        reached, relevant = _reached(unit, named, self.funcs, launchers)
        return reached, sorted((self.selective[i] for i in relevant), key=lambda c: c.first)

    def seen(self, unit: _Unit) -> list[Chunk]:
        """The context chunks the unit's records depend on (and may point into), in order."""
        _, own = self._own(unit)
        return sorted([*self.core, *own], key=lambda c: c.first) if own else list(self.core)

    def moved(self) -> None:
        """The chunks were shifted (`_Shift`): positions are derived again."""
        self.core_layout = tuple((c.first, c.end) for c in self.core)
        self._core_firsts = None

    def key(self, unit: _Unit) -> tuple[tuple[object, ...], _Layout]:
        if self._core_firsts is None:
            self._core_firsts = [c.first for c in self.core]
        core_firsts = self._core_firsts
        chunk = unit.chunk
        names = self.names
        reached, own = self._own(unit)
        seen = sorted([*self.core, *own], key=lambda c: c.first) if own else self.core
        layout = tuple((c.first, c.end) for c in seen) if own else self.core_layout
        key = (
            chunk.text,
            self.core_key,
            tuple((bisect.bisect(core_firsts, c.first), c.text) for c in own),
            # where it sits among them
            bisect.bisect(core_firsts, chunk.first) + sum(c.first <= chunk.first for c in own),
            tuple(sorted((n, names[n]) for n in reached | unit.names if n in names)),
            self.any_func,
            self.settings_key,
        )
        return key, layout


# rule id -> [(position of the kernel or launch site, its records)]
_Parts = dict[str, list[tuple[int, list[Record]]]]


@dataclass
class _Snapshot:
    """The last analysis of a document, kept for the next keystroke (`IncrementalAnalyser._spliced`): an
    edit inside one unit's chunk that leaves it a unit of the same kernel changes that unit only."""

    text: str
    settings: Settings
    parsed: ParsedSource
    chunks: list[Chunk]  # end to end, from the first chunk's line to the end of the text
    offsets: list[int]  # where each chunk starts in ``text``, then ``len(text)``
    statements: list[int]  # the position in ``parsed.tree.body`` of each chunk's first statement
    marks: int  # how many chunks hold the suppression marker (the lines before the first one count as one)
    model: ModuleModel
    rules: list[Rule]
    profile: HardwareProfile
    imports_key: object
    keys: _KeyContext
    factory_names: frozenset[str]  # functions that would be kernel factories but for a mention
    units: list[_Unit]
    unit_of_chunk: dict[int, int]  # id(chunk) -> its unit's index in ``units``
    cached: dict[int, _UnitEntry]  # by unit position
    with_records: dict[int, tuple[_Unit, _UnitEntry]]  # the units that have records, by position
    rest_parts: tuple[_Parts, _Parts]  # the records of the rest, on kernels and on launch sites
    scanned: NodeIndex  # the context's nodes (see `_run_rules`)
    shared: _Shared
    project: ProjectIndex | None  # the workspace model the launches were resolved in
    deps: dict[str, str]  # the modules they resolved into, with their digests (`ProjectView.deps`)
    # the lines the rest's records quote, sorted (`Record.quotes`)
    rest_quotes: tuple[int, ...]
    # some chunks were shifted by an edit that changed the line count, their nodes not (`Chunk.lag`)
    lagging: bool = False
    # the records the last analysis gave, for the next splice to update (None: finished in full then)
    finished: _Finished | None = None


@dataclass
class _Shared:
    """What the rules computed once for the whole file (`RuleContext.once`, `.rebound`), kept while the
    context, the units' names and the settings are unchanged: like a unit's records, it follows from them
    (rules read the rest of the file only through the module-wide facts, which no unit feeds)."""

    once: dict[object, object] = field(default_factory=dict)
    rebound: dict[int, tuple[ast.AST, frozenset[str]]] = field(default_factory=dict)


class _Settling(Analysis):
    """An analysis whose model's nodes may lag behind their lines (`Chunk.lag`, after an edit that changed
    the line count): they are moved to their lines (``settle``) when the model is read."""

    def __init__(
        self,
        records: list[Record],
        model: ModuleModel | None,
        source: ParsedSource | None,
        settle: Callable[[], bool] | None = None,
    ) -> None:
        self._settle = settle
        super().__init__(records, model, source)

    @property
    def model(self) -> ModuleModel | None:
        if self._settle is not None and self._settle():
            self._settle = None
        return self._model

    @model.setter
    def model(self, model: ModuleModel | None) -> None:
        self._model = model


def _copy(analysis: Analysis) -> Analysis:
    """A copy of ``analysis`` for a caller (its own list of records; a model settled when read)."""
    if isinstance(analysis, _Settling):
        return _Settling(list(analysis.records), analysis._model, analysis.source, analysis._settle)
    return Analysis(list(analysis.records), analysis.model, analysis.source)


def _moved_records(
    snapshot: _Snapshot, edited: int, shift: _Shift
) -> tuple[dict[int, tuple[_Unit, _UnitEntry]], tuple[_Parts, _Parts], dict[int, Record]] | None:
    """The snapshot's records but those of the unit at position ``edited``, after an edit in that unit's
    chunk that moved the lines below it, the line numbers their texts quote moved likewise, and each
    record that changed by the id of the one it replaces (None: a record quotes a line of the edited
    chunk)."""
    start, after = shift.start, shift.after
    rest_quotes = snapshot.rest_quotes
    if shift.edits_quoted(rest_quotes):
        return None
    moved: dict[int, Record] = {}
    with_records: dict[int, tuple[_Unit, _UnitEntry]] = {}
    for position, (unit, entry) in snapshot.with_records.items():
        if position == edited:
            continue
        quotes = entry.quotes
        if quotes and quotes[-1] > start:
            if shift.edits_quoted(quotes):
                return None
            entry = entry.shifted(shift, moved)
        elif entry.end > start or entry.reach > after:
            entry = entry.shifted(shift, moved)
        with_records[position] = (unit, entry)
    requote = bool(rest_quotes) and rest_quotes[-1] > after
    moved_parts = []
    for parts in snapshot.rest_parts:
        moved_rest: _Parts = {}
        for rule_id, items in parts.items():
            if (requote and any(r.quotes for _, part in items for r in part)) or any(
                shift.moves(r) for _, part in items for r in part
            ):
                items = [(p, [_moving(shift, r, moved) for r in part]) for p, part in items]
            moved_rest[rule_id] = items
        moved_parts.append(moved_rest)
    return with_records, (moved_parts[0], moved_parts[1]), moved


def _moving(shift: _Shift, record: Record, moved: dict[int, Record]) -> Record:
    new = shift.record(record)
    if new is not record:
        moved[id(record)] = new
    return new


@dataclass(frozen=True)
class _Finished:
    """The records an analysis gave (`engine.finish_records`: sorted), kept for the next splice to update
    (`_finish_splice`) rather than finish every record again: only when finishing them dropped and
    changed none (no two records in conflict, no suppression comment, no severity overridden)."""

    records: list[Record]  # never changed: the analysis returned holds it too
    module: list[Record]  # those of the rules of scope MODULE (run again on every edit)
    groups: frozenset[tuple[int, int]]  # the (stage, severity) ranks the records have

    @classmethod
    def of(
        cls,
        found: list[Record],
        finished: list[Record],
        module: dict[str, list[Record]],
        marks: int,
        settings: Settings,
    ) -> _Finished | None:
        """``found``: the records before finishing, ``finished`` after."""
        if marks or len(finished) != len(found) or any(r.rule in settings.severity for r in finished):
            return None
        groups = frozenset((r.stage.rank, r.severity.rank) for r in finished)
        return cls(finished, _flat(module), groups)


def _flat(module: dict[str, list[Record]]) -> list[Record]:
    return [r for records in module.values() for r in records]


_CONSTRAINT = Stage.CONSTRAINT.rank


def _finish_splice(
    last: _Finished,
    removed: list[Record],
    added: list[Record],
    moved: dict[int, Record],
    shift: _Shift | None,
    settings: Settings,
    module: dict[str, list[Record]],
) -> _Finished | None:
    """The records the last analysis gave (``last``) with ``removed`` taken out (the edited unit's and the
    rules of scope MODULE's, as they were), those that moved with the lines (``moved``, by the id of the one
    each replaces; ``shift``: the lines that moved) replaced and ``added`` put in: what finishing every
    record again gives, in a time that grows with the records edited, not with those kept (a list copy at
    C speed aside). None where it cannot tell: a record added shares its place in the order or its span
    (a conflict) with another, or a record not of the edited unit sits in the edited lines."""
    key = _order
    records = last.records
    drop: list[int] = []
    for record in removed:
        k = key(record)
        i = bisect.bisect_left(records, k, key=key)
        while i < len(records) and records[i] is not record and key(records[i]) == k:
            i += 1
        if i == len(records) or records[i] is not record:
            return None
        drop.append(i)
    kept = list(records)
    for i in sorted(drop, reverse=True):
        del kept[i]
    groups = set(last.groups)
    if shift is not None:
        # the records that stay keep their order when those below the edited lines move: none is inside them
        for stage, severity in groups:
            first: tuple[int | str, ...] = (stage, severity, shift.start + 1)
            i = bisect.bisect_left(kept, first, key=key)
            if i < len(kept) and key(kept[i])[:3] <= (stage, severity, shift.after):
                return None
    if moved:
        get = moved.get
        kept = [get(id(r), r) for r in kept]
    keys: set[tuple[int | str, ...]] = set()
    for record in added:
        if record.rule in settings.severity:
            return None
        k = key(record)
        i = bisect.bisect_left(kept, k, key=key)
        if k in keys or (i < len(kept) and key(kept[i]) == k):
            return None  # equal keys: the order a full run gives them is not known here
        keys.add(k)
        groups.add((record.stage.rank, record.severity.rank))
        if record.stage is Stage.CONSTRAINT and _shares_span(kept, record, groups):
            return None
        kept.insert(i, record)
    return _Finished(kept, _flat(module), frozenset(groups))


def _order(record: Record) -> tuple[int | str, ...]:
    """`Record.sort_key`, typed for a bisection by a piece of it."""
    return record.sort_key()


def _shares_span(records: list[Record], record: Record, groups: set[tuple[int, int]]) -> bool:
    """Whether a record of stage CONSTRAINT among the (sorted) ``records`` has ``record``'s span."""
    loc = record.location
    span = (loc.line, loc.col, loc.end_line, loc.end_col)
    key = _order
    for stage, severity in groups:
        if stage != _CONSTRAINT:
            continue
        place: tuple[int | str, ...] = (stage, severity, loc.line, loc.col)
        i = bisect.bisect_left(records, place, key=key)
        while i < len(records) and key(records[i])[:4] == place:
            other = records[i].location
            if (other.line, other.col, other.end_line, other.end_col) == span:
                return True
            i += 1
    return False


def _path_of(unit_key: tuple[object, ...]) -> object:
    settings_key = unit_key[-1]
    return settings_key[0] if isinstance(settings_key, tuple) else None


def _place(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


class IncrementalAnalyser:
    """`engine.analyse_source` with caches kept between calls for the same path (see the module docstring).

    The `Analysis.model` / `.source` it returns share AST nodes with later analyses of the same path, and
    a later analysis moves unchanged chunks to their new lines in place: read an analysis' model before
    analysing the same path again (its records are plain values and stay valid). `analyse` holds a lock:
    one thread analyses, another may read the model of the last analysis (which may move its nodes).
    """

    def __init__(self, builtins: BuiltinTable | None = None) -> None:
        self._table = builtins
        self._documents: OrderedDict[str, _Document] = OrderedDict()
        self._units: OrderedDict[tuple[object, ...], _UnitEntry] = OrderedDict()
        # held by `analyse`; a lagging model read by another thread (the server's hover) moves its nodes
        # only between analyses
        self._lock = threading.Lock()
        self._early: Early | None = None  # what the analysis under way hands its first screen's records

    def _settle(self, parser: ChunkParser) -> bool:
        """Move the nodes of ``parser``'s chunks to their lines (False: an analysis ran all along)."""
        if not self._lock.acquire(timeout=SETTLE_WAIT_S):
            return False
        try:
            parser.settle()
            return True
        finally:
            self._lock.release()

    def forget(self, path: str) -> None:
        """Drop the caches of a closed document."""
        self._documents.pop(path, None)
        for key in [k for k in self._units if _path_of(k) == path]:
            del self._units[key]

    def analyse(
        self,
        text: str,
        path: str,
        settings: Settings,
        project: ProjectView | None = None,
        early: Early | None = None,
    ) -> Analysis:
        """``project``: the workspace model seen from ``path`` (kernels launched from other modules); the
        records of launches resolved through it are keyed by the digests of the modules they resolved
        into, and a caller that changes one of those modules calls `forget` for the documents launching
        its kernels. ``early``: (a last line, whom to hand records): a text analysed afresh hands on the
        records of its kernels starting up to that line (`engine.first_screen_records`, a subset of the
        whole) once its model is built, before the rules run on the rest."""
        table = self._builtins()
        enabled = gc.isenabled()
        gc.disable()  # same reason as in `analyse_source`
        try:
            with self._lock:
                self._early = early
                try:
                    return self._analyse(text, path, settings or Settings(), table, project)
                finally:
                    self._early = None
        except Exception:  # never worse than the full analysis
            self._documents.pop(path, None)
            return analyse_source(text, path, settings, builtins=table, project=project)
        finally:
            # when to collect what the analysis made is the caller's (the server's `server.collector`)
            if enabled:
                gc.enable()

    @staticmethod
    def _hand_early(
        early: Early,
        parsed: ParsedSource,
        path: str,
        settings: Settings,
        table: BuiltinTable,
        model: ModuleModel,
        view: ProjectView | None,
    ) -> None:
        last_line, hand = early
        try:
            records = first_screen_records(parsed, path, settings, table, model, last_line, view)
        except Exception:  # the whole analysis reports what went wrong
            return
        if records is not None:
            hand(records)

    def _builtins(self) -> BuiltinTable:
        if self._table is None:
            from warp_harness.builtins import load_table

            self._table = load_table()
        return self._table

    def _document(self, path: str) -> _Document:
        document = self._documents.get(path)
        if document is None:
            document = self._documents[path] = _Document()
            while len(self._documents) > DOCUMENT_CACHE_SIZE:
                self._documents.popitem(last=False)
        else:
            self._documents.move_to_end(path)
        return document

    def _analyse(
        self, text: str, path: str, settings: Settings, table: BuiltinTable, project: ProjectView | None
    ) -> Analysis:
        document = self._document(path)
        last = document.last
        if last is not None and last[0] == text and last[1] == settings and project is None:
            return _copy(last[2])
        document.last = None
        analysis = self._analyse_new(document, text, path, settings, table, project)
        document.last = (text, settings, analysis)
        return _copy(analysis)

    def _analyse_new(
        self,
        document: _Document,
        text: str,
        path: str,
        settings: Settings,
        table: BuiltinTable,
        project: ProjectView | None = None,
    ) -> Analysis:
        snapshot, document.snapshot = document.snapshot, None  # put back only once consistent again
        if snapshot is not None:
            spliced = self._spliced(document, snapshot, text, settings, table, project)
            if spliced is not None:
                return spliced
        parsed, chunks = document.parser.parse(text)
        facts = _facts()
        if chunks is None:
            return analyse_parsed(parsed, path, settings, table, project=project)
        index = NodeIndex.concat(parsed.tree, [c.index for c in chunks if c.body])
        model = build_model(text, path, table, parsed, index)
        if not (model.kernels or model.launches):
            return analyse_parsed(parsed, path, settings, table, model, project)
        view = project.attach(model) if project is not None and model.launches else None
        if self._early is not None:  # the view attached once: its summary serves both
            self._hand_early(self._early, parsed, path, settings, table, model, view)
        try:
            found, whole, kept = self._rule_records(document, model, chunks, settings, table, facts, view)
        except _RuleFailed:
            document.rest.clear()
            return analyse_parsed(parsed, path, settings, table, model, project)
        records = [syntax_record(path, parsed.syntax_error)] if parsed.syntax_error is not None else []
        records.extend(found)
        marks = _scan_for_comments(parsed, chunks)
        records.extend(judged_findings(whole, found, frozenset()))
        finished = finish_records(records, parsed, settings)
        if parsed.syntax_error is None and marks is not None:
            deps = dict(view.deps) if view is not None else {}
            index_of = project.index if project is not None else None
            document.snapshot = _snapshot(text, settings, parsed, chunks, marks, kept, index_of, deps)
            if document.snapshot is not None:
                document.snapshot.finished = _Finished.of(records, finished, kept.module, marks, settings)
        return Analysis(finished, model, parsed)

    def _spliced(
        self,
        document: _Document,
        snapshot: _Snapshot,
        text: str,
        settings: Settings,
        table: BuiltinTable,
        project: ProjectView | None,
    ) -> Analysis | None:
        """The analysis of ``text`` from the last one (``snapshot``), when ``text`` differs from it inside
        one unit's chunk only and that chunk is still a unit of the same kernel, from the same line (it may
        have gained or lost lines: the chunks below move, see the module docstring): the model spliced,
        the rules run on that unit only (None: not such an edit).

        With a workspace model: the launches are those of the snapshot, so they resolve into the modules
        they resolved into then (a caller that changes one of those calls `forget`, see `analyse`)."""
        index_of = project.index if project is not None else None
        if snapshot.settings != settings or snapshot.project is not index_of:
            return None
        edit = _edited_chunk(snapshot, text)
        if edit is None:
            return None
        number, chunk_text = edit
        chunk = snapshot.chunks[number]
        unit_number = snapshot.unit_of_chunk.get(id(chunk))
        if unit_number is None:
            return None
        unit = snapshot.units[unit_number]
        if len(unit.kernels) != 1:
            return None
        lines = snapshot.parsed.lines
        piece = chunk_text.splitlines(keepends=True)
        delta = len(piece) - (chunk.end - chunk.first)  # lines inserted (deleted: below 0)
        following = lines[chunk.end : chunk.end + 1]
        if (
            (following and not chunk_text.endswith(("\n", "\r")))
            or _ODD_BREAKS.search(chunk_text)
            or "\0" in chunk_text
            # one statement start before and after, and the next chunk still starts where it did
            or _chunk_starts([*piece, *following]) != [0, len(piece)][: 1 + len(following)]
            or _chunk_starts(lines[chunk.first : chunk.end]) != [0]
        ):
            return None
        new = parse_chunk(chunk.first, chunk.end + delta, chunk_text)
        body = new.body
        position, kernel = unit.kernels[0]
        model = snapshot.model
        if (
            body is None
            or len(body) != 1
            or type(body[0]) is not ast.FunctionDef
            or body[0].name != kernel.name
            or not _isolated(new, model.imports, snapshot.imports_key, _facts())
            or (snapshot.factory_names & (_mentioned_names(new) | _mentioned_names(chunk)))
        ):
            return None
        with_records, rest_parts = snapshot.with_records, snapshot.rest_parts
        had = with_records.get(position)
        removed = had[1].every if had is not None else []  # the unit's records the last analysis gave
        moved_map: dict[int, Record] = {}
        moved_by: _Shift | None = None
        rest_quotes = snapshot.rest_quotes
        if delta:
            moved_by = _Shift(chunk.end, delta, chunk.first)
            try:
                moved = _moved_records(snapshot, position, moved_by)
            except _NotMovable:
                moved = None
            if moved is None:
                return None
            with_records, rest_parts, moved_map = moved
            rest_quotes = tuple(map(moved_by.line, rest_quotes))
            # the later chunks' lines move, their nodes lag (the rules below read only settled ones)
            for later in snapshot.chunks[number + 1 :]:
                later.first += delta
                later.end += delta
                later.lag += delta
            document.parser.lines_moved()
            document.unit_keys = None
            snapshot.keys.moved()
        lagging = snapshot.lagging or delta != 0
        node = body[0]
        statement = snapshot.statements[number]
        tree_body = snapshot.parsed.tree.body
        tree = ast.Module(body=[*tree_body[:statement], node, *tree_body[statement + 1 :]], type_ignores=[])
        # no odd line break in the text (the chunk parser gives no chunks then): its lines are plain
        parsed = ParsedSource(
            text, [*lines[: chunk.first], *piece, *lines[chunk.end :]], tree, _plain_lines=True
        )
        chunks = [*snapshot.chunks[:number], new, *snapshot.chunks[number + 1 :]]
        index = NodeIndex.lazy(lambda: NodeIndex.concat(tree, [c.index for c in chunks if c.body]))
        spliced = with_kernel_replaced(model, position, node, parsed, index)
        if spliced is None or not spliced.kernels[position].is_kernel:
            return None
        func_calls.carry_scopes(snapshot.parsed.tree, tree, kernel.node, node)
        view = project.attach(spliced) if project is not None and spliced.launches else None
        if view is not None:
            view.deps.update(snapshot.deps)
        replaced = _Unit(position, [(position, spliced.kernels[position])], new, unit.sites)
        replaced.key, replaced.layout = snapshot.keys.key(replaced)
        entry = self._cached_unit(replaced)
        if entry is None:
            config = (snapshot.profile, table, settings)
            shared = snapshot.shared
            if lagging:
                # what the unit's records depend on, settled; the scans see only that (the other chunks
                # do not change them, and their nodes may lag); what the rules compute once is not kept
                seen = snapshot.keys.seen(replaced)
                for part in seen:
                    part.settle()
                scanned = NodeIndex.concat(tree, [c.index for c in seen])
                shared = _Shared(dict(shared.once), dict(shared.rebound))
            else:
                scanned = snapshot.scanned.rerooted(tree)
            try:
                fresh, _ = _run_rules(
                    spliced,
                    scanned,
                    snapshot.rules,
                    [replaced],
                    [replaced],
                    False,
                    config,
                    view,
                    shared,
                )
            except _RuleFailed:
                return None
            entry = self._keep_unit(replaced, fresh[position], len(snapshot.units))
        whole = RuleContext(spliced, snapshot.profile, table, settings, project=view)
        with_records.pop(position, None)
        if entry.found:
            with_records[position] = (replaced, entry)
        marks = snapshot.marks - _holds_mark(chunk) + _holds_mark(new)
        last = snapshot.finished
        try:
            module = _module_records(snapshot.rules, whole)
            finished_now = (
                _finish_splice(
                    last,
                    [*removed, *last.module],
                    [*entry.every, *_flat(module)],
                    moved_map,
                    moved_by,
                    settings,
                    module,
                )
                if last is not None and marks == 0
                else None
            )
            found = (
                _merge(snapshot.rules, with_records.values(), rest_parts, module)
                if finished_now is None
                else []
            )
        except _RuleFailed:
            document.snapshot = None
            return None
        # consistent again: the chunk cache, the units' keys and the snapshot hold the new chunk
        document.parser.replace(chunk, new)
        memo = document.unit_keys
        if memo is not None:
            memo.by_chunk.pop(id(chunk), None)
            memo.by_chunk[id(new)] = (new, new.first, replaced.key, replaced.layout)
        snapshot.unit_of_chunk.pop(id(chunk))
        snapshot.unit_of_chunk[id(new)] = unit_number
        snapshot.cached[position] = entry
        units = list(snapshot.units)
        units[unit_number] = replaced
        shift = len(text) - len(snapshot.text)
        offsets = snapshot.offsets
        if shift:
            offsets = [*offsets[: number + 1], *(o + shift for o in offsets[number + 1 :])]
        document.snapshot = replace(
            snapshot,
            text=text,
            parsed=parsed,
            chunks=chunks,
            offsets=offsets,
            marks=marks,
            model=spliced,
            units=units,
            with_records=with_records,
            rest_parts=rest_parts,
            rest_quotes=rest_quotes,
            lagging=lagging,
        )
        remember_scan(text, marks > 0)
        if finished_now is not None and judged_findings(whole, finished_now.records, frozenset()):
            # a rule of scope FINDINGS reports on the records: they are finished in full
            finished_now = None
            found = _merge(snapshot.rules, with_records.values(), rest_parts, module)
        if finished_now is None:
            records = list(found)
            records.extend(judged_findings(whole, found, frozenset()))
            finished = finish_records(records, parsed, settings)
            document.snapshot.finished = _Finished.of(records, finished, module, marks, settings)
        else:
            finished = finished_now.records
            document.snapshot.finished = finished_now
        if lagging:
            return _Settling(finished, spliced, parsed, partial(self._settle, document.parser))
        return Analysis(finished, spliced, parsed)

    def _cached_unit(self, unit: _Unit) -> _UnitEntry | None:
        """The unit's records from the cache, moved to its lines (None: not there)."""
        entry = self._units.get(unit.key)
        found = entry.at(unit.layout, unit.chunk) if entry is not None else None
        if found is None:
            return None
        self._units.move_to_end(unit.key)
        if found is not entry:
            self._units[unit.key] = found
        return found

    def _keep_unit(self, unit: _Unit, records: _UnitRecords, units: int) -> _UnitEntry:
        entry = self._units[unit.key] = _UnitEntry.of(records, unit.layout, unit.chunk)
        # every unit of this document stays: a file with more units than the limit would miss them all
        while len(self._units) > UNIT_CACHE_SIZE + units:
            self._units.popitem(last=False)
        return entry

    def _rule_records(
        self,
        document: _Document,
        model: ModuleModel,
        chunks: list[Chunk],
        settings: Settings,
        table: BuiltinTable,
        facts: _Facts,
        view: ProjectView | None = None,
    ) -> tuple[list[Record], RuleContext, _Kept]:
        """Every enabled rule's records, the context of the whole model they were judged in, and what a
        snapshot keeps of them."""
        profile = load_profile(settings.target)
        rules = [rule for rule in all_rules() if settings.rule_enabled(rule.id)]
        settings_key = (model.path, tuple(rule.id for rule in rules), profile)  # records hold the path
        imports_key = (tuple(model.imports.modules.items()), tuple(model.imports.objects.items()))
        units, factory_names = _units(model, chunks, imports_key, facts)
        unit_chunks = {id(u.chunk) for u in units}
        around = [c for c in chunks if c.body is not None and id(c) not in unit_chunks]
        context = _Key(tuple(c.text for c in around))
        layout = tuple((c.first, c.end) for c in around)
        # undecorated host functions holding nothing a module-wide scan looks for matter to a unit only when
        # they launch it or it mentions their name; the rest of the context matters to every unit
        hosts = {id(c): c for c in around if _is_host(c, model.imports, imports_key, facts)}
        # likewise a `@wp.func` holding nothing a scan looks for: only to units that reach it by name
        func_nodes = {id(k.node) for k in model.kernels if k.kind == "func"}
        funcs = {
            id(c): c
            for c in around
            if id(c) not in hosts
            and c.body is not None
            and len(c.body) == 1
            and id(c.body[0]) in func_nodes
            and _isolated(c, model.imports, imports_key, facts)
        }
        selective = {**hosts, **funcs}
        core = [c for c in around if id(c) not in selective]
        names = Counter(k.name for u in units for _, k in u.kernels)
        # whether the file has any @wp.func at all (not only those a unit reaches by name)
        any_func = bool(func_nodes) if any(Fact.FUNCS in rule.reads for rule in rules) else None
        keys = _KeyContext(
            model.launches,
            hosts,
            funcs,
            selective,
            core,
            _Key(tuple(c.text for c in core)),
            tuple((c.first, c.end) for c in core),
            names,
            any_func,
            settings_key,
        )
        # a unit's key and layout follow from its chunk and what the token holds: kept between analyses
        token = (
            tuple(map(id, around)),
            layout,
            imports_key,
            tuple(sorted(names.items())),
            any_func,
            settings_key,
        )
        memo = document.unit_keys
        known = memo.by_chunk if memo is not None and memo.token == token else {}
        by_chunk: dict[int, tuple[Chunk, int, tuple[object, ...], _Layout]] = {}
        for unit in units:
            chunk = unit.chunk
            kept = known.get(id(chunk))
            if kept is not None and kept[0] is chunk and kept[1] == chunk.first:
                unit.key, unit.layout = kept[2], kept[3]
            else:
                unit.key, unit.layout = keys.key(unit)
            by_chunk[id(chunk)] = (chunk, chunk.first, unit.key, unit.layout)
        document.unit_keys = _UnitKeys(token, around, by_chunk)
        # what the launches resolved into through the workspace model (each module's digest)
        if view is not None:
            for site in model.launches:
                view.kernel_of(site)
        resolved = tuple(sorted(view.deps.items())) if view is not None else ()
        rest_key = (context, tuple(sorted(names.items())), settings_key, resolved)

        cached: dict[int, _UnitEntry] = {}
        missing: list[_Unit] = []
        for unit in units:
            found = self._cached_unit(unit)
            if found is None:
                missing.append(unit)
            else:
                cached[unit.position] = found
        rest = document.rest.get(rest_key)
        rest_found = rest.at(layout) if rest is not None else None
        # a unit feeds no module-wide fact: the scans behind them need only the context's nodes
        scanned = NodeIndex.lazy(lambda: NodeIndex.concat(model.tree, [c.index for c in around]))
        shared = _Shared()
        if missing or rest_found is None:
            config = (profile, table, settings)
            fresh, placed = _run_rules(
                model, scanned, rules, units, missing, rest_found is None, config, view, shared
            )
            for unit in missing:
                cached[unit.position] = self._keep_unit(unit, fresh[unit.position], len(units))
            if rest_found is None:
                rest_found = _RestEntry.of(rest_key, placed, layout)
        document.rest[rest_key] = rest_found
        document.rest.move_to_end(rest_key)
        while len(document.rest) > REST_CACHE_SIZE:
            document.rest.popitem(last=False)
        whole = RuleContext(model, profile, table, settings, project=view)
        with_records = {u.position: (u, cached[u.position]) for u in units if cached[u.position].found}
        rest_parts = _rest_parts(model, units, rest_found.records)
        module = _module_records(rules, whole)
        found_records = _merge(rules, with_records.values(), rest_parts, module)
        snapshot_parts = _Kept(
            model,
            rules,
            profile,
            imports_key,
            keys,
            factory_names,
            units,
            cached,
            with_records,
            rest_parts,
            scanned,
            shared,
            module,
        )
        return found_records, whole, snapshot_parts


@dataclass
class _Kept:
    """What `_rule_records` derived that a `_Snapshot` keeps."""

    model: ModuleModel
    rules: list[Rule]
    profile: HardwareProfile
    imports_key: object
    keys: _KeyContext
    factory_names: frozenset[str]
    units: list[_Unit]
    cached: dict[int, _UnitEntry]
    with_records: dict[int, tuple[_Unit, _UnitEntry]]
    rest_parts: tuple[_Parts, _Parts]
    scanned: NodeIndex
    shared: _Shared
    module: dict[str, list[Record]]


def _snapshot(
    text: str,
    settings: Settings,
    parsed: ParsedSource,
    chunks: list[Chunk],
    marks: int,
    kept: _Kept,
    project: ProjectIndex | None,
    deps: dict[str, str],
) -> _Snapshot | None:
    """None when the chunks do not run end to end or a chunk holds no statement."""
    offsets = [len(text) - sum(len(c.text) for c in chunks)]
    statements = [0]
    for chunk in chunks:
        if not chunk.body:
            return None
        offsets.append(offsets[-1] + len(chunk.text))
        statements.append(statements[-1] + len(chunk.body))
    if "".join(parsed.lines[: chunks[0].first]) != text[: offsets[0]]:
        return None
    rest = [r for parts in kept.rest_parts for items in parts.values() for _, rs in items for r in rs]
    return _Snapshot(
        text,
        settings,
        parsed,
        chunks,
        offsets,
        statements[:-1],
        marks,
        kept.model,
        kept.rules,
        kept.profile,
        kept.imports_key,
        kept.keys,
        kept.factory_names,
        kept.units,
        {id(u.chunk): n for n, u in enumerate(kept.units)},
        kept.cached,
        kept.with_records,
        kept.rest_parts,
        kept.scanned,
        kept.shared,
        project,
        deps,
        _all_quotes(rest),
    )


_BLOCK = 1 << 16


def _common_prefix(a: str, b: str, n: int) -> int:
    """The length of the longest common prefix of ``a`` and ``b``, at most ``n`` (compared block by
    block: slices compare at the speed of memcmp)."""
    low = 0
    while low < n:
        high = min(low + _BLOCK, n)
        if a[low:high] != b[low:high]:
            while high - low > 32:
                middle = (low + high) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    high = middle
            while low < high and a[low] == b[low]:
                low += 1
            return low
        low = high
    return n


def _common_suffix(a: str, b: str, n: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``n``."""
    la, lb = len(a), len(b)
    low = 0
    while low < n:
        high = min(low + _BLOCK, n)
        if a[la - high : la - low] != b[lb - high : lb - low]:
            while high - low > 32:
                middle = (low + high) // 2
                if a[la - middle : la - low] == b[lb - middle : lb - low]:
                    low = middle
                else:
                    high = middle
            while low < high and a[la - low - 1] == b[lb - low - 1]:
                low += 1
            return low
        low = high
    return n


def _edited_chunk(snapshot: _Snapshot, text: str) -> tuple[int, str] | None:
    """The one chunk of the snapshot ``text`` differs from it in, and that chunk's text in ``text`` (None:
    the text before the first chunk differs, or more than one chunk does)."""
    old = snapshot.text
    n = min(len(old), len(text))
    prefix = _common_prefix(old, text, n)
    suffix = _common_suffix(old, text, n - prefix)
    offsets = snapshot.offsets
    number = bisect.bisect_right(offsets, prefix) - 1
    if not 0 <= number < len(snapshot.chunks) or len(old) - suffix > offsets[number + 1]:
        return None
    return number, text[offsets[number] : offsets[number + 1] + len(text) - len(old)]


def _holds_mark(chunk: Chunk) -> bool:
    memo = chunk.facts.get("mark")
    if not isinstance(memo, bool):
        memo = chunk.facts["mark"] = MARK in chunk.text
    return memo


def _scan_for_comments(parsed: ParsedSource, chunks: list[Chunk]) -> int | None:
    """Whether the text holds a suppression comment, from what each chunk remembers (only new chunks are
    scanned), for the finish step (`suppressions.may_hold_comments`): how many chunks hold one (the lines
    before the first chunk count as one). The chunks run end to end from the first one's line to the end
    of the text; when they do not, nothing is told (the text is scanned) and None is returned."""
    lines = parsed.lines
    if not chunks or chunks[-1].end != len(lines):
        return None
    found = int(any(MARK in line for line in lines[: chunks[0].first]))
    for before, chunk in zip([None, *chunks], chunks, strict=False):
        if before is not None and before.end != chunk.first:
            return None
        found += _holds_mark(chunk)
    remember_scan(parsed.text, found > 0)
    return found


def _units(
    model: ModuleModel, chunks: list[Chunk], imports_key: object, facts: _Facts
) -> tuple[list[_Unit], frozenset[str]]:
    """The units: top-level kernels alone in their chunk, and top-level functions that only define
    kernels (kernel factories), that feed no module-wide fact; and the names of the functions that would
    be kernel factories if no kernel or function mentioned them."""
    single = {id(c.body[0]): c for c in chunks if c.body is not None and len(c.body) == 1}
    kernel_names = Counter(k.name for k in model.kernels if k.is_kernel)
    sites_by_name: dict[str, list[int]] = {}
    for position, site in enumerate(model.launches):
        if site.kernel_name is not None:
            sites_by_name.setdefault(site.kernel_name, []).append(position)
    top = {id(stmt) for stmt in model.tree.body}
    found: list[tuple[int, KernelDef, Chunk]] = []
    nested: list[tuple[int, KernelDef]] = []
    for position, kernel in enumerate(model.kernels):
        chunk = single.get(id(kernel.node))
        if chunk is None:
            if id(kernel.node) not in top:
                nested.append((position, kernel))
            continue
        if kernel.is_kernel and _isolated(chunk, model.imports, imports_key, facts):
            found.append((position, kernel, chunk))
    units = [_Unit(p, [(p, k)], c, []) for p, k, c in found]
    factory_names: frozenset[str] = frozenset()
    if nested:
        factories, factory_names = _factories(model, chunks, nested, imports_key, facts)
        units += factories
    units.sort(key=lambda u: u.position)
    for unit in units:
        unit.sites = sorted(
            site
            for _, k in unit.kernels
            if kernel_names[k.name] == 1
            for site in sites_by_name.get(k.name, [])
        )
    return units, factory_names


def _factories(
    model: ModuleModel,
    chunks: list[Chunk],
    nested: list[tuple[int, KernelDef]],
    imports_key: object,
    facts: _Facts,
) -> tuple[list[_Unit], frozenset[str]]:
    """Top-level functions whose nested functions are all ``@wp.kernel``s and which feed no module-wide
    fact otherwise, each a unit of those kernels. Not one whose name a kernel or function of the file
    mentions (WH002 reports calls of plain functions with their line)."""
    warp_nodes = {id(k.node) for k in model.kernels}
    by_node = {id(k.node): (p, k) for p, k in nested}
    candidates: list[tuple[str, Chunk, list[tuple[int, KernelDef]]]] = []
    for chunk in chunks:
        body = chunk.body
        if body is None or len(body) != 1 or type(body[0]) is not ast.FunctionDef:
            continue
        outer = body[0]
        inner = [n for n in chunk.index.of(ast.FunctionDef) if n is not outer]
        if (
            inner
            and id(outer) not in warp_nodes  # not a kernel or function defined in a kernel or function
            and all(id(n) in by_node and by_node[id(n)][1].is_kernel for n in inner)
            and _isolated(chunk, model.imports, imports_key, facts, functions=1 + len(inner))
        ):
            kernels = sorted((by_node[id(n)] for n in inner), key=lambda item: item[0])
            candidates.append((outer.name, chunk, kernels))
    if not candidates:
        return [], frozenset()
    in_warp_code = _names_in_warp_code(model, chunks)
    units = [
        _Unit(kernels[0][0], kernels, chunk, [])
        for name, chunk, kernels in candidates
        if name not in in_warp_code
    ]
    return units, frozenset(name for name, _, _ in candidates)


def _names_in_warp_code(model: ModuleModel, chunks: list[Chunk]) -> set[str]:
    """The names the file's kernels and functions mention, kept with each chunk for its kernels."""
    firsts = [c.first for c in chunks]
    by_chunk: dict[int, list[ast.AST]] = {}
    names: set[str] = set()
    for kernel in model.kernels:
        line = kernel.node.lineno
        i = bisect.bisect_left(firsts, line) - 1  # the chunk whose first (0-based) line is before it
        if i >= 0 and line <= chunks[i].end:
            by_chunk.setdefault(i, []).append(kernel.node)
        else:  # not in a chunk: cannot happen with chunks from the same parse; no memo then
            names.update(n.id for n in body_index(kernel.node).of(ast.Name))
    for i, nodes in by_chunk.items():
        chunk = chunks[i]
        key = tuple(map(id, nodes))  # which of the chunk's nodes are kernels depends on the imports
        memo = chunk.facts.get("warp_names")
        if not (isinstance(memo, tuple) and memo[0] == key):
            memo = (key, frozenset(n.id for node in nodes for n in body_index(node).of(ast.Name)))
            chunk.facts["warp_names"] = memo
        names.update(memo[1])
    return names


def _isolated(
    chunk: Chunk,
    imports: ImportMap,
    imports_key: object,
    facts: _Facts,
    launches: bool = False,
    functions: int = 1,
) -> bool:
    """Whether the chunk feeds no module-wide fact (cached per chunk and imports); ``launches``: launch
    calls allowed; ``functions``: how many function definitions it holds (those nested in it kernels)."""
    memo = chunk.facts.get(f"isolated{launches}{functions}")
    if isinstance(memo, tuple) and memo[0] == imports_key:
        return bool(memo[1])
    # a fact read from places the node scan does not see (``max_unroll=`` keywords): by its text
    result = not any(marker in chunk.text for marker in facts.markers) and _scan_isolated(
        chunk.index, imports, facts, launches, functions
    )
    chunk.facts[f"isolated{launches}{functions}"] = (imports_key, result)
    return result


def _is_host(chunk: Chunk, imports: ImportMap, imports_key: object, facts: _Facts) -> bool:
    """A top-level undecorated function that only a unit it launches or names can depend on."""
    body = chunk.body
    if body is None or len(body) != 1 or type(body[0]) is not ast.FunctionDef or body[0].decorator_list:
        return False
    return _isolated(chunk, imports, imports_key, facts, launches=True)


def _scan_isolated(
    index: NodeIndex, imports: ImportMap, facts: _Facts, launches: bool, functions: int = 1
) -> bool:
    # another function inside the chunk's function: kernels are found anywhere (`Fact.KERNELS`)
    if any(index.of(kind) for kind in facts.nodes) or len(index.of(ast.FunctionDef)) != functions:
        return False
    for call in index.of(ast.Call):
        func = call.func
        name = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        )
        if name in facts.calls or (not launches and imports.warp_name(func) in facts.warp_calls):
            return False
    if not facts.warp_assignments:
        return True
    warp_modules = {local for local, module in imports.modules.items() if module == "warp"}
    assignments: list[ast.AST] = [*index.of(ast.Assign), *index.of(ast.AnnAssign), *index.of(ast.AugAssign)]
    for node in assignments:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
        for target in targets:
            if type(target) is ast.Name:
                continue  # no attribute below it (most targets: a walk each cost ~1.5 us)
            for sub in ast.walk(target):
                if (
                    isinstance(sub, ast.Attribute)
                    and isinstance(sub.value, ast.Name)
                    and sub.value.id in warp_modules
                ):
                    return False
    return True


def _graph(
    launches: list[LaunchSite], hosts: dict[int, Chunk], selective: dict[int, Chunk]
) -> tuple[dict[str, list[int]], dict[str, set[int]]]:
    """The selective chunks by the name they define, and the hosts launching each kernel name."""
    host_of = {id(c.body[0]): i for i, c in hosts.items() if c.body}
    launchers: dict[str, set[int]] = {}
    for site in launches:
        if site.kernel_name is not None and id(site.scope) in host_of:
            launchers.setdefault(site.kernel_name, set()).add(host_of[id(site.scope)])
    named: dict[str, list[int]] = {}
    for i, chunk in selective.items():
        assert chunk.body is not None
        named.setdefault(getattr(chunk.body[0], "name", ""), []).append(i)
    return named, launchers


def _reached(
    unit: _Unit, named: dict[str, list[int]], funcs: dict[int, Chunk], launchers: dict[str, set[int]]
) -> tuple[set[str], set[int]]:
    """Names the unit mentions, directly or through the functions it names (transitively), and the
    selective chunks it depends on: those defining one of these names and the hosts launching it."""
    reached = set(_mentioned_names(unit.chunk))
    relevant = {i for name in unit.names for i in launchers.get(name, ())}
    frontier = list(reached)
    while frontier:
        for i in named.get(frontier.pop(), ()):
            if i in relevant:
                continue
            relevant.add(i)
            if i in funcs:
                for name in _mentioned_names(funcs[i]) - reached:
                    reached.add(name)
                    frontier.append(name)
    return reached, relevant


def _mentioned_names(chunk: Chunk) -> frozenset[str]:
    memo = chunk.facts.get("names")
    if isinstance(memo, frozenset):
        return memo
    names = frozenset([n.id for n in chunk.index.of(ast.Name)])
    chunk.facts["names"] = names
    return names


def _run_rules(
    model: ModuleModel,
    scanned: NodeIndex,
    rules: list[Rule],
    units: list[_Unit],
    missing: list[_Unit],
    with_rest: bool,
    config: tuple[HardwareProfile, BuiltinTable, Settings],
    view: ProjectView | None = None,
    shared: _Shared | None = None,
) -> tuple[dict[int, _UnitRecords], _PlacedRecords]:
    """Run ``rules`` over the missing units (and everything else when ``with_rest``), each record filed
    under the kernel or launch site it is about."""
    unit_at = {p: u for u in units for p, _ in u.kernels} if with_rest else {}
    owner = {site: u for u in units for site in u.sites} if with_rest else {}
    wanted = {p for u in missing for p, _ in u.kernels}
    wanted_sites = {site for u in missing for site in u.sites}  # a site has one owner (a unique name)
    if with_rest:
        kernel_positions = [p for p in range(len(model.kernels)) if p in wanted or p not in unit_at]
        site_positions = [p for p in range(len(model.launches)) if p in wanted_sites or p not in owner]
    else:
        kernel_positions = sorted(wanted)
        site_positions = sorted(wanted_sites)
    restricted = model.restricted(
        [model.kernels[p] for p in kernel_positions], [model.launches[p] for p in site_positions], scanned
    )
    ctx = RuleContext(restricted, *config, project=view)
    if shared is not None:
        ctx = RuleContext(restricted, *config, rebound=shared.rebound, _once=shared.once, project=view)
    fresh: dict[int, _UnitRecords] = {u.position: {} for u in missing}
    rest: _PlacedRecords = {}
    for rule in rules:
        if rule.scope is Scope.MODULE:
            continue  # about the whole file: run on it in `_merge`
        by_kernel: dict[int, list[Record]] = {}
        by_site: dict[int, list[Record]] = {}
        try:
            for scope, position, record in scoped_records(rule, ctx):
                if scope is Scope.LAUNCH:
                    by_site.setdefault(site_positions[position], []).append(record)
                else:
                    by_kernel.setdefault(kernel_positions[position], []).append(record)
        except Exception as exc:  # the full analysis reports it (and what the rule said before it)
            raise _RuleFailed from exc
        for unit in missing:
            fresh[unit.position][rule.id] = (
                [by_kernel.get(p, []) for p, _ in unit.kernels],
                [by_site.get(site, []) for site in unit.sites],
            )
        if with_rest:
            rest[rule.id] = (
                {_place(model.kernels[p].node): r for p, r in by_kernel.items() if p not in unit_at},
                {_place(model.launches[p].node): r for p, r in by_site.items() if p not in owner},
            )
    return fresh, rest


def _rest_parts(model: ModuleModel, units: list[_Unit], rest: _PlacedRecords) -> tuple[_Parts, _Parts]:
    """The rest's records by rule, on each kernel and on each launch site, with its position."""
    on_kernels: _Parts = {}
    on_sites: _Parts = {}
    if any(by_kernel or by_site for by_kernel, by_site in rest.values()):
        in_units = {p for u in units for p, _ in u.kernels}
        owned = {site for u in units for site in u.sites}
        kernel_at = {_place(k.node): p for p, k in enumerate(model.kernels) if p not in in_units}
        site_at = {_place(s.node): p for p, s in enumerate(model.launches) if p not in owned}
        for rule_id, (by_kernel, by_site) in rest.items():
            for place, part in by_kernel.items():
                if place in kernel_at and part:
                    on_kernels.setdefault(rule_id, []).append((kernel_at[place], part))
            for place, part in by_site.items():
                if place in site_at and part:
                    on_sites.setdefault(rule_id, []).append((site_at[place], part))
    return on_kernels, on_sites


def _module_records(rules: list[Rule], whole: RuleContext) -> dict[str, list[Record]]:
    """The records of the rules of scope MODULE (about the whole file: run on it every time), by rule id
    (``whole``: the context of the whole model)."""
    records: dict[str, list[Record]] = {}
    for rule in rules:
        if rule.scope is Scope.MODULE:
            try:
                found = [record for _, _, record in scoped_records(rule, whole)]
            except Exception as exc:
                raise _RuleFailed from exc
            if found:
                records[rule.id] = found
    return records


def _merge(
    rules: list[Rule],
    with_records: Iterable[tuple[_Unit, _UnitEntry]],
    rest: tuple[_Parts, _Parts],
    module: dict[str, list[Record]],
) -> list[Record]:
    """Every rule's records in the order a full run over the whole model produces them: per rule, its
    records on each kernel by position, then on each launch site (``with_records``: the units that have
    records, with them; ``rest``: the other records, from `_rest_parts`; ``module``: the records of the
    rules of scope MODULE, `_module_records`)."""
    on_kernels = {rule_id: list(parts) for rule_id, parts in rest[0].items()}
    on_sites = {rule_id: list(parts) for rule_id, parts in rest[1].items()}
    for unit, entry in with_records:
        for rule_id, site, number, part in entry.found:
            if site:
                on_sites.setdefault(rule_id, []).append((unit.sites[number], part))
            else:
                on_kernels.setdefault(rule_id, []).append((unit.kernels[number][0], part))
    records: list[Record] = []
    for rule in rules:
        if rule.scope is Scope.MODULE:
            records.extend(module.get(rule.id, ()))
            continue
        for parts in (on_kernels.get(rule.id), on_sites.get(rule.id)):
            if parts:
                parts.sort(key=_position)
                for _, part in parts:
                    records.extend(part)
    return records


def _position(item: tuple[int, list[Record]]) -> int:
    return item[0]


@cache
def _facts() -> _Facts:
    return _Facts.of(all_rules())


__all__ = ["IncrementalAnalyser"]
