"""How the language server's per-keystroke cost grows with the number of kernels in the file (issue 15).

Generated modules (`corpus.generated_module`: per two kernels a ``@wp.func``, a tile kernel and a host
function launching both) with 1,000 to 8,000 kernels. For each: the first (whole-file) analysis and the
per-keystroke cost of `IncrementalAnalyser` (what the server runs) for a character typed into one
kernel's body and taken out again, as bench_lsp types it (toggle), and for a word typed there one character
at a time (typing: every keystroke a text not seen before, whose kernel is checked again), driven as the
server drives it (`server.collector`: the cyclic collector off during an analysis and run after it, not
counted, as the server runs it once the diagnostics are out). Then the real
server (`warp-harness serve` over stdio, bench_lsp's client) on the largest file: the time to first
diagnostics, per keystroke and the slowest keystroke.
Last, a file of ``--huge`` small kernels (59,000 by default): opened in the server, is a request sent
right after the open answered while the file is analysed, and how long does that analysis take?

Targets: per-keystroke p95 <= 40 ms on the 8,000-kernel file (toggle and typing), i.e. a cost that does
not grow with the kernels an edit does not touch; the server answers requests while a huge file is
analysed.
Each size stops typing after ``--budget-s`` seconds (at least 3 keystrokes) and runs in a child process
given up after ``--limit-s`` (the server waits as long for an answer), so the run ends in minutes even
where the analysis is slow; the table says how many keystrokes were measured.

    python benchmarks/bench_growth.py [--sizes 1000 2000 4000 8000] [--edits 20] [--huge 59000]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "server"))

from bench_lsp import SERVER_ENV, edit_position
from bench_lsp import run as run_server
from corpus import generated_module
from stdio_client import StdioClient

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.launch import module_command
from warp_harness.server.collector import Collector

_SMALL_KERNEL = """
@wp.kernel
def k{n}(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0
"""


def say(text: str) -> None:
    print(text, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def typed(text: str) -> tuple[str, str]:
    """``text`` with a character typed into a kernel body in the middle of the file, and ``text``."""
    lines = text.splitlines(keepends=True)
    line, col = edit_position(text)
    lines[line] = lines[line][:col] + "x" + lines[line][col:]
    return "".join(lines), text


def typing(text: str, count: int) -> list[str]:
    """``text`` after each of ``count`` characters is typed, one after the other, into the same kernel body
    (extending an assignment's target: every version parses, and none was analysed before)."""
    lines = text.splitlines(keepends=True)
    line, col = edit_position(text)
    before, after = "".join(lines[:line]) + lines[line][:col], lines[line][col:] + "".join(lines[line + 1 :])
    word = "".join(chr(ord("a") + n % 26) for n in range(count))
    return [before + word[: n + 1] + after for n in range(count)]


def _analysed(analyser: IncrementalAnalyser, collector: Collector, path: str, text: str) -> float:
    """Seconds to analyse ``text`` as the server does (`server.collector`): the cyclic collector off
    during the analysis and run after it, once the diagnostics would be out (not counted)."""
    collector.pause()
    started = time.perf_counter()
    analyser.analyse(text, path, Settings())
    elapsed = time.perf_counter() - started
    collector.after_analysis()
    return elapsed


def _keystrokes(
    analyser: IncrementalAnalyser, collector: Collector, path: str, versions: list[str], budget_s: float
) -> list[float]:
    costs: list[float] = []
    deadline = time.perf_counter() + budget_s
    for n, version in enumerate(versions):
        if n >= 3 and time.perf_counter() > deadline:
            break
        costs.append(_analysed(analyser, collector, path, version) * 1000)
    return costs


def in_process(kernels: int, edits: int, budget_s: float) -> dict[str, float]:
    text = generated_module(kernels=kernels, target_lines=0)
    versions = typed(text)
    analyser = IncrementalAnalyser(load_table())
    collector = Collector()
    collector.start_up_done()  # as the server does once started
    path = f"/bench/generated_{kernels}.py"
    first = _analysed(analyser, collector, path, text)
    costs = _keystrokes(analyser, collector, path, [versions[n % 2] for n in range(edits)], budget_s / 2)
    _analysed(analyser, collector, path, text)
    fresh = _keystrokes(analyser, collector, path, typing(text, edits), budget_s / 2)
    return {
        "kernels": kernels,
        "lines": text.count("\n"),
        "first_s": first,
        "p50": statistics.median(costs),
        "p95": percentile(costs, 0.95),
        "edits": len(costs),
        "typing_p50": statistics.median(fresh),
        "typing_p95": percentile(fresh, 0.95),
        "typing_edits": len(fresh),
    }


def in_child(arguments: list[str], limit_s: float) -> dict[str, float] | None:
    """This script run with ``arguments`` in a session of its own, its last line of output as JSON; None
    when it takes over ``limit_s`` (the whole session is killed then: a server it started too)."""
    child = subprocess.Popen(
        [sys.executable, __file__, *arguments], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, _ = child.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return None
    lines = out.splitlines()
    result: dict[str, float] | None = json.loads(lines[-1]) if child.returncode == 0 and lines else None
    return result


def huge_file(kernels: int, folder: Path, wait_s: float) -> dict[str, object]:
    """Open a file of ``kernels`` small kernels; ask the server for its info right after the open."""
    path = folder / f"huge_{kernels}.py"
    path.write_text("import warp as wp\n" + "".join(_SMALL_KERNEL.format(n=n) for n in range(kernels)))
    client = StdioClient(module_command("warp_harness", "serve"), folder, env=SERVER_ENV)
    try:
        client.initialize(folder)
        uri = path.as_uri()
        text = path.read_text()
        opened = time.perf_counter()
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        try:
            client.request("warp-harness/serverInfo", {}, timeout=wait_s)
            answered: float | None = time.perf_counter() - opened
        except TimeoutError:
            answered = None
        try:
            client.wait_diagnostics(uri, 1, timeout=max(1.0, wait_s - (time.perf_counter() - opened)))
            analysed: float | None = time.perf_counter() - opened
        except TimeoutError:
            analysed = None
        return {
            "kernels": kernels,
            "mb": len(text.encode()) / 1e6,
            "answered": answered,
            "analysed": analysed,
            "alive": client.alive(),
        }
    finally:
        client.proc.kill()
        client.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000, 8000])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--budget-s", type=float, default=20.0, help="typing time per size")
    # enough keystrokes for the collector to run as it does while someone types (every few hundred
    # allocations; a stall there shows in the slowest keystroke, not in p95 of a few)
    parser.add_argument("--server-edits", type=int, default=40)
    parser.add_argument("--huge", type=int, default=59000, help="kernels in the huge file (0: skip)")
    parser.add_argument("--huge-wait-s", type=float, default=30.0)
    parser.add_argument("--limit-s", type=float, default=150.0, help="give a size up after this long")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one size, as JSON (a child)
    parser.add_argument("--huge-in", help=argparse.SUPPRESS)  # the huge file's run in this folder (a child)
    parser.add_argument("--server-on", help=argparse.SUPPRESS)  # the server run on this file (a child)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(in_process(args.one, args.edits, args.budget_s)))
        return
    if args.huge_in:
        print(json.dumps(huge_file(args.huge, Path(args.huge_in), args.huge_wait_s)))
        return
    if args.server_on:
        command = module_command("warp_harness", "serve")
        row = run_server(
            "warp-harness", command, {}, Path(args.server_on), args.server_edits, 0.15, timeout=1e6
        )
        print(json.dumps({k: v for k, v in row.items() if k != "latencies"}))
        return

    say("IncrementalAnalyser (in process), keystrokes in one kernel's body: a character typed and taken out")
    say("again (toggle: from the second on, texts seen before), and a word typed (typing: every text new)")
    header = (
        f"{'kernels':>8} {'lines':>8} {'first analysis s':>17} {'toggle p50':>11} {'p95 ms':>7} "
        f"{'typing p50':>11} {'p95 ms':>7} {'keystrokes':>11}"
    )
    say(header)
    say("-" * len(header))
    for size in args.sizes:
        child = ["--one", str(size), "--edits", str(args.edits), "--budget-s", str(args.budget_s)]
        r = in_child(child, args.limit_s)
        if r is None:
            say(f"{size:>8} {'-':>8} {'> ' + str(round(args.limit_s)) + ' s (given up)':>17}")
            continue
        say(
            f"{r['kernels']:>8} {r['lines']:>8} {r['first_s']:>17.2f} {r['p50']:>11.1f} {r['p95']:>7.1f} "
            f"{r['typing_p50']:>11.1f} {r['typing_p95']:>7.1f} {r['edits']:>5} + {r['typing_edits']:<3}"
        )

    folder = Path(tempfile.mkdtemp(prefix="wh-bench-growth-"))
    largest = max(args.sizes)
    generated = folder / f"generated_{largest}.py"
    generated.write_text(generated_module(kernels=largest, target_lines=0))
    say(f"\nthe server (warp-harness serve over stdio) on {generated.name}, {args.server_edits} keystrokes")
    row = in_child(["--server-on", str(generated), "--server-edits", str(args.server_edits)], args.limit_s)
    if row is None:
        say(f"no diagnostics within {args.limit_s:.0f} s (given up)")
    else:
        say(
            f"first diagnostics {row['first']:.0f} ms, p50 {row['p50']:.1f} ms, p95 {row['p95']:.1f} ms, "
            f"slowest {row['max']:.0f} ms, peak RSS {row['rss']:.0f} MB"
        )

    if args.huge:
        found = in_child(["--huge-in", str(folder), "--huge", str(args.huge)], args.huge_wait_s * 3 + 60)
        if found is None:
            say(f"\na file of {args.huge} small kernels: no report within {args.huge_wait_s * 3 + 60:.0f} s")
            return
        r2 = dict(found)
        answered = r2["answered"]
        analysed = r2["analysed"]
        say(f"\na file of {r2['kernels']} small kernels ({r2['mb']:.1f} MB) opened in the server:")
        say(
            "  a request sent right after the open: "
            + (f"answered in {answered * 1000:.0f} ms" if isinstance(answered, float) else "no answer")
            + f" (waited up to {args.huge_wait_s:.0f} s)"
        )
        say(
            "  its diagnostics: "
            + (f"after {analysed:.1f} s" if isinstance(analysed, float) else "not within the wait")
            + f"; server {'alive' if r2['alive'] else 'DEAD'}"
        )


if __name__ == "__main__":
    main()
