"""What every rule is: an id, a severity, a priority, documentation beside the code, a check."""

from __future__ import annotations

import ast
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, ClassVar, TypeVar

from warp_harness.config import Settings
from warp_harness.docs_url import rules_doc_url
from warp_harness.hardware import HardwareProfile
from warp_harness.model.annotations import AnnotationResolver
from warp_harness.model.constants import ModuleConstants
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import NodeIndex, body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef, StructDef
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel
from warp_harness.model.source import ParsedSource
from warp_harness.record import QUOTED_LINE, Fix, Location, Quotes, Record, Related, Severity, Stage, TextEdit

if TYPE_CHECKING:
    from warp_harness.builtins import BuiltinTable
    from warp_harness.model.project import ProjectView

DOCS_URL = rules_doc_url()

_T = TypeVar("_T")


class Scope(str, Enum):
    """What one call of a rule judges; the engine calls the rule once per item and files every record
    the call returns under that item (the incremental analyser reuses them per item)."""

    KERNEL = "kernel"  # each @wp.kernel: `Rule.check_kernel`
    KERNEL_OR_FUNC = "kernel-or-func"  # each @wp.kernel, @wp.func and other Warp function: `check_kernel`
    LAUNCH = "launch"  # each wp.launch / wp.launch_tiled call: `check_launch`
    MODULE = "module"  # the file as a whole: `check_module`
    # the file as a whole, judged from what the other rules reported on it (`Findings`): `check_findings`,
    # called by the engine once every other rule has run
    FINDINGS = "findings"


@dataclass(frozen=True)
class FactInfo:
    """A module-wide fact: something a call of a rule reads beyond its own kernel or launch site.

    ``nodes`` / ``calls`` / ``warp_assignments`` say which code feeds the fact, wherever in the file it
    sits: a kernel whose text holds any of them is never analysed on its own (see `incremental.py`);
    ``marker``: text that does the same (for a fact also read from nodes the others do not name)."""

    description: str
    nodes: tuple[type[ast.AST], ...] = ()
    calls: frozenset[str] = frozenset()
    warp_assignments: bool = False
    marker: str | None = None


class Fact(Enum):
    """What a rule may read besides its own scope, declared in `Rule.reads` (mypy's
    ``server/deps.py`` keeps such dependencies as data too)."""

    IMPORTS = FactInfo("the file's imports", nodes=(ast.Import, ast.ImportFrom))
    STRUCTS = FactInfo("@wp.struct classes and any other class of the file", nodes=(ast.ClassDef,))
    # where launches sit and what their enclosing functions rebind
    SCOPES = FactInfo(
        "names bound at module level and in the functions around launches",
        nodes=(ast.AsyncFunctionDef, ast.Lambda, ast.Global, ast.Nonlocal),
    )
    CONSTANTS = FactInfo("module-level constants (top-level assignments)")
    FUNCS = FactInfo("whether the file has any @wp.func, and which (called by name)")
    KERNELS = FactInfo("the other kernels of the file, by name")
    LAUNCHES = FactInfo(
        "the launches of a kernel (wp.launch / wp.launch_tiled calls naming it)",
        calls=frozenset({"launch", "launch_tiled"}),
    )
    MODULE_OPTIONS = FactInfo(
        "module options (block_dim, max_unroll) set in dicts, keywords or attributes",
        nodes=(ast.Dict,),
        marker="max_unroll",
    )
    REGISTRATIONS = FactInfo(
        "builtins registered at run time (add_builtin, setattr, assignments to wp.<name>)",
        calls=frozenset({"add_builtin", "register_builtin", "setattr"}),
        warp_assignments=True,
    )


