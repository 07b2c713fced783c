"""``ci --shard K/N``: which files shard K of N checks, and what its report says about it.

The partition is a pure function of the files' workspace-relative paths and their line counts,
so every machine of a CI matrix computes the same one from the same checkout: no ``hash()``
(salted per process), no absolute paths, no modification times. Line counts, not byte sizes:
a checkout with CRLF line endings has the same ones. Files are balanced by
longest-processing-time-first (the heaviest file goes to the least loaded shard, ties to the
lower index, then to the smaller path): a greedy schedule within 4/3 of the best one, where
round-robin over sorted paths ignores size and can give one shard the few large files.
Modules the dynamic tier runs (seconds each: import, compile, validate, bench) and static-only
files (milliseconds each) are balanced as two separate groups, so each shard gets its share of
both.

Each shard's report carries a digest of the whole partition (``partition``) and the options
that shape the findings (``options``); ``merge-reports`` (daemon/shard_merge.py) refuses
shards that disagree on either, so a file is never lost or counted twice. Its ``files`` entries
quote the source lines their records point at (``lines``), which the merge needs to render text,
SARIF and GitLab reports as the full run does.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warp_harness.daemon.discovery import read_text
from warp_harness.output.model import FileResult, jsonable

# a CI matrix has a few dozen jobs (GitHub Actions allows 256); the bound keeps a typo such as
# 1/1000000000 from allocating a billion shard loads
MAX_SHARDS = 4096
_SHARD_RE = re.compile(r"\s*(\d{1,9})\s*/\s*(\d{1,9})\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"K/N"`` with 1 <= K <= N <= MAX_SHARDS; ValueError with the reason otherwise."""
    match = _SHARD_RE.fullmatch(text)
    if match is None:
        raise ValueError(f"--shard {text!r}: expected K/N, e.g. 1/3")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or count > MAX_SHARDS:
        raise ValueError(f"--shard {text}: N must be between 1 and {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise ValueError(f"--shard {text}: K must be between 1 and N ({count})")
    return Shard(index, count)


def workspace_key(path: Path, root: Path) -> str:
    """``path`` as the partition knows it: relative to the workspace, forward slashes (the same on
    every machine whatever the checkout's folder); absolute only for a file outside it."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(root).as_posix()
    except ValueError:
        return resolved.as_posix()


def line_weight(path: Path) -> int:
    """The number of lines of ``path`` (at least 1); 1 for a file that is not read (too large, not a
    regular file): the static tier only reports those, it does not analyse them."""
    text = read_text(path)
    return 1 if text is None else text.count("\n") + 1


def assign(weights: Mapping[str, int], expensive: Collection[str], count: int) -> dict[str, int]:
    """{key: 1-based shard} for every key of ``weights``: longest processing time first, the keys
    in ``expensive`` and the others balanced separately."""
    out: dict[str, int] = {}
    groups = ([k for k in weights if k in expensive], [k for k in weights if k not in expensive])
    for group in groups:
        loads = [(0, i) for i in range(1, count + 1)]  # a heap of (lines assigned, shard)
        for key in sorted(group, key=lambda k: (-weights[k], k)):
            load, shard = heapq.heappop(loads)
            out[key] = shard
            heapq.heappush(loads, (load + weights[key], shard))
    return out


def partition_digest(assignment: Mapping[str, int], count: int) -> str:
    """What every shard of one run agrees on: the whole assignment, as a sha256."""
    text = json.dumps([count, sorted(assignment.items())], ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class ShardPlan:
    shard: Shard
    root: Path
    assignment: dict[str, int]  # workspace key -> shard
    dynamic_positions: dict[str, int]  # workspace key -> place in the full run's dynamic order
    total_files: int

    @property
    def digest(self) -> str:
        return partition_digest(self.assignment, self.shard.count)

    def owns(self, path: Path) -> bool:
        return self.assignment.get(workspace_key(path, self.root)) == self.shard.index

    def mine(self, paths: Iterable[Path]) -> list[Path]:
        """``paths`` that fall to this shard, in their order."""
        return [p for p in paths if self.owns(p)]


def plan(
    shard: Shard,
    root: Path,
    static_files: Sequence[Path],
    dynamic_targets: Sequence[Path],
    *,
    dynamic_tier: bool,
) -> ShardPlan:
    """The partition of every file the full run reports: the static tier's, and the dynamic
    tier's targets (the expensive group) when that tier runs (``dynamic_tier``)."""
    root = root.resolve()
    weights: dict[str, int] = {}
    for p in (*static_files, *dynamic_targets):
        key = workspace_key(p, root)
        if key not in weights:
            weights[key] = line_weight(p)
    if not dynamic_tier:  # not run: only the static tier's files are in the reports
        dynamic_targets = []
    positions: dict[str, int] = {}
    for p in dynamic_targets:
        positions.setdefault(workspace_key(p, root), len(positions))
    return ShardPlan(shard, root, assign(weights, set(positions), shard.count), positions, len(weights))


def run_options(
    paths: Sequence[str],
    overrides: Mapping[str, Any] | None,
    runtime_overrides: Mapping[str, Any] | None,
    *,
    static_only: bool,
    trusted: bool,
) -> dict[str, Any]:
    """The options that shape a run's findings, as its shards record them: every shard of one
    merge must have been given the same ones."""
    options: dict[str, Any] = jsonable(
        {
            "paths": list(paths),
            "rules": dict(sorted((overrides or {}).items())),
            "runtime": dict(sorted((runtime_overrides or {}).items())),
            "static_only": static_only,
            "trusted": trusted,
        }
    )
    return options


def shard_field(
    plan: ShardPlan,
    shown: Mapping[Path, str],
    dynamic_files: Sequence[str],
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``shard`` object of a shard's JSON report: which shard, its files (as the report shows
    them), the partition's digest and size, the run's options, and where each module this shard
    ran with the dynamic tier stands in the full run's order (``dynamic``: the merge puts
    ``summary.dynamic_files`` and ``summary.repros`` back in that order)."""
    mine = sorted(shown[p] for p in shown if plan.owns(p))
    by_key = {workspace_key(p, plan.root): p for p in shown}
    # this shard's modules in the order it ran them, which is the full run's order (the targets
    # were filtered, not reordered); summary.dynamic_files names them in that order
    targets = sorted(
        (position, key)
        for key, position in plan.dynamic_positions.items()
        if plan.assignment.get(key) == plan.shard.index
    )
    dynamic = [
        {"position": position, "module": module, "path": shown[by_key[key]]}
        for (position, key), module in zip(targets, dynamic_files, strict=False)
        if key in by_key
    ]
    return {
        "index": plan.shard.index,
        "count": plan.shard.count,
        "files": mine,
        "total_files": plan.total_files,
        "partition": plan.digest,
        "options": dict(options),
        "dynamic": dynamic,
    }


def source_lines(result: FileResult) -> dict[str, Any]:
    """``{"lines": [...]}``: the source text of each line a record of ``result`` points at (text,
    SARIF and GitLab output quote it), so a report rebuilt from the JSON renders the same;
    ``{}`` when there is none."""
    seen: dict[tuple[int, int | None], str] = {}
    for record in result.records:
        loc = record.location
        where = (max(loc.line, 1), loc.cell)
        if where not in seen and (text := result.line_text(*where)) is not None:
            seen[where] = text
    lines = [
        {"line": line, "text": text} if cell is None else {"cell": cell, "line": line, "text": text}
        for (line, cell), text in sorted(seen.items(), key=lambda item: (item[0][1] or 0, item[0][0]))
    ]
    return {"lines": lines} if lines else {}
