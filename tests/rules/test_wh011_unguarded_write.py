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


# the symbolic spellings (`warp_harness.model.shapes`): a parameter's own shape, whole blocks, reads
SYMBOLIC = """
import math

import warp as wp


@wp.kernel
def smooth(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = 0.5 * src[i]


@wp.kernel
def damp(v: wp.array(dtype=wp.vec3), k: float):
    tid = wp.tid()
    v[tid] = v[tid] * k


def smooth_all(src, dst):
    wp.launch(smooth, dim=src.shape[0] + 1, inputs=[src, dst])


def damp_all(v):
    n = v.shape[0]
    wp.launch(damp, dim=((n + 255) // 256) * 256, inputs=[v, 0.99])


def damp_blocks(n: int):
    v = wp.zeros(n, dtype=wp.vec3)
    blocks = (n + 127) // 128
    wp.launch(damp, dim=blocks * 128, inputs=[v, 0.5])
"""


def test_reads_past_a_parameters_extent_are_flagged(analyse: Analyse) -> None:
    records = analyse(SYMBOLIC, select=["WH011"])
    read = next(r for r in records if r.location.kernel == "smooth")
    line = _line(SYMBOLIC, "dst[i] = 0.5 * src[i]")
    # the read is marked where it is; `dst`'s extent is unknown, so its write is not judged
    assert (read.location.line, read.location.col) == (line, SYMBOLIC.splitlines()[line - 1].index("src[i]"))
    assert read.severity == Severity.ERROR
    assert "`src[i]` is read for every `i` below `src.shape[0] + 1`" in read.message
    assert "`src` has `src.shape[0]` elements" in read.message
    assert "the last value of `i` reads out of bounds" in read.message
    assert read.fix is not None and not read.fix.safe  # the other threads' writes change


def test_launches_rounded_up_to_whole_blocks_are_warnings(analyse: Analyse) -> None:
    records = [r for r in analyse(SYMBOLIC, select=["WH011"]) if r.location.kernel == "damp"]
    # one finding per array and index; each launch is listed
    (record,) = records
    assert record.severity == Severity.WARNING
    assert record.location.line == _line(SYMBOLIC, "v[tid] = v[tid] * k")
    assert "rounded up past `v.shape[0]` (by up to 255)" in record.message
    assert "unless `v.shape[0]` is a multiple of the block" in record.message
    assert [r.location.line for r in record.related] == [
        _line(SYMBOLIC, "wp.launch(damp, dim=((n"),
        _line(SYMBOLIC, "wp.launch(damp, dim=blocks"),
        _line(SYMBOLIC, "v = wp.zeros(n"),
    ]


def test_rounding_to_a_known_size_is_an_error(analyse: Analyse) -> None:
    source = """
import warp as wp

N = 1000
BLOCK = 256


@wp.kernel
def scale(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = 2.0 * x[i]


def run():
    x = wp.zeros(N, dtype=float)
    wp.launch(scale, dim=(N + BLOCK - 1) // BLOCK * BLOCK, inputs=[x])
"""
    (record,) = analyse(source, select=["WH011"])
    assert record.severity == Severity.ERROR and "the last 24 values of `i` write" in record.message


