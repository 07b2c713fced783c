"""``merge-reports``: the JSON reports of ``ci --shard K/N`` back into the full run's outcome.

A shard's report is untrusted input (an artifact another job uploaded): it is read as JSON only
(no pickle, no eval), its size is bounded before it is read, every field the merge uses is
type-checked, and each record must come back unchanged from ``Record.from_dict`` (so nothing the
renderers would choke on gets through). Whatever is wrong is a :class:`MergeError` naming the
file and the field; nothing is written then.

The merge refuses shards that cannot add up to one run: different shard counts, a shard missing
or given twice, a different partition (another checkout or file set) or different options, or a
report written by another warp-harness version (the rule documentation SARIF embeds comes from
this installation, so it must be the one that wrote the shards).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.daemon.ci import CiOutcome
from warp_harness.daemon.requests import harness_version
from warp_harness.daemon.shards import MAX_SHARDS
from warp_harness.output.model import FileResult, jsonable
from warp_harness.record import Record, Severity, Stage
from warp_harness.safe_read import UnreadableFileError, read_regular

# a shard report is a few KB per file with findings; 256 MiB is far beyond any real one and keeps
# a hostile artifact from costing the merging job gigabytes (json holds ~5x the text in objects)
MAX_REPORT_BYTES = 256 * 1024 * 1024

_STAGES = frozenset(s.value for s in Stage)
_SEVERITIES = frozenset(s.value for s in Severity)


class MergeError(ValueError):
    """Why the shards' reports cannot be merged (the message names the file and the problem)."""


@dataclass(frozen=True)
class StoredLinesResult(FileResult):
    """A file's result rebuilt from a report: the source lines its records point at come from
    the report's ``lines`` (the rest of the file is not in the report)."""

    stored: Mapping[tuple[int | None, int], str] = field(default_factory=dict)

    def line_text(self, line: int, cell: int | None = None) -> str | None:
        return self.stored.get((cell, line))


@dataclass
class _Report:
    name: str
    index: int
    count: int
    partition: str
    options: dict[str, Any]
    total_files: int
    files: list[dict[str, Any]]
    records: dict[str, list[Record]]
    dynamic: list[dict[str, Any]]
    summary: dict[str, Any]


def merge_reports(paths: Sequence[Path]) -> CiOutcome:
    """The outcome the full run would have had, from one JSON report per shard."""

    if not paths:
        raise MergeError("no reports to merge")
    version = harness_version()
    reports = [_load(path, version) for path in paths]
    _check_complete(reports)
    first = reports[0]
    outcome = CiOutcome(
        results=[], trusted=first.summary["trusted"], static_only=first.summary["static_only"]
    )
    owner: dict[str, str] = {}
    entries: dict[str, dict[str, Any]] = {}
    records: dict[str, list[Record]] = {}
    for report in reports:
        for entry in report.files:
            path = entry["path"]
            if path in owner:
                raise MergeError(f"{path} is in both {owner[path]} and {report.name}")
            owner[path] = report.name
            entries[path] = entry
            records[path] = report.records.get(path, [])
    total = first.total_files
    if len(entries) != total:
        raise MergeError(f"the shards hold {len(entries)} file(s); their partition has {total}")
    for path in sorted(entries):
        found = tuple(records[path])
        stored = {(line.get("cell"), line["line"]): line["text"] for line in entries[path].get("lines", [])}
        outcome.results.append(StoredLinesResult(path, found, None, None, stored))
        outcome.errors += sum(1 for r in found if r.severity is Severity.ERROR)
        outcome.warnings += sum(1 for r in found if r.severity is Severity.WARNING)
        outcome.files.append({k: v for k, v in entries[path].items() if k != "lines"})  # shards' only
    dynamic = sorted((d for r in reports for d in r.dynamic), key=lambda d: int(d["position"]))
    if len({d["position"] for d in dynamic}) != len(dynamic):
        raise MergeError("two shards ran the same dynamic-tier module")
    for d in dynamic:
        outcome.dynamic_files.append(d["module"])
        outcome.repros.extend(entries[d["path"]].get("repros", []))
    if Counter(outcome.repros) != Counter(x for r in reports for x in r.summary["repros"]):
        raise MergeError("the shards' failing cases (summary.repros) do not match their files' repros")
    return outcome


