"""What every rule is: an id, a severity, a priority, documentation beside the code, a check."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from warp_harness.config import Settings
from warp_harness.model.index import body_index
from warp_harness.model.module import ModuleModel
from warp_harness.record import Fix, Location, Record, Related, Severity, Stage, TextEdit
from warp_harness.rules.hardware import HardwareProfile

if TYPE_CHECKING:
    from warp_harness.builtins import BuiltinTable

DOCS_URL = "https://github.com/warp-harness/warp-harness/blob/main/docs/rules.md"


def byte_to_char_col(line: str, byte_col: int) -> int:
    """``ast`` columns count UTF-8 bytes; records count characters."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


@dataclass
class RuleContext:
    model: ModuleModel
    profile: HardwareProfile
    builtins: BuiltinTable
    settings: Settings
    # per analysis: scope node id -> (the node, names that may be rebound there); see `queries.py`
    rebound: dict[int, tuple[ast.AST, frozenset[str]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def path(self) -> str:
        return self.model.path

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


class Rule:
    id: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity]
    # when two rules report the same span, the one with the higher priority is kept
    priority: ClassVar[int] = 50
    stage: ClassVar[Stage] = Stage.CONSTRAINT
    fixable: ClassVar[bool] = False

    @classmethod
    def doc(cls) -> str:
        module = sys.modules[cls.__module__]
        return (module.__doc__ or "").strip()

    @classmethod
    def url(cls) -> str:
        return f"{DOCS_URL}#{cls.id.lower()}"

    def check(self, ctx: RuleContext) -> Iterable[Record]:
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
    ) -> Record:
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
        )


def walk_body(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` (a kernel's FunctionDef), its decorators and annotations excluded.

    Walked once per body and kept (see `body_index`); prefer ``body_index(node).of(ast.Call)`` when
    only one kind of node matters.
    """
    return iter(body_index(node).nodes)
