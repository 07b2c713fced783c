"""Static-tier throughput: files/s and ms per file over warp's examples tree, and analysis time of
a generated 2,000-line module with 40 kernels. Targets (issue 2): the examples tree in under 2 s,
the 2,000-line file in under 20 ms.

    python benchmarks/bench_static.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from importlib.util import find_spec
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from corpus import generated_module
from warp_harness.builtins import load_table
from warp_harness.engine import analyse_source, check_paths, iter_python_files
from warp_harness.model.module import build_model
from warp_harness.model.source import parse_source


def _examples() -> Path:
    spec = find_spec("warp")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "examples"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    t0 = time.perf_counter()
    table = load_table()
    table_ms = (time.perf_counter() - t0) * 1000

    folder = _examples()
    files = list(iter_python_files([folder]))
    tree_times = []
    for _ in range(args.repeats):
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

    tree_median = statistics.median(tree_times)
    gen_median = statistics.median(gen_times)
    rows = [
        ("builtin table load (cache)", f"{table_ms:.1f} ms", "", ""),
        (
            f"warp examples ({len(files)} files)",
            f"{tree_median * 1000:.0f} ms",
            f"{len(files) / tree_median:.0f} files/s, {tree_median * 1000 / len(files):.2f} ms/file",
            "PASS" if tree_median < 2.0 else "FAIL (target < 2 s)",
        ),
        (
            f"generated module ({source.count(chr(10))} lines, 40 kernels)",
            f"{gen_median:.1f} ms",
            f"p95 {sorted(gen_times)[int(len(gen_times) * 0.95) - 1]:.1f} ms",
            "PASS" if gen_median < 20 else "FAIL (target < 20 ms)",
        ),
    ]
    rows.insert(
        3,
        (
            "  of which: parse (CPython's ast.parse + recovery)",
            f"{statistics.median(parse_times):.1f} ms",
            "",
            "",
        ),
    )
    rows.insert(4, ("  of which: model + type inference", f"{statistics.median(model_times):.1f} ms", "", ""))
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  {'median':>9}  {'detail':<40}  target")
    for name, median, detail, verdict in rows:
        print(f"{name:<{width}}  {median:>9}  {detail:<40}  {verdict}")


if __name__ == "__main__":
    main()
