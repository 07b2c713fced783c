"""WH024: a loop variable reuses the thread index's name and the code after the loop reads it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import warp as wp


@wp.kernel
def center(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for i in range(n):
        s += a[i]
    out[i] = a[i] - s / float(n)


@wp.kernel
def row_max(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), n: int):
    i, j = wp.tid()
    m = float(-1.0e30)
    for j in range(n):
        m = wp.max(m, a[i, j])
    if m > 0.0:
        out[i, j] = a[i, j] / m
"""

GOOD = """
import warp as wp


@wp.kernel
def first_positive(a: wp.array(dtype=float), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    for i in range(n):
        if a[i] > 0.0:
            break
    out[0] = i


@wp.kernel
def used_before(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    x = a[i]
    s = float(0.0)
    for i in range(n):
        s += a[i] * x
    wp.atomic_add(out, 0, s)


@wp.kernel
def gather(idx: wp.array(dtype=int), a: wp.array(dtype=float)):
    tid = wp.tid()
    tid = idx[tid]
    a[tid] = 1.0


@wp.kernel
def bound_again(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for i in range(n):
        s += a[i]
    i = wp.tid()
    out[i] = s


@wp.kernel
def own_variable(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        s += a[j]
    out[i] = a[i] - s / float(n)
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_reads_after_the_loop_are_flagged(analyse: Analyse) -> None:
    center, row_max = analyse(BAD, select=["WH024"])
    assert center.severity is Severity.ERROR and center.location.kernel == "center"
    assert center.location.line == _line(BAD, "out[i] = a[i] - s")
    assert (
        "the loop's last value" in center.message
        and "unassigned when the loop does not run" in center.message
    )
    assert [r.location.line for r in center.related] == [
        _line(BAD, "for i in range(n)"),
        _line(BAD, "i = wp.tid()"),
    ]
    assert row_max.location.kernel == "row_max" and row_max.location.line == _line(BAD, "if m > 0.0") + 1


def test_warp_compiles_it() -> None:
    assert warp_error(BAD) is None


def test_the_fix_renames_the_loop_variable(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH024"])
    fixed, applied = apply_fixes(BAD, records)
    assert applied == 2
    assert "    for j in range(n):\n        s += a[j]\n    out[i] = a[i] - s / float(n)" in fixed
    assert "    for k in range(n):\n        m = wp.max(m, a[i, k])" in fixed
    assert analyse(fixed, select=["WH024"]) == []
    assert warp_error(fixed) is None


def test_legitimate_rebindings_are_not_flagged(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH024"]) == []
    assert warp_error(GOOD) is None


RUN = """
import numpy as np
import warp as wp


@wp.kernel
def center(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for i in range(n):
        s += a[i]
    out[i] = a[i] - s / float(n)


@wp.kernel
def center_fixed(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        s += a[j]
    out[i] = a[i] - s / float(n)


def run():
    a = wp.array(np.arange(5, dtype=np.float32), device="cpu")
    bad = wp.zeros(5, dtype=float, device="cpu")
    good = wp.zeros(5, dtype=float, device="cpu")
    wp.launch(center, dim=5, inputs=[a, bad, 5], device="cpu")
    wp.launch(center_fixed, dim=5, inputs=[a, good, 5], device="cpu")
    raise RuntimeError(f"RESULT bad={bad.numpy().tolist()} good={good.numpy().tolist()}")
"""


@pytest.mark.slow
def test_on_the_cpu_every_thread_writes_the_last_element() -> None:
    error = warp_error(RUN, launch=True)
    assert error is not None, error
    assert "bad=[0.0, 0.0, 0.0, 0.0, 2.0]" in error, error
    assert "good=[-2.0, -1.0, 0.0, 1.0, 2.0]" in error, error


EMPTY = """
import warp as wp


@wp.kernel
def shift(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for i in range(n):
        s += a[i]
    out[i] = s + 1.0
"""


@pytest.mark.slow
def test_on_the_cpu_an_empty_loop_leaves_the_index_unassigned(analyse: Analyse, tmp_path: Path) -> None:
    """With ``n = 0`` the generated C++ reads the loop's never-assigned variable: the process crashes."""
    assert [r.location.line for r in analyse(EMPTY, select=["WH024"])] == [_line(EMPTY, "out[i] = s + 1.0")]
    module = tmp_path / "wh024_empty.py"
    module.write_text(EMPTY, encoding="utf-8")
    driver = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import numpy as np
        import warp as wp
        wp.config.log_level = wp.LOG_WARNING
        wp.config.kernel_cache_dir = {str(tmp_path / "cache")!r}
        import wh024_empty
        a = wp.zeros(8, dtype=float, device="cpu")
        out = wp.zeros(8, dtype=float, device="cpu")
        wp.launch(wh024_empty.shift, dim=8, inputs=[a, out, 0], device="cpu")
        wp.synchronize()
        print("FINISHED", out.numpy().tolist(), flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=300)
    # were `i` still the thread index, every element would be 1.0; the index is whatever the stack held
    # (measured: SIGSEGV)
    assert done.returncode != 0 or "FINISHED [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]" not in done.stdout, (
        done.stdout + done.stderr
    )
