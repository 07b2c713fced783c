"""Helpers of the daemon tests (imported by name: ``from daemon_helpers import ...``)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from warp_harness.daemon.options import RuntimeOptions

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "contracts"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# options that keep the suite fast: short benchmark, quick hang detection
FAST = RuntimeOptions(
    bench_repeats=10, bench_max_time_s=0.05, bench_warmup=1, launch_timeout_s=2.0, timeout_s=120.0
)


def rules_of(result: dict[str, Any]) -> list[str]:
    return [r["rule"] for r in result["records"]]


def by_rule(result: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [r for r in result["records"] if r["rule"] == rule]


def def_line(path: Path, function: str) -> int:
    """1-based line of ``def function`` in ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.startswith(f"def {function}("))


def access_span(path: Path, text: str) -> tuple[int, int, int]:
    """(1-based line, col, end col) of the first occurrence of ``text`` in ``path``."""
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        col = line.find(text)
        if col >= 0:
            return i + 1, col, col + len(text)
    raise AssertionError(f"{text!r} not in {path}")
