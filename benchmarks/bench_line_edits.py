"""Edits that add or delete lines inside one kernel of a large file (issue 15): what the language server's
`IncrementalAnalyser` costs per keystroke when the lines below the edit move.

A generated module (`corpus.generated_module`) of ``--sizes`` kernels; in the kernel in the middle of the
file, ``--rounds`` times: Enter at the end of a statement (a new indented line), a name typed on the new
line one character at a time (every prefix parses), then a block of two lines pasted; last, every line
added is deleted again, one at a time. Each step is a text never analysed before. CPU ms per step
(`time.process_time`: the machine may be shared), by kind of step; and, once, reading the model after
the lines were added (the nodes below the edit, left behind, moved to their lines: the server's hover).

Two files of each size: the generated module as it is (``plain``), and one whose kernels carry records
quoting line numbers (``quoting``: each ``kernel_<n>`` launched with a 2-D dim, WH007 quoting the launch's
line, and reusing the thread index as a loop variable, WH024 quoting two lines of its own): lines moving
below the edit move the numbers those records quote.
The analyser is driven as the server drives it (`server.collector`): the cyclic collector off during an
analysis, run (young objects) after it; its cost, which the server pays after the diagnostics are out, is
the ``collect`` row.

Target: every kind of step (Enter, typing, paste, line delete) p95 <= 40 ms at 8,000 kernels (a cost that
does not grow with the kernels below the edit), in both files.

``--publish``: also what the server does with each analysis on the event loop, in rows of their own:
``convert all`` (every record to its LSP diagnostic: the server before the diagnostic cache),
``convert`` (`server.convert.DiagnosticCache`: only the records the analysis made anew), and ``free``
(dropping the previous analysis and the diagnostics it replaced: the server does it in the collector's
after-analysis step, once the diagnostics are out).

    python benchmarks/bench_line_edits.py [--sizes 2000 8000] [--rounds 6] [--files plain quoting] [--publish]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_lsp import edit_position
from corpus import generated_module, quoting_module

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.record import Record
from warp_harness.server.collector import Collector
from warp_harness.server.convert import DiagnosticCache, PositionMapper, to_diagnostic
from warp_harness.server.text_document import lsp_lines

TARGET_P95_MS = 40.0
STEPS = ("enter", "typing", "paste", "delete")  # the kinds of step the target is for


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


def quoting(records: list[Record]) -> int:
    """How many ``records`` quote a line number in their text."""
    return sum(" line " in r.message or " line " in (r.hint or "") for r in records)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--files", nargs="+", choices=["plain", "quoting"], default=["plain", "quoting"])
    parser.add_argument("--publish", action="store_true", help="also the server's conversion and freeing")
    args = parser.parse_args()
    table = load_table()
    collector = Collector()
    collector.start_up_done()  # as the server does once started (what start-up made, frozen)
    header = f"{'file':<8} {'kernels':>8} {'lines':>7} {'quotes':>7} {'first s':>8}  {'step':<10} {'n':>4}"
    header += f" {'p50 ms':>8} {'p95 ms':>8}  target"
    print(header)
    print("-" * len(header))
    for name in args.files:
        for size in args.sizes:
            text = generated_module(kernels=size, target_lines=0) if name == "plain" else quoting_module(size)
            analyser = IncrementalAnalyser(table)
            collector.pause()
            started = time.process_time()
            records = analyser.analyse(text, "/bench/generated.py", Settings()).records
            first = time.process_time() - started
            collector.after_analysis()
            cache = DiagnosticCache()
            uri = "file:///bench/generated.py"
            if args.publish:
                cache.convert(records, PositionMapper(lsp_lines(text), None), uri)
            previous: object = None
            costs: dict[str, list[float]] = {}
            for kind, version in steps(text, args.rounds):
                collector.pause()  # the server's worker: the collector off during an analysis
                started = time.process_time()
                analysis = analyser.analyse(version, "/bench/generated.py", Settings())
                costs.setdefault(kind, []).append((time.process_time() - started) * 1000)
                if kind == "paste" and len(costs[kind]) == args.rounds:
                    # the model read (the server's hover) after the lines added: the lagging nodes moved
                    started = time.process_time()
                    analysis.model  # noqa: B018
                    costs["read model"] = [(time.process_time() - started) * 1000]
                if args.publish:
                    mapper = PositionMapper(lsp_lines(version), None)
                    started = time.process_time()
                    [to_diagnostic(r, mapper, uri) for r in analysis.records]
                    costs.setdefault("convert all", []).append((time.process_time() - started) * 1000)
                    started = time.process_time()
                    cache.convert(analysis.records, mapper, uri)
                    costs.setdefault("convert", []).append((time.process_time() - started) * 1000)
                    garbage = [previous, cache.retired()]
                    previous = analysis
                    started = time.process_time()
                    del garbage
                    costs.setdefault("free", []).append((time.process_time() - started) * 1000)
                started = time.process_time()
                del analysis  # the previous one (without --publish): freed after the publication too
                collector.after_analysis()  # once the diagnostics are out
                costs.setdefault("collect", []).append((time.process_time() - started) * 1000)
            for n, (kind, ms) in enumerate(costs.items()):
                p95 = percentile(ms, 0.95)
                verdict = ""
                if kind in STEPS and size >= 8000:
                    verdict = (
                        "PASS" if p95 <= TARGET_P95_MS else f"FAIL (target p95 <= {TARGET_P95_MS:.0f} ms)"
                    )
                lead = f"{name:<8} {size:>8} {text.count(chr(10)):>7} {quoting(records):>7} {first:>8.1f}"
                lead = lead if n == 0 else " " * len(lead)
                print(f"{lead}  {kind:<10} {len(ms):>4} {statistics.median(ms):>8.1f} {p95:>8.1f}  {verdict}")


if __name__ == "__main__":
    main()
