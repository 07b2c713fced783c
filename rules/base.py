"""What every rule is: an id, a severity, a priority, documentation beside the code, a check."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, ClassVar, TypeVar

from warp_harness.config import Settings
from warp_harness.hardware import HardwareProfile
from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel
from warp_harness.model.source import ParsedSource
from warp_harness.record import QUOTED_LINE, Fix, Location, Quotes, Record, Related, Severity, Stage, TextEdit

if TYPE_CHECKING:
    from warp_harness.builtins import BuiltinTable
    from warp_harness.model.project import ProjectView

DOCS_URL = "https://github.com/warp-harness/warp-harness/blob/main/docs/rules.md"

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


# what the model itself reads module-wide, whatever the rules declare
MODEL_FACTS = frozenset(
    {Fact.IMPORTS, Fact.STRUCTS, Fact.SCOPES, Fact.CONSTANTS, Fact.FUNCS, Fact.KERNELS, Fact.LAUNCHES}
)


def byte_to_char_col(line: str, byte_col: int) -> int:
    """``ast`` columns count UTF-8 bytes; records count characters."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


@dataclass(eq=False)
class RuleContext:
    """What a rule sees of the file under analysis: its model, the target, the builtins, the settings."""

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
    (MODULE) once per item, in the file's order, and attributes the records to the item. A call must
    depend only on its item and the facts declared (state computed once per file: `RuleContext.once`)."""

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