# What a rule reads with the items the engine hands it, whatever else it reads: which functions are Warp
# kernels follows from the imports (decorators); a launch site's kernel and dim from the imports, the
# constants and the names the functions around it bind.
ITEM_FACTS: dict[Scope, frozenset[Fact]] = {
    Scope.KERNEL: frozenset({Fact.IMPORTS}),
    Scope.KERNEL_OR_FUNC: frozenset({Fact.IMPORTS}),
    Scope.LAUNCH: frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.SCOPES}),
    Scope.MODULE: frozenset(),
    Scope.FINDINGS: frozenset(),
}
# what a kernel's inferred types (`RuleContext.types`) are derived from
TYPE_FACTS = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})
# what an annotation resolves through (`RuleContext.resolver`): imports, structs, type aliases
RESOLVER_FACTS = frozenset({Fact.IMPORTS, Fact.STRUCTS, Fact.CONSTANTS})

# The check of the contract: with WARP_HARNESS_CHECK_FACTS=1 (the tests set it), a rule that reads a fact
# of its file it does not declare raises `UndeclaredFact`, through a `RuleContext` accessor or through the
# model a shared analysis is handed (`ModuleModel`'s fact-backed members, `_MODEL_FACTS`). Off, nothing is
# checked and nothing costs: the incremental analyser's reuse (`incremental.py`) rests on the declarations.
CHECK_FACTS_ENV = "WARP_HARNESS_CHECK_FACTS"
CHECK_FACTS = os.environ.get(CHECK_FACTS_ENV, "") not in ("", "0")


class UndeclaredFact(AssertionError):
    """A rule read a module-wide fact that its `Rule.reads` does not declare (raised only when checking)."""


@dataclass(frozen=True)
class _Reading:
    """The rule running now on ``model`` and the facts it declares."""

    rule: str
    model: ModuleModel
    facts: frozenset[Fact]

    def require(self, facts: frozenset[Fact], what: str) -> None:
        missing = facts - self.facts
        if missing:
            names = ", ".join(sorted(f"Fact.{f.name}" for f in missing))
            raise UndeclaredFact(f"{self.rule} reads {what} but does not declare {names} in `reads`")

    def run(self, call: Callable[..., Iterable[Record]], *args: object) -> Iterator[Record]:
        """``call(*args)``'s records, this reading in force while the rule computes each of them."""
        previous = _STATE.reading
        _STATE.reading = self
        try:
            records = iter(call(*args))
        finally:
            _STATE.reading = previous
        while True:
            _STATE.reading = self
            try:
                record = next(records)
            except StopIteration:
                return
            finally:
                _STATE.reading = previous
            yield record

    def applies(self, rule: Rule, ctx: RuleContext) -> bool:
        previous = _STATE.reading
        _STATE.reading = self
        try:
            return rule.applies(ctx)
        finally:
            _STATE.reading = previous


class _State(threading.local):
    reading: _Reading | None = None


_STATE = _State()


def _require(model: ModuleModel, facts: frozenset[Fact], what: str) -> None:
    reading = _STATE.reading
    if reading is not None and reading.model is model:
        reading.require(facts, what)


# the members of `ModuleModel` that read module-wide facts, checked while a rule runs
_MODEL_FACTS: dict[str, frozenset[Fact]] = {
    "imports": frozenset({Fact.IMPORTS}),
    "constants": frozenset({Fact.CONSTANTS}),
    "type_aliases": frozenset({Fact.CONSTANTS}),
    "structs": frozenset({Fact.STRUCTS}),
    "resolver": RESOLVER_FACTS,
    "funcs": frozenset({Fact.FUNCS}),
    "overloaded_funcs": frozenset({Fact.FUNCS}),
    "all_kernels": frozenset({Fact.KERNELS}),
    "kernel_named": frozenset({Fact.KERNELS}),
    "all_launches": frozenset({Fact.LAUNCHES}),
    "launches_of": frozenset({Fact.LAUNCHES}),
    "types": TYPE_FACTS,
}


def _checked_getattribute(model: ModuleModel, name: str) -> object:
    facts = _MODEL_FACTS.get(name)
    if facts is None:
        return object.__getattribute__(model, name)
    reading = _STATE.reading
    if reading is None or reading.model is not model:
        return object.__getattribute__(model, name)
    reading.require(facts, f"`model.{name}`")
    # what the member reads itself is what it stands for: not checked again
    _STATE.reading = None
    try:
        value = object.__getattribute__(model, name)
    finally:
        _STATE.reading = reading
    if callable(value):
        method = value

        def unchecked(*args: object, **kwargs: object) -> object:
            _STATE.reading = None
            try:
                return method(*args, **kwargs)
            finally:
                _STATE.reading = reading

        return unchecked
    return value


