"""`warp-harness tune` results as editor feedback: the best configuration found, as an info
diagnostic on the first tunable's line with a quick fix that rewrites the constants.

The results are JSON files the tune command leaves in ``<workspace>/.warp-harness/tune/``
(daemon/tune.py ``store_result``); reading them executes nothing. A file that is corrupt, one
without the tag this user's harness gives its results (``user_state.tagged_json``: a repository
can ship the folder), or a ``.warp-harness`` that leads out of the workspace, is ignored.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, TypeGuard

from warp_harness.record import Fix, Location, Record, Severity, Stage
from warp_harness.safe_read import MAX_CONFIG_BYTES, read_regular_text
from warp_harness.tunables import constant_edits, current_values

TUNED_RULE = "WHD034"
log = logging.getLogger("warp_harness.server")


class TuneResults:
    """The tuning results of a workspace, re-read when their files change."""

    def __init__(self) -> None:
        self._files: dict[Path, tuple[int, dict[str, Any] | None]] = {}

    def for_path(self, roots: list[Path], path: str) -> list[dict[str, Any]]:
        target = str(Path(path).resolve())
        found = []
        for root in roots:
            folder = root / ".warp-harness" / "tune"
            if not folder.is_dir():
                continue
            from warp_harness.daemon.cache import inside  # ~20 ms of imports a workspace never tuned skips

            if not inside(folder, root):
                continue
            for file in sorted(folder.glob("*.json")):
                data = self._load(file, root)
                if data is not None and data.get("path") == target:
                    found.append(data)
        return found

    def _load(self, file: Path, root: Path) -> dict[str, Any] | None:
        try:
            mtime = file.stat().st_mtime_ns
        except OSError:
            return None
        cached = self._files.get(file)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        data: dict[str, Any] | None = None
        from warp_harness import user_state  # hmac, hashlib: loaded once a result is there to check
        from warp_harness.daemon.cache import inside

        if inside(file, root):
            try:
                loaded = json.loads(read_regular_text(file, MAX_CONFIG_BYTES))
                data = loaded if isinstance(loaded, dict) and loaded.get("version") == 1 else None
                if data is not None and not user_state.verify_json(data, purpose=user_state.TUNE_RESULT):
                    # shipped by a repository, or written by someone else: never a suggestion
                    log.warning("warp-harness: ignoring the tuning result %s: not written by this user", file)
                    data = None
            except (OSError, ValueError, RecursionError) as exc:
                # too large, not a regular file, not JSON, nested too deeply, a 5000-digit number
                log.warning("warp-harness: ignoring the tuning result %s: %s", file, _why(exc))
                data = None
        self._files[file] = (mtime, data)
        return data


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    return str(exc)[:120] or type(exc).__name__


def _config_text(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def tuned_records(text: str, path: str, results: list[dict[str, Any]]) -> list[Record]:
    """One info record per result whose best configuration differs from what the text has now."""
    records = []
    for result in results:
        try:
            record = _tuned_record(text, path, result)
        except (ValueError, TypeError, OverflowError, KeyError, RecursionError) as exc:
            log.warning("warp-harness: ignoring a tuning result for %s: %s", path, _why(exc))
            continue
        if record is not None:
            records.append(record)
    return records


def _plain(value: Any) -> bool:
    """A value a module-level constant can be rewritten to (no nesting, a finite number)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, bool | int | str) and len(str(value)) <= 100


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _tuned_record(text: str, path: str, result: dict[str, Any]) -> Record | None:
    """The record for one stored result; None when it is already applied or no longer fits."""
    best = result.get("best")
    if not isinstance(best, dict) or not isinstance(best.get("config"), dict) or not best["config"]:
        return None
    config: dict[str, Any] = best["config"]
    if not all(isinstance(k, str) and _plain(v) for k, v in config.items()):
        return None
    if current_values(text, list(config)) == config:
        return None  # already applied
    try:
        edits = constant_edits(text, config)
    except KeyError:
        return None  # a tunable is no longer assigned at module level
    first = min(edits, key=lambda e: (e.line, e.col))
    median = best.get("median_s")
    speedup = result.get("speedup")
    current = result.get("current") if isinstance(result.get("current"), dict) else None
    facts = []
    if _number(speedup) and current is not None:
        facts.append(f"{speedup:.2f}x the speed of {_config_text(current.get('config') or {})}")
    if _number(median):
        facts.append(f"median {median * 1e6:.1f} µs")
    if _number(best.get("shared_bytes")):
        facts.append(f"{best['shared_bytes'] / 1024:.1f} KiB shared memory per block")
    target = f" on {result['target']}" if result.get("target") else ""
    return Record(
        stage=Stage.PERFORMANCE,
        rule=TUNED_RULE,
        severity=Severity.INFO,
        location=Location(path, first.line, first.col, first.line, first.end_col, str(result.get("kernel"))),
        message=f"warp-harness tune{target}: kernel `{result.get('kernel')}` is fastest with "
        f"{_config_text(config)}" + (f" ({'; '.join(facts)})" if facts else ""),
        expected=config,
        actual=current_values(text, list(config)),
        hint=f"set {_config_text(config)}",
        fix=Fix(f"Apply the tuned configuration {_config_text(config)}", tuple(edits), safe=False),
    )
