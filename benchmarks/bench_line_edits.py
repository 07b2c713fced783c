"""Edits that add or delete lines inside one kernel of a large file (issue 15): what the language server's
`IncrementalAnalyser` costs per keystroke when the lines below the edit move.

A generated module (`corpus.generated_module`) of ``--sizes`` kernels; in the kernel in the middle of the
file, ``--rounds`` times: Enter at the end of a statement (a new indented line), a name typed on the new
line one character at a time (every prefix parses), then a block of two lines pasted; last, every line
added is deleted again, one at a time. Each step is a text never analysed before. CPU ms per step
(`time.process_time`: the machine may be shared), by kind of step; and, once, reading the model after
the lines were added (the nodes below the edit, left behind, moved to their lines: the server's hover).

Target: Enter and line delete p95 <= 40 ms at 8,000 kernels (a cost that does not grow with the kernels
below the edit).

    python benchmarks/bench_line_edits.py [--sizes 2000 8000] [--rounds 6]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_lsp import edit_position
from corpus import generated_module

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.incremental import IncrementalAnalyser

TARGET_P95_MS = 40.0


def steps(text: str, rounds: int) -> list[tuple[str, str]]:
    """(kind of step, text after it) for the edits the module docstring describes."""
    lines = text.splitlines(keepends=True)
    at = edit_position(text)[0] + 1  # below an assignment in a kernel body
    found: list[tuple[str, str]] = []
    added = 0
    for n in range(rounds):
        lines.insert(at, "    \n")
        found.append(("enter", "".join(lines)))
        word = f"value{n}"
        for k in range(1, len(word) + 1):
            lines[at] = f"    {word[:k]}\n"
            found.append(("typing", "".join(lines)))
        lines[at + 1 : at + 1] = [f"    p{n} = value{n} * 2.0\n", f"    q{n} = p{n} + 1.0\n"]
        found.append(("paste", "".join(lines)))
        at += 3
        added += 3
    for _ in range(added):
        at -= 1
        del lines[at]
        found.append(("delete", "".join(lines)))
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    table = load_table()
    header = f"{'kernels':>8} {'lines':>7} {'first s':>8}  {'step':<10} {'n':>4} {'p50 ms':>8} {'p95 ms':>8}"
    header += "  target"
    print(header)
    print("-" * len(header))
    for size in args.sizes:
        text = generated_module(kernels=size, target_lines=0)
        analyser = IncrementalAnalyser(table)
        started = time.process_time()
        analyser.analyse(text, "/bench/generated.py", Settings())
        first = time.process_time() - started
        costs: dict[str, list[float]] = {}
        for kind, version in steps(text, args.rounds):
            started = time.process_time()
            analysis = analyser.analyse(version, "/bench/generated.py", Settings())
            costs.setdefault(kind, []).append((time.process_time() - started) * 1000)
            if kind == "paste" and len(costs[kind]) == args.rounds:
                # the model read (the server's hover) after the lines added: the lagging nodes moved
                started = time.process_time()
                analysis.model  # noqa: B018
                costs["read model"] = [(time.process_time() - started) * 1000]
        for n, (kind, ms) in enumerate(costs.items()):
            p95 = percentile(ms, 0.95)
            verdict = ""
            if kind in ("enter", "delete") and size >= 8000:
                verdict = "PASS" if p95 <= TARGET_P95_MS else f"FAIL (target p95 <= {TARGET_P95_MS:.0f} ms)"
            lead = f"{size:>8} {text.count(chr(10)):>7} {first:>8.1f}" if n == 0 else " " * 25
            print(f"{lead}  {kind:<10} {len(ms):>4} {statistics.median(ms):>8.1f} {p95:>8.1f}  {verdict}")


if __name__ == "__main__":
    main()