def check_reading(rule: Rule, ctx: RuleContext) -> _Reading:
    """The reading of ``rule`` on ``ctx``'s file, for the engine to run it under (`CHECK_FACTS` only); a
    rule that does not declare what its scope's items are derived from (`ITEM_FACTS`) raises."""
    reading = _Reading(rule.id, ctx.model, rule.reads)
    reading.require(ITEM_FACTS[rule.scope], f"the items of scope {rule.scope.value}")
    return reading


if CHECK_FACTS:
    ModuleModel.__getattribute__ = _checked_getattribute  # type: ignore[method-assign,assignment]


_IMPORTS = frozenset({Fact.IMPORTS})
_CONSTANTS = frozenset({Fact.CONSTANTS})
_STRUCTS = frozenset({Fact.STRUCTS})
_FUNCS = frozenset({Fact.FUNCS})
_KERNELS = frozenset({Fact.KERNELS})
_LAUNCHES = frozenset({Fact.LAUNCHES})


def byte_to_char_col(line: str, byte_col: int) -> int:
    """``ast`` columns count UTF-8 bytes; records count characters."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


@dataclass(eq=False)
class RuleContext:
    """What a rule sees of the file under analysis: its facts (one accessor each, below), the target, the
    builtins, the settings. ``model``: for handing to a shared analysis only; a rule reads no member of it."""

    model: ModuleModel
    profile: HardwareProfile
    builtins: BuiltinTable
    settings: Settings
    # per analysis: scope node id -> (the node, names that may be rebound there); see `queries.py`
    rebound: dict[int, tuple[ast.AST, frozenset[str]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    # per analysis: what rules computed once for the whole file (see `once`)
    _once: dict[object, object] = field(default_factory=dict, repr=False, compare=False)
    # the workspace model seen from this file (kernels launched from other modules); None: this file alone
    project: ProjectView | None = field(default=None, repr=False, compare=False)

    # The file's facts, one accessor each: a rule reads them only so (and declares them in `Rule.reads`)

    @property
    def imports(self) -> ImportMap:
        """`Fact.IMPORTS`."""
        if CHECK_FACTS:
            _require(self.model, _IMPORTS, "`ctx.imports`")
        return self.model.imports

    @property
    def constants(self) -> ModuleConstants:
        """`Fact.CONSTANTS`."""
        if CHECK_FACTS:
            _require(self.model, _CONSTANTS, "`ctx.constants`")
        return self.model.constants

    @property
    def structs(self) -> dict[str, StructDef]:
        """`Fact.STRUCTS`."""
        if CHECK_FACTS:
            _require(self.model, _STRUCTS, "`ctx.structs`")
        return self.model.structs

    @property
    def resolver(self) -> AnnotationResolver:
        """Annotations resolved through the imports, structs and type aliases (`RESOLVER_FACTS`)."""
        if CHECK_FACTS:
            _require(self.model, RESOLVER_FACTS, "`ctx.resolver`")
        return self.model.resolver

    @property
    def funcs(self) -> dict[str, KernelDef]:
        """`Fact.FUNCS`: the file's @wp.func by name."""
        if CHECK_FACTS:
            _require(self.model, _FUNCS, "`ctx.funcs`")
        return self.model.funcs

    @property
    def overloaded_funcs(self) -> frozenset[str]:
        """`Fact.FUNCS`: the names of the file's @wp.func defined more than once (overloads)."""
        if CHECK_FACTS:
            _require(self.model, _FUNCS, "`ctx.overloaded_funcs`")
        return self.model.overloaded_funcs

    @property
    def all_kernels(self) -> list[KernelDef]:
        """`Fact.KERNELS`: every kernel and Warp function of the file (not only the items judged now)."""
        if CHECK_FACTS:
            _require(self.model, _KERNELS, "`ctx.all_kernels`")
        return self.model.all_kernels

    def kernel_named(self, name: str | None) -> KernelDef | None:
        """`Fact.KERNELS`: the file's kernel of that name."""
        if CHECK_FACTS:
            _require(self.model, _KERNELS, "`ctx.kernel_named`")
        return self.model.kernel_named(name)

    def launches_of(self, kernel: KernelDef) -> list[LaunchSite]:
        """`Fact.LAUNCHES`: the file's launches of ``kernel``."""
        if CHECK_FACTS:
            _require(self.model, _LAUNCHES, "`ctx.launches_of`")
        return self.model.launches_of(kernel)

    def types(self, kernel: KernelDef) -> KernelTypes:
        """The inferred types of ``kernel``'s expressions (`TYPE_FACTS`)."""
        if CHECK_FACTS:
            _require(self.model, TYPE_FACTS, "`ctx.types`")
        return self.model.types(kernel)

    def module_nodes(self, fact: Fact) -> NodeIndex:
        """Every node of the file, for a rule that computes ``fact`` from a scan of it (`Fact.SCOPES`,
        `Fact.MODULE_OPTIONS`, `Fact.REGISTRATIONS`: the kinds of node each names)."""
        if CHECK_FACTS:
            _require(self.model, frozenset({fact}), f"the file's nodes for Fact.{fact.name}")
        return self.model.index

    def module_body(self, fact: Fact) -> list[ast.stmt]:
        """The file's top-level statements, for a rule that computes ``fact`` from them."""
        if CHECK_FACTS:
            _require(self.model, frozenset({fact}), f"the file's statements for Fact.{fact.name}")
        return self.model.tree.body

    def require(self, *facts: Fact) -> None:
        """Declare that what follows reads ``facts`` (a shared analysis that reads them from the text)."""
        if CHECK_FACTS:
            _require(self.model, frozenset(facts), "a shared analysis")

    def once(self, key: object, compute: Callable[[], _T]) -> _T:
        """``compute()``, computed once per analysis for ``key`` (a rule's module-wide state: its key
        starts with the rule's id)."""
        if key not in self._once:
            self._once[key] = compute()
        return self._once[key]  # type: ignore[return-value]

    @property
    def path(self) -> str:
        return self.model.path

    @property
    def source(self) -> ParsedSource:
        """The file's parse: its text and lines (for placing records and reading comments)."""
        return self.model.source

    def _line(self, lineno: int) -> str:
        lines = self.model.lines
        return lines[lineno - 1] if 0 < lineno <= len(lines) else ""

    def location(self, node: ast.AST, kernel: str | None = None, end_node: ast.AST | None = None) -> Location:
        line = getattr(node, "lineno", 1)
        col = byte_to_char_col(self._line(line), getattr(node, "col_offset", 0))
        last = end_node or node
        end_line = getattr(last, "end_lineno", None) or line
        end_col_bytes = getattr(last, "end_col_offset", None)
        end_col = byte_to_char_col(self._line(end_line), end_col_bytes) if end_col_bytes is not None else col
        return Location(self.path, line, col, end_line, end_col, kernel)

    def replace(self, node: ast.AST, new_text: str) -> TextEdit:
        loc = self.location(node)
        return TextEdit(loc.line, loc.col, loc.end_line or loc.line, loc.end_col or loc.col, new_text)

    def insert_line_before(self, stmt: ast.stmt, text: str) -> TextEdit:
        """Insert ``text`` as a new line above ``stmt``, at the statement's indentation."""
        line = self._line(stmt.lineno)
        indent = line[: len(line) - len(line.lstrip())]
        return TextEdit(stmt.lineno, 0, stmt.lineno, 0, f"{indent}{text}\n")

    def source_of(self, node: ast.AST) -> str:
        """The source text of ``node`` (see `ParsedSource.node_text`)."""
        return self.model.source.node_text(node)


