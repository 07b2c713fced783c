"""The MCP tools' output schemas: the record schema (``Record.to_dict``) and what each tool wraps it in.

Declared as pydantic models so the MCP SDK publishes each tool's ``outputSchema``; unknown keys are
kept (``extra="allow"``) so a record carries everything the harness says of it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class LocationModel(_Open):
    path: str
    line: int = Field(description="1-based line")
    col: int = Field(description="0-based character column")
    end_line: int
    end_col: int
    kernel: str | None = None


class EditRange(_Open):
    line: int
    col: int
    end_line: int
    end_col: int


class TextEditModel(_Open):
    range: EditRange
    new_text: str


class FixModel(_Open):
    title: str
    edits: list[TextEditModel]
    safe: bool = Field(description="keeps behaviour where the code was already correct")


class RelatedModel(_Open):
    location: LocationModel
    message: str


class RecordModel(_Open):
    """One finding: which tier and step found it, where, what was expected against what was seen,
    a hint, and a fix (text edits) where one is known."""

    path: str | None = None
    stage: str = Field(description="constraint, codegen, compile, numeric, performance, crash, ...")
    rule: str = Field(description="WHnnn (static) or WHDnnn (dynamic); explain_rule documents it")
    severity: Literal["error", "warning", "info"]
    location: LocationModel
    message: str
    expected: Any = None
    actual: Any = None
    hint: str | None = None
    fix: FixModel | None = None
    related: list[RelatedModel] = []
    url: str | None = None
    streak: int | None = Field(default=None, description="saves in a row this rule fired here (daemon)")
    tier: str | None = Field(default=None, description="static or dynamic (daemon results)")


class FileRecords(_Open):
    path: str
    records: list[RecordModel]


class CheckOutput(_Open):
    files: list[FileRecords]
    errors: int
    warnings: int


class FixOutput(_Open):
    path: str
    applied: int = Field(description="fixes applied")
    fixed_rules: list[str]
    diff: str = Field(description="unified diff from the original text to the fixed one")
    text: str = Field(description="the fixed text")
    written: bool
    records: list[RecordModel] = Field(description="what the fixed text still has")
    errors: int
    warnings: int


class RuleDoc(_Open):
    id: str
    name: str
    summary: str
    severity: str
    tier: Literal["static", "dynamic"]
    stage: str
    fixable: bool
    url: str | None = None
    doc: str


class RunOutput(_Open):
    """A dynamic job's answer: status, each kernel's verdicts per step and device, the records (a
    validation failure says the failing size, seed and first bad index), stored repros, timings."""

    path: str | None = None
    status: str | None = None
    seed: int | None = None
    kernels: dict[str, Any] = {}
    records: list[RecordModel]
    repros: list[str] = []
    timings: dict[str, float] = {}
    via: str | None = Field(default=None, description="daemon or worker")
    rows: list[dict[str, Any]] = Field(default=[], description="bench: one row per kernel and device")
    errors: int
    warnings: int


class ReplayCase(_Open):
    case: str
    file: str
    status: str
    records: list[RecordModel]


class ReplayOutput(_Open):
    cases: list[ReplayCase]
    failing: int
    refused: list[dict[str, str]] = []
    status: str | None = None
    records: list[RecordModel] = []


class TuneOutput(_Open):
    kernel: str | None = None
    candidates: list[dict[str, Any]] = []
    pareto: list[dict[str, Any]] = Field(default=[], description="timed candidates nothing else beats")
    best: dict[str, Any] | None = None
    edits: list[TextEditModel] = Field(default=[], description="set the module's constants to `best`")
    diff: str = ""
    status: str | None = None
    records: list[RecordModel] = []


class ResultFile(_Open):
    path: str | None = None
    status: str | None = None
    kernels: dict[str, Any] = {}
    records: list[RecordModel]
    repeated: list[dict[str, Any]] = Field(default=[], description="rules that fired 2+ saves in a row")


class ResultsOutput(_Open):
    files: list[ResultFile]