def _check_complete(reports: list[_Report]) -> None:
    first = reports[0]
    for r in reports[1:]:
        if r.count != first.count:
            raise MergeError(
                f"{first.name} is shard {first.index}/{first.count} but {r.name} is {r.index}/{r.count}"
            )
    seen: dict[int, str] = {}
    for r in reports:
        if r.index in seen:
            raise MergeError(f"shard {r.index}/{r.count} given twice: {seen[r.index]} and {r.name}")
        seen[r.index] = r.name
    missing = [str(i) for i in range(1, first.count + 1) if i not in seen]
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        raise MergeError(f"missing shard(s) {shown} of {first.count}")
    for r in reports[1:]:
        if r.options != first.options:
            key = next(
                k for k in sorted({*r.options, *first.options}) if r.options.get(k) != first.options.get(k)
            )
            raise MergeError(
                f"{first.name} and {r.name} were run with different options ({key}: "
                f"{first.options.get(key)!r} vs {r.options.get(key)!r})"
            )
        for key in ("trusted", "static_only"):
            if r.summary[key] != first.summary[key]:
                raise MergeError(f"{first.name} and {r.name} differ in summary.{key}")
        if r.partition != first.partition:
            raise MergeError(
                f"{first.name} and {r.name} partitioned different sets of files (another checkout, "
                "other paths or files that differ); run every shard on the same commit"
            )
    reports.sort(key=lambda r: r.index)