@dataclass(frozen=True)
class Findings:
    """What the other rules reported on a file, for a rule of scope FINDINGS (`Rule.check_findings`)."""

    records: list[Record]  # the enabled rules' records, before conflicts and suppressions
    failed: frozenset[str]  # the ids of the rules that raised
    rules: tuple[Rule, ...]  # every rule, enabled or not
    run: Callable[[Rule], list[Record]]  # a rule's records on the file (raises when the rule does)


class Rule:
    """One check. A rule declares its `scope` and the module-wide facts it `reads`; the engine calls
    `check_kernel` (scopes KERNEL, KERNEL_OR_FUNC), `check_launch` (LAUNCH) or `check_module`
    (MODULE) once per item, in the file's order, and attributes the records to the item; `check_findings`
    (FINDINGS) once per file, after the others. A call must depend only on its item and the facts declared
    (state computed once per file: `RuleContext.once`), read through `RuleContext`'s accessors (checked:
    `CHECK_FACTS`)."""

    id: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity]
    # when two rules report the same span, the one with the higher priority is kept
    priority: ClassVar[int] = 50
    stage: ClassVar[Stage] = Stage.CONSTRAINT
    fixable: ClassVar[bool] = False
    scope: ClassVar[Scope]
    reads: ClassVar[frozenset[Fact]] = frozenset()
    # scope KERNEL: also called for each launch site of this file whose kernel is defined in another module
    # or reached indirectly (factory, `self.` attribute), its records filed under the site; the rule then
    # reads the sites from `queries.launches_of` and places records at the site (`queries.launched_elsewhere`)
    foreign_launches: ClassVar[bool] = False

    @classmethod
    def doc(cls) -> str:
        module = sys.modules[cls.__module__]
        return (module.__doc__ or "").strip()

    @classmethod
    def url(cls) -> str:
        return f"{DOCS_URL}#{cls.id.lower()}"

    def applies(self, ctx: RuleContext) -> bool:
        """Whether the rule has anything to say under this file's settings and target at all."""
        return True

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterable[Record]:
        raise NotImplementedError

    def check_launch(self, ctx: RuleContext, site: LaunchSite) -> Iterable[Record]:
        raise NotImplementedError

    def check_module(self, ctx: RuleContext) -> Iterable[Record]:
        raise NotImplementedError

    def check_findings(self, ctx: RuleContext, findings: Findings) -> Iterable[Record]:
        raise NotImplementedError

    def report(
        self,
        ctx: RuleContext,
        node: ast.AST,
        message: str,
        *,
        kernel: str | None = None,
        expected: object = None,
        actual: object = None,
        hint: str | None = None,
        fix: Fix | None = None,
        related: Sequence[Related] = (),
        end_node: ast.AST | None = None,
        severity: Severity | None = None,
        lines: Sequence[int] = (),
    ) -> Record:
        """A record of this rule at ``node``. ``lines``: the lines ``message`` and then ``hint`` quote, in
        order, each written `QUOTED_LINE` in them (``f"the loop at line {QUOTED_LINE}"``): kept as data
        (`Record.quotes`), so the record moves with an edit as its location does."""
        quotes = None
        if lines:
            texts = {"message": message} if QUOTED_LINE in message else {}
            if hint is not None and QUOTED_LINE in hint:
                texts["hint"] = hint
            quotes = Quotes.of(texts, tuple(lines))
            rendered = quotes.render()
            message = rendered.get("message", message)
            hint = rendered.get("hint", hint)
        return Record(
            stage=self.stage,
            rule=self.id,
            severity=severity or self.severity,
            location=ctx.location(node, kernel, end_node),
            message=message,
            expected=expected,
            actual=actual,
            hint=hint,
            fix=fix,
            related=tuple(related),
            priority=self.priority,
            quotes=quotes,
        )


def walk_body(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` (a kernel's FunctionDef), its decorators and annotations excluded.

    Walked once per body and kept (see `body_index`); prefer ``body_index(node).of(ast.Call)`` when
    only one kind of node matters.
    """
    return iter(body_index(node).nodes)