def test_symbolic_guards_and_exact_dims_pass(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def early(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    if i >= n:
        return
    out[i] = a[i]


@wp.kernel
def nested(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if i < a.shape[0]:
        out[i] = a[i]


@wp.kernel
def selected(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    x = a[i] if i < n else 0.0
    if i < n:
        out[i] = x


@wp.kernel
def optional(a: wp.array(dtype=bool), out: wp.array(dtype=float)):
    worldid = wp.tid()
    if a.shape[0] > 0 and not a[worldid]:
        return
    if worldid < out.shape[0]:
        out[worldid] = 1.0


@wp.kernel
def world_major(a: wp.array2d(dtype=float), nworld: int):
    worldid, dofid = wp.tid()
    if worldid >= nworld:
        return
    a[worldid, dofid] = 0.0


def run(a, out, n: int, img):
    wp.launch(early, dim=a.shape[0] + 1, inputs=[a, out, a.shape[0]])
    wp.launch(nested, dim=((n + 255) // 256) * 256, inputs=[a, out])
    wp.launch(selected, dim=len(a) + 1, inputs=[a, out, len(a)])
    wp.launch(optional, dim=out.shape[0] + 2, inputs=[a, out])
    wp.launch(world_major, dim=(img.shape[0] + 1, img.shape[1]), inputs=[img, img.shape[0]])


@wp.kernel
def copy(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = src[i]


@wp.kernel
def copy2d(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float)):
    i, j = wp.tid()
    dst[i, j] = src[i, j]


def exact(src, img, n: int):
    wp.launch(copy, dim=src.shape[0], inputs=[src, wp.empty_like(src)])
    wp.launch(copy, dim=len(src), inputs=[src, wp.zeros_like(src)])
    wp.launch(copy, dim=src.shape, inputs=[src, wp.zeros(src.shape[0])])
    out = wp.empty_like(img)
    wp.launch(copy2d, dim=img.shape, inputs=[img, out])
    grid = wp.zeros((n, 2 * n), dtype=float)
    wp.launch(copy2d, dim=grid.shape, inputs=[grid, grid])
    wp.launch(copy2d, dim=(n, 2 * n), inputs=[grid, grid])
    wp.launch(copy, dim=(n // 256) * 256, inputs=[wp.zeros(n), wp.zeros(n)])
    wp.launch(copy, dim=(0, src.shape[0] + 1), inputs=[src, src])
"""
    assert analyse(source, select=["WH011"]) == []
    assert warp_error(source) is None


def test_two_dimensional_and_class_field_spellings(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def stencil(img: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = img[i, j]


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    p = wp.tid()
    x[p] = x[p] + v[p] * dt


class Cloth:
    def __init__(self, n):
        self.n = n
        self.x = wp.zeros(n, dtype=wp.vec3)
        self.v = wp.zeros(n, dtype=wp.vec3)

    def step(self, dt):
        wp.launch(integrate, dim=self.n + 1, inputs=[self.x, self.v, dt])


def filter_image(img):
    h, w = img.shape
    out = wp.empty_like(img)
    wp.launch(stencil, dim=(h, w + 1), inputs=[img, out])
"""
    records = analyse(source, select=["WH011"])
    assert [(r.location.kernel, r.location.line) for r in records] == [
        ("stencil", _line(source, "out[i, j] = img[i, j]")),
        ("stencil", _line(source, "out[i, j] = img[i, j]")),
        ("integrate", _line(source, "x[p] = x[p] + v[p] * dt")),
        ("integrate", _line(source, "x[p] = x[p] + v[p] * dt")),
    ]
    out, img, x, v = records
    assert "`out[i, j]` is written for every `j` below `w + 1`" in out.message and "axis 1" in out.message
    assert "`out` has `img.shape[1]` elements along axis 1" in out.message
    assert "`img[i, j]` is read" in img.message
    assert "below `self.n + 1`" in x.message and "`x` (`self.x`) has `self.n` elements" in x.message
    assert "`v[p]` is read" in v.message


@pytest.mark.slow
def test_warp_reads_past_the_end_silently_in_release_mode(analyse: Analyse) -> None:
    """A read one past a view's end returns the next element of the memory behind it: no error, a value
    that is not the array's (release mode, the default)."""
    source = (
        SYMBOLIC
        + """

def run():
    import numpy as np

    n = 8
    memory = wp.array(np.arange(2 * n, dtype=np.float32), device="cpu")
    src = memory[:n]                                 # a view: element n lies inside `memory`
    dst = wp.zeros(n + 1, dtype=float, device="cpu")
    wp.launch(smooth, dim=src.shape[0] + 1, inputs=[src, dst], device="cpu")
    raise RuntimeError(f"RESULT {dst.numpy().tolist()}")
"""
    )
    assert any(r.location.kernel == "smooth" for r in analyse(source, select=["WH011"]))
    error = warp_error(source, launch=True)
    assert error is not None and error.startswith("RuntimeError: RESULT"), error
    # src[8] does not exist; Warp read memory[8] == 8.0 and the thread wrote 0.5 * 8.0
    assert error.endswith("[0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]"), error


ROUNDED = """
import warp as wp

wp.config.mode = "debug"


@wp.kernel
def damp(v: wp.array(dtype=float), k: float):
    tid = wp.tid()
    v[tid] = v[tid] * k


def run(n=1000):
    v = wp.ones(n, dtype=float, device="cpu")
    wp.launch(damp, dim=((n + 255) // 256) * 256, inputs=[v, 0.5], device="cpu")
    wp.synchronize()
    print("RESULT", float(v.numpy().sum()), flush=True)
"""


@pytest.mark.slow
def test_warp_debug_mode_stops_the_launch_rounded_up_to_whole_blocks(
    analyse: Analyse, tmp_path: Path
) -> None:
    (record,) = analyse(ROUNDED, select=["WH011"])
    assert record.severity == Severity.WARNING and "rounded up past `n`" in record.message
    fixed, applied = apply_fixes(ROUNDED, [record], safe_only=False)
    assert applied == 1 and analyse(fixed, select=["WH011"]) == []
    (tmp_path / "wh011_rounded_fixed.py").write_text(fixed, encoding="utf-8")
    (tmp_path / "wh011_rounded.py").write_text(ROUNDED, encoding="utf-8")
    driver = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import warp as wp
        wp.config.log_level = wp.LOG_WARNING
        wp.config.kernel_cache_dir = {str(tmp_path / "cache")!r}
        wp.init()
        import wh011_rounded_fixed
        wh011_rounded_fixed.run()
        import wh011_rounded
        wh011_rounded.run()
        print("UNGUARDED FINISHED", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    # the guarded launch: 1024 threads, the 24 past the end return; every element halved once
    assert "RESULT 500.0" in done.stdout, output
    # the unguarded one: thread 1000 reads v[1000]; debug mode's bounds check stops the process
    assert "UNGUARDED FINISHED" not in done.stdout, output
    assert "Assertion failed" in output and "arr.shape[0]" in output, output
    assert done.returncode in (-4, 132), output  # SIGILL


@pytest.mark.parametrize("tree", ["examples", "tests"])
def test_an_access_no_name_guards_is_guarded_by_no_derived_name(tree: str) -> None:
    """`_unguarded_accesses` skips following the values computed from the index when no condition on any
    name of the kernel guards an access: `guarded` and `_expression_guarded` only grow with the names. Over
    Warp's examples and tests, checked against the derived names themselves."""
    import ast

    import warp

    from warp_harness.config import Settings
    from warp_harness.engine import _builtins
    from warp_harness.hardware import load_profile
    from warp_harness.model.index import full_body_index
    from warp_harness.model.inference import thread_indices
    from warp_harness.model.module import build_model
    from warp_harness.model.types import Array
    from warp_harness.rules import wh011_unguarded_write as rule
    from warp_harness.rules.base import RuleContext

    shortcuts = 0
    for path in sorted((Path(warp.__file__).parent / tree).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "wp.tid" not in text:
            continue
        model = build_model(text, str(path), builtins=_builtins())
        ctx = RuleContext(model, load_profile("sm_86"), _builtins(), Settings())
        for kernel in model.kernels:
            if not kernel.is_kernel or not kernel.has_python_body:
                continue
            tids = thread_indices(kernel, model.imports)
            params = {p.name: p for p in kernel.params if isinstance(p.type, Array)}
            if not params or not tids.tid_vars:
                continue
            body = kernel.node.body
            guards = rule._Guards(kernel.node)
            derived = rule._Derived(kernel.node)
            everything = {n.id for n in full_body_index(kernel.node).of(ast.Name)} | set(params)
            for stmt, target, name, index, _, write in rule._candidates(kernel.node, params, tids.tid_vars):
                names = derived.of(index.id) | {name}
                assert names <= everything
                if guards.guarded(body, stmt, everything) is not False:
                    continue
                assert guards.guarded(body, stmt, names) is False, (path, stmt.lineno)
                if write or not rule._expression_guarded(ctx, kernel, guards, stmt, target, everything):
                    assert write or not rule._expression_guarded(ctx, kernel, guards, stmt, target, names)
                    shortcuts += 1
    assert shortcuts > 20