def _load(path: Path, version: str) -> _Report:
    name = str(path)
    try:
        data = read_regular(path, MAX_REPORT_BYTES)
    except UnreadableFileError as exc:
        raise MergeError(f"cannot read {name}: {exc}") from None
    except OSError as exc:
        raise MergeError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        document = json.loads(data.decode("utf-8", "surrogateescape"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, a 10,000-digit integer, deep nesting
        raise MergeError(f"{name} is not JSON: {str(exc)[:200]}") from None
    where = _Where(name)
    if not isinstance(document, dict) or "results" not in document or "files" not in document:
        raise MergeError(f"{name} is not a `warp-harness ci --output-format json` report")
    if "shard" not in document:
        raise MergeError(f"{name} is not a shard's report (written by `ci --shard K/N --output-format json`)")
    written_by = where.text(document, "version")
    if written_by != version:
        raise MergeError(
            f"{name} was written by warp-harness {written_by}, this is {version}: merge with the version "
            "that ran the shards"
        )
    shard = where.obj(document, "shard")
    summary = where.obj(document, "summary")
    for key in ("trusted", "static_only"):
        where.flag(summary, key, "summary")
    for key in ("dynamic_files", "repros"):
        where.texts(summary, key, "summary")
    index, count = where.integer(shard, "index", "shard"), where.integer(shard, "count", "shard")
    if not 1 <= index <= count <= MAX_SHARDS:
        raise MergeError(f"{name}: shard {index}/{count} is not a shard")
    files = [where.file_entry(e, i) for i, e in enumerate(where.array(document, "files"))]
    paths = [e["path"] for e in files]
    if sorted(paths) != sorted(where.texts(shard, "files", "shard")) or len(set(paths)) != len(paths):
        raise MergeError(f"{name}: its `files` are not the files its `shard` lists")
    known = set(paths)
    records: dict[str, list[Record]] = {}
    for i, entry in enumerate(where.array(document, "results")):
        file, record = where.record(entry, i)
        if file not in known:
            raise MergeError(f"{name}: results[{i}] is in {file!r}, which is not among its files")
        records.setdefault(file, []).append(record)
    dynamic = [where.dynamic(d, i, known) for i, d in enumerate(where.array(shard, "dynamic", "shard"))]
    if [d["module"] for d in dynamic] != summary["dynamic_files"]:
        raise MergeError(f"{name}: shard.dynamic does not match summary.dynamic_files")
    return _Report(
        name=name,
        index=index,
        count=count,
        partition=where.text(shard, "partition", "shard"),
        options=where.obj(shard, "options", "shard"),
        total_files=where.integer(shard, "total_files", "shard"),
        files=files,
        records=records,
        dynamic=dynamic,
        summary=summary,
    )


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not strict JSON")


class _Where:
    """Type checks of one report's fields; each failure names the file and the field."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, field: str, what: str) -> MergeError:
        return MergeError(f"{self.name}: {field} {what}")

    def get(self, obj: dict[str, Any], key: str, parent: str) -> Any:
        if key not in obj:
            raise self.fail(f"{parent}.{key}" if parent else key, "is missing")
        return obj[key]

    def text(self, obj: dict[str, Any], key: str, parent: str = "") -> str:
        value = self.get(obj, key, parent)
        if not isinstance(value, str):
            raise self.fail(f"{parent}.{key}" if parent else key, "is not a string")
        return value

    def integer(self, obj: dict[str, Any], key: str, parent: str = "") -> int:
        value = self.get(obj, key, parent)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"{parent}.{key}" if parent else key, "is not an integer")
        return value

    def flag(self, obj: dict[str, Any], key: str, parent: str = "") -> bool:
        value = self.get(obj, key, parent)
        if not isinstance(value, bool):
            raise self.fail(f"{parent}.{key}" if parent else key, "is not true or false")
        return value

    def obj(self, obj: dict[str, Any], key: str, parent: str = "") -> dict[str, Any]:
        value = self.get(obj, key, parent)
        if not isinstance(value, dict):
            raise self.fail(f"{parent}.{key}" if parent else key, "is not an object")
        return value

    def array(self, obj: dict[str, Any], key: str, parent: str = "") -> list[Any]:
        value = self.get(obj, key, parent)
        if not isinstance(value, list):
            raise self.fail(f"{parent}.{key}" if parent else key, "is not a list")
        return value

    def texts(self, obj: dict[str, Any], key: str, parent: str = "") -> list[str]:
        value = self.array(obj, key, parent)
        if not all(isinstance(v, str) for v in value):
            raise self.fail(f"{parent}.{key}" if parent else key, "is not a list of strings")
        return value

    def file_entry(self, entry: Any, i: int) -> dict[str, Any]:
        where = f"files[{i}]"
        if not isinstance(entry, dict):
            raise self.fail(where, "is not an object")
        self.text(entry, "path", where)
        self.text(entry, "status", where)
        if "repros" in entry:
            self.texts(entry, "repros", where)
        for j, line in enumerate(self.array(entry, "lines", where) if "lines" in entry else []):
            at = f"{where}.lines[{j}]"
            if not isinstance(line, dict) or set(line) - {"cell", "line", "text"}:
                raise self.fail(at, "is not a source line")
            self.integer(line, "line", at)
            self.text(line, "text", at)
            if "cell" in line:
                self.integer(line, "cell", at)
        return entry

    def record(self, entry: Any, i: int) -> tuple[str, Record]:
        where = f"results[{i}]"
        if not isinstance(entry, dict):
            raise self.fail(where, "is not an object")
        path = self.text(entry, "path", where)
        data = {k: v for k, v in entry.items() if k not in ("path", "url")}
        if self.text(data, "stage", where) not in _STAGES:
            raise self.fail(f"{where}.stage", "is not a stage")
        if self.text(data, "severity", where) not in _SEVERITIES:
            raise self.fail(f"{where}.severity", "is not a severity")
        self.text(data, "rule", where)
        self.text(data, "message", where)
        if data.get("hint") is not None:
            self.text(data, "hint", where)
        self.location(self.obj(data, "location", where), f"{where}.location")
        fix = data.get("fix")
        if fix is not None:
            self.fix(fix, f"{where}.fix")
        for j, related in enumerate(self.array(data, "related", where)):
            at = f"{where}.related[{j}]"
            if not isinstance(related, dict):
                raise self.fail(at, "is not an object")
            self.text(related, "message", at)
            self.location(self.obj(related, "location", at), f"{at}.location")
        try:
            record = Record.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise self.fail(where, f"is not a record ({exc})") from None
        if jsonable(record.to_dict()) != data:
            raise self.fail(where, "has fields a record does not have")
        return path, record

    def location(self, loc: dict[str, Any], where: str) -> None:
        self.text(loc, "path", where)
        for key in ("line", "col", "end_line", "end_col"):
            self.integer(loc, key, where)
        if loc.get("kernel") is not None:
            self.text(loc, "kernel", where)
        if "cell" in loc:
            self.integer(loc, "cell", where)

    def fix(self, fix: Any, where: str) -> None:
        if not isinstance(fix, dict):
            raise self.fail(where, "is not an object")
        self.text(fix, "title", where)
        self.flag(fix, "safe", where)
        for j, edit in enumerate(self.array(fix, "edits", where)):
            at = f"{where}.edits[{j}]"
            if not isinstance(edit, dict):
                raise self.fail(at, "is not an object")
            self.text(edit, "new_text", at)
            span = self.obj(edit, "range", at)
            for key in ("line", "col", "end_line", "end_col"):
                self.integer(span, key, f"{at}.range")

    def dynamic(self, entry: Any, i: int, paths: Collection[str]) -> dict[str, Any]:
        where = f"shard.dynamic[{i}]"
        if not isinstance(entry, dict):
            raise self.fail(where, "is not an object")
        self.integer(entry, "position", where)
        self.text(entry, "module", where)
        if self.text(entry, "path", where) not in paths:
            raise self.fail(f"{where}.path", "is not among its files")
        return entry
