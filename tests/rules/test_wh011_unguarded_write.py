from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes

BAD = """
import warp as wp

wp.set_module_options({"mode": "debug"})


@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


def run(n=8):
    a = wp.zeros(n, dtype=float, device="cpu")
    wp.launch(fill, dim=n + 1, inputs=[a], device="cpu")
    wp.synchronize()
    print("RESULT", a.numpy().tolist(), flush=True)
"""

GUARDED = """
import warp as wp


@wp.kernel
def early(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    if i >= n:
        return
    a[i] = 1.0


@wp.kernel
def nested(a: wp.array(dtype=float)):
    i = wp.tid()
    if i < a.shape[0]:
        a[i] = 1.0


@wp.kernel
def derived(a: wp.array(dtype=float)):
    i = wp.tid()
    inside = i < a.shape[0]
    if not inside:
        return
    a[i] = 1.0


@wp.kernel
def clamped(a: wp.array(dtype=float)):
    i = wp.tid()
    a[wp.min(i, a.shape[0] - 1)] = 1.0


def run(n):
    a = wp.zeros(n, dtype=float)
    wp.launch(early, dim=n + 1, inputs=[a, n])
    wp.launch(nested, dim=n + 1, inputs=[a])
    wp.launch(derived, dim=n + 1, inputs=[a])
    wp.launch(clamped, dim=n + 1, inputs=[a])
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_dim_past_the_extent_without_guard_is_flagged(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH011"])
    assert record.location.line == _line(BAD, "a[i] = 1.0") and record.location.kernel == "fill"
    assert "below `n + 1`" in record.message and "`n` elements" in record.message
    assert "the last value of `i` writes out of bounds" in record.message
    assert [r.location.line for r in record.related] == [
        _line(BAD, "wp.launch(fill"),
        _line(BAD, "wp.zeros(n"),
    ]
    assert record.fix is not None and record.fix.safe


def test_fix_inserts_a_guard_after_the_tid_line(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH011"])
    fixed, applied = apply_fixes(BAD, [record])
    assert applied == 1
    assert "    i = wp.tid()\n    if i >= a.shape[0]:\n        return\n    a[i] = 1.0\n" in fixed
    assert analyse(fixed, select=["WH011"]) == []
    assert warp_error(fixed) is None


def test_warp_debug_mode_dies_on_the_unguarded_kernel_and_runs_the_fixed_one(
    analyse: Analyse, tmp_path: Path
) -> None:
    (record,) = analyse(BAD, select=["WH011"])
    fixed, _ = apply_fixes(BAD, [record])
    (tmp_path / "wh011_fixed.py").write_text(fixed, encoding="utf-8")
    (tmp_path / "wh011_unguarded.py").write_text(BAD, encoding="utf-8")
    # one process: the fixed module first (it must finish), then the unguarded one (it must die)
    driver = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import warp as wp
        wp.config.log_level = wp.LOG_WARNING
        wp.config.kernel_cache_dir = {str(tmp_path / "cache")!r}
        wp.init()
        import wh011_fixed
        wh011_fixed.run()
        import wh011_unguarded
        wh011_unguarded.run()
        print("UNGUARDED FINISHED", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert "RESULT [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]" in done.stdout, output
    assert "UNGUARDED FINISHED" not in done.stdout, output
    assert "Assertion failed" in output, output
    assert done.returncode in (-4, 132), output  # SIGILL


def test_guards_in_any_form_keep_it_quiet(analyse: Analyse) -> None:
    assert analyse(GUARDED, select=["WH011"]) == []


def test_only_provable_excess_is_reported(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


@wp.kernel
def rows(a: wp.array2d(dtype=float), b: wp.array(dtype=float)):
    i, j = wp.tid()
    a[i, j] = 1.0
    b[j] = 2.0


def exact(n, m):
    a = wp.zeros(n, dtype=float)
    wp.launch(fill, dim=n, inputs=[a])
    wp.launch(fill, dim=m + 1, inputs=[a])       # m unrelated to n
    wp.launch(fill, dim=n - 1, inputs=[a])


def reassigned(n):
    a = wp.zeros(n, dtype=float)
    n = n - 5
    wp.launch(fill, dim=n + 1, inputs=[a])


def in_a_loop(sizes):
    for n in sizes:
        a = wp.zeros(n, dtype=float)
        wp.launch(fill, dim=n + 1, inputs=[a])


def unknown_array(a, n):
    wp.launch(fill, dim=n + 1, inputs=[a])


def constants(n):
    b = wp.zeros(60, dtype=float)
    wp.launch(fill, dim=64, inputs=[b])
    grid = wp.zeros((n, 4), dtype=float)
    wp.launch(rows, dim=(n + 2, 60), inputs=[grid, b])
"""
    records = analyse(source, select=["WH011"])
    assert [(r.location.kernel, r.location.line) for r in records] == [("fill", 8), ("rows", 14)]
    first, second = records
    assert "below `64`" in first.message and "the last 4 values" in first.message
    assert "`a` (`grid`)" in second.message and "below `n + 2`" in second.message
    # the 2-D kernel also writes `b`: guarding on `a` alone changes what those threads do
    assert second.fix is not None and not second.fix.safe
