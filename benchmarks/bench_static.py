"""Static-tier throughput: files/s and ms per file over warp's examples tree, analysis time of a
generated 2,000-line module with 40 kernels, and re-analysis after an edit in that module
(`IncrementalAnalyser`, what the language server runs on every keystroke). Targets: the examples
tree in under 2 s, the 2,000-line file in under 20 ms, an edit p50 <= 15 ms and p95 <= 40 ms.

    python benchmarks/bench_static.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import ast
import gc
import statistics
import sys
import time
from importlib.util import find_spec
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from corpus import generated_module, with_kernel_factories

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.engine import analyse_source, check_paths, iter_python_files
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.model.module import build_model
from warp_harness.model.source import parse_source


def _examples() -> Path:
    spec = find_spec("warp")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "examples"


def edit_sequence(source: str, kernel: str = "kernel_10") -> list[str]:
    """Texts after each keystroke of realistic edits inside one kernel body of ``source``: typing a new
    statement character by character (unparsable until its line is complete), changing a literal,
    renaming a local, deleting characters, and one line insertion."""
    body = source.index(f"def {kernel}(")
    texts: list[str] = []
    text = source
    at = text.index("    t = wp.min(s, c)\n", body)
    for i, char in enumerate("    t2 = wp.max(t, 1.0)\n"):
        text = text[: at + i] + char + text[at + i :]
        texts.append(text)
    literal = text.index("* 0.5", body) + len("* 0.")
    for digit in "2468":
        text = text[:literal] + digit + text[literal + 1 :]
        texts.append(text)
    name = text.index("    u = wp.max(t, 0.0)", body) + len("    u")
    for char in "vw":
        text = text[:name] + char + text[name:]
        texts.append(text)
    for _ in range(2):
        text = text[:name] + text[name + 1 :]
        texts.append(text)
    line = text.index("    z = wp.sin(w)", body)
    texts.append(text[:line] + "    zz = w * 2.0\n" + text[line:])
    return texts


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _floor_times(source: str, repeats: int) -> list[float]:
    """ms of ``ast.parse`` plus one ``ast.walk`` of ``source``, the cyclic GC off as in `analyse_source`:
    the least any analysis that reads the whole AST can take on this machine."""
    times = []
    for _ in range(repeats):
        enabled = gc.isenabled()
        gc.disable()
        try:
            start = time.perf_counter()
            for _node in ast.walk(ast.parse(source)):
                pass
            times.append((time.perf_counter() - start) * 1000)
        finally:
            if enabled:
                gc.enable()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--skip-examples", action="store_true", help="no warp examples tree (no Warp installed)"
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    table = load_table()
    table_ms = (time.perf_counter() - t0) * 1000

    folder = None if args.skip_examples else _examples()
    files = list(iter_python_files([folder])) if folder else []
    tree_times = []
    for _ in range(args.repeats):
        if folder is None:
            break
        start = time.perf_counter()
        check_paths([folder])
        tree_times.append(time.perf_counter() - start)

    source = generated_module()
    parse_times, model_times = [], []
    for _ in range(args.repeats * 3):
        start = time.perf_counter()
        parsed = parse_source(source)
        parse_times.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        model = build_model(source, "generated.py", table, parsed)
        for kernel in model.kernels:
            model.types(kernel)
        model_times.append((time.perf_counter() - start) * 1000)
    gen_times = []
    for _ in range(args.repeats * 3):
        start = time.perf_counter()
        analyse_source(source, "generated.py", builtins=table)
        gen_times.append((time.perf_counter() - start) * 1000)

    floor_times = _floor_times(source, args.repeats * 3)

    edit_times, edit_full_times = [], []
    texts = edit_sequence(source)
    for _ in range(args.repeats):
        analyser = IncrementalAnalyser(table)
        analyser.analyse(source, "generated.py", Settings())
        for text in texts:
            start = time.perf_counter()
            analyser.analyse(text, "generated.py", Settings())
            edit_times.append((time.perf_counter() - start) * 1000)
    for _ in range(args.repeats):
        for text in texts:
            start = time.perf_counter()
            analyse_source(text, "generated.py", Settings(), builtins=table)
            edit_full_times.append((time.perf_counter() - start) * 1000)
    # the same keystrokes in a file that also makes kernels inside functions
    factory_source = with_kernel_factories(source)
    factory_texts = [with_kernel_factories(text) for text in texts]
    factory_times = []
    for _ in range(args.repeats):
        analyser = IncrementalAnalyser(table)
        analyser.analyse(factory_source, "factories.py", Settings())
        for text in factory_texts:
            start = time.perf_counter()
            analyser.analyse(text, "factories.py", Settings())
            factory_times.append((time.perf_counter() - start) * 1000)
    # typing a statement inside a kernel that a factory makes
    inside = factory_source.index("        x[i] = x[i] * s\n", factory_source.index("def make_scale_3("))
    inside_texts = [
        factory_source[:inside] + "        w2 = x[i] * 2.0\n"[:n] + factory_source[inside:]
        for n in range(1, len("        w2 = x[i] * 2.0\n") + 1)
    ]
    inside_times = []
    for _ in range(args.repeats):
        analyser = IncrementalAnalyser(table)
        analyser.analyse(factory_source, "factories.py", Settings())
        for text in inside_texts:
            start = time.perf_counter()
            analyser.analyse(text, "factories.py", Settings())
            inside_times.append((time.perf_counter() - start) * 1000)
    edit_p50, edit_p95 = _percentile(edit_times, 0.5), _percentile(edit_times, 0.95)
    full_p50 = _percentile(edit_full_times, 0.5)

    gen_median = statistics.median(gen_times)
    rows = [("builtin table load (cache)", f"{table_ms:.1f} ms", "", "")]
    if tree_times:
        tree_median = statistics.median(tree_times)
        rows.append(
            (
                f"warp examples ({len(files)} files)",
                f"{tree_median * 1000:.0f} ms",
                f"{len(files) / tree_median:.0f} files/s, {tree_median * 1000 / len(files):.2f} ms/file",
                "PASS" if tree_median < 2.0 else "FAIL (target < 2 s)",
            )
        )
    rows += [
        (
            f"generated module ({source.count(chr(10))} lines, 40 kernels)",
            f"{gen_median:.1f} ms",
            f"p95 {_percentile(gen_times, 0.95):.1f} ms",
            "PASS" if gen_median < 20 else "FAIL (target < 20 ms)",
        ),
        (
            "  of which: parse (CPython's ast.parse + recovery)",
            f"{statistics.median(parse_times):.1f} ms",
            "",
            "",
        ),
        ("  of which: model + type inference", f"{statistics.median(model_times):.1f} ms", "", ""),
        ("  floor: ast.parse + one ast.walk", f"{statistics.median(floor_times):.1f} ms", "", ""),
        (
            f"edit in one kernel ({len(texts)} keystrokes, incremental)",
            f"{edit_p50:.1f} ms",
            f"p95 {edit_p95:.1f} ms, max {max(edit_times):.1f} ms",
            "PASS" if edit_p50 <= 15 and edit_p95 <= 40 else "FAIL (target p50 <= 15 ms, p95 <= 40 ms)",
        ),
        (
            "  the same edits, 8 kernel factories in the file",
            f"{_percentile(factory_times, 0.5):.1f} ms",
            f"p95 {_percentile(factory_times, 0.95):.1f} ms",
            "",
        ),
        (
            f"  typing in a factory's kernel ({len(inside_texts)} keystrokes)",
            f"{_percentile(inside_times, 0.5):.1f} ms",
            f"p95 {_percentile(inside_times, 0.95):.1f} ms",
            "",
        ),
        (
            "  the same texts, full analyse_source",
            f"{full_p50:.1f} ms",
            f"p95 {_percentile(edit_full_times, 0.95):.1f} ms; full/edit p50 {full_p50 / edit_p50:.1f}x",
            "",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'median':>9}  {'detail':<40}  target")
    for name, median, detail, verdict in rows:
        print(f"{name:<{width}}  {median:>9}  {detail:<40}  {verdict}")


if __name__ == "__main__":
    main()
