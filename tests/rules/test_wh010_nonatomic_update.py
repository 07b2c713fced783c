from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path

from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import warp as wp


@wp.kernel
def total(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    s[0] = s[0] + x[i]
"""

GOOD = """
import warp as wp


@wp.kernel
def total(x: wp.array(dtype=float), s: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    s[0] += x[i]
    y[i] = y[i] + x[i]
"""

# both forms in one module, launched with 1000 threads on the CPU
BOTH = """
import warp as wp


@wp.kernel
def racy(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    s[0] = s[0] + x[i]


@wp.kernel
def atomic(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    s[0] += x[i]


def run():
    x = wp.ones(1000, dtype=float, device="cpu")
    a = wp.zeros(1, dtype=float, device="cpu")
    b = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(racy, dim=1000, inputs=[x, a], device="cpu")
    wp.launch(atomic, dim=1000, inputs=[x, b], device="cpu")
    raise RuntimeError(f"RESULT racy={a.numpy()[0]} atomic={b.numpy()[0]}")
"""

_counter = itertools.count()


def forward_code(source: str) -> dict[str, str]:
    """Each kernel's generated forward body (Warp's code generator, no compile)."""
    import warp as wp

    folder = Path(tempfile.mkdtemp(prefix="wh010_"))
    name = f"wh010_codegen_{next(_counter)}"
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        code = {}
        for value in vars(module).values():
            if isinstance(value, wp.Kernel):
                opts = value.module.resolve_options(wp.config, 1)
                opts["output_arch"] = None
                value.adj.build(None, opts)
                code[value.key] = "\n".join(value.adj.blocks[0].body_forward)
        return code
    finally:
        sys.modules.pop(name, None)


def test_shared_element_update_is_flagged(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH010"])
    assert (record.location.line, record.location.col, record.location.end_col) == (8, 4, 22)
    assert record.severity is Severity.ERROR and "data race" in record.message
    assert "wp.atomic_add(s, 0, ...)" in (record.hint or "")


def test_atomic_forms_and_own_elements_pass(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH010"]) == []
    assert warp_error(GOOD) is None


def test_warp_compiles_plus_equals_to_an_atomic_and_both_forms_agree_on_the_cpu(analyse: Analyse) -> None:
    assert [r.location.kernel for r in analyse(BOTH, select=["WH010"])] == ["racy"]
    code = forward_code(BOTH)
    racy = next(c for k, c in code.items() if k.endswith("racy"))
    atomic = next(c for k, c in code.items() if k.endswith("atomic"))
    assert "atomic_add" in atomic and "atomic_add" not in racy
    # on the CPU threads run one after another: the race is invisible there (not on a GPU)
    error = warp_error(BOTH, launch=True)
    assert error is not None and "RESULT racy=1000.0 atomic=1000.0" in error


def test_fix_makes_it_atomic_and_warp_accepts_it(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH010"])
    assert record.fix is not None and record.fix.safe
    fixed, applied = apply_fixes(BAD, [record])
    assert applied == 1 and "    s[0] += x[i]\n" in fixed
    assert analyse(fixed, select=["WH010"]) == []
    assert warp_error(fixed) is None
    assert "atomic_add" in next(iter(forward_code(fixed).values()))


def test_subtraction_min_max_and_two_dimensional_elements(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def stats(x: wp.array(dtype=float), s: wp.array2d(dtype=float), n: int):
    i = wp.tid()
    if i >= n:
        return
    k = n // 2
    for j in range(3):
        s[k, j] = x[i] + s[k, j]
    s[0, 0] = s[0, 0] - x[i]
    s[0, 1] = wp.min(s[0, 1], x[i])
    s[0, 2] = max(x[i], s[0, 2])
    s[1, 0] = s[1, 0] + x[i] + 1.0
"""
    records = analyse(source, select=["WH010"])
    assert [r.location.line for r in records] == [12, 13, 14, 15, 16]
    fixes = [r.fix.edits[0].new_text for r in records if r.fix is not None]
    assert fixes == [
        "s[k, j] += x[i]",
        "s[0, 0] -= x[i]",
        "wp.atomic_min(s, 0, 1, x[i])",
        "wp.atomic_max(s, 0, 2, x[i])",
        "s[1, 0] += x[i] + 1.0",
    ]
    fixed, applied = apply_fixes(source, records)
    assert applied == 5
    assert analyse(fixed, select=["WH010"]) == []
    assert warp_error(fixed) is None


def test_updates_without_an_atomic_form_are_flagged_without_a_fix(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float), s: wp.array(dtype=float), c: wp.array(dtype=wp.int16)):
    i = wp.tid()
    s[0] = s[0] * x[i]
    s[1] *= 2.0
    c[0] += wp.int16(1)
    t = s[2]
    s[2] = t + x[i]
"""
    records = analyse(source, select=["WH010"])
    assert [r.location.line for r in records] == [8, 9, 10, 12]
    assert all(r.fix is None for r in records)
    assert "only `+=`, `-=`" in records[1].message
    assert "int16" in records[2].message
    assert records[3].related[0].location.line == 11  # where `s[2]` was read into `t`
    # Warp agrees that `+=` on an int16 array is a plain load-add-store, not an atomic
    assert warp_error(source) is None
    assert "atomic_add" not in next(iter(forward_code(source).values()))


def test_single_thread_updates_are_fine(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def guarded(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    if i == 0:
        s[0] = s[0] + x[i]


@wp.kernel
def early_exit(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    if i != 0:
        return
    s[0] = s[0] + x[i]


@wp.kernel
def serial(x: wp.array(dtype=float), s: wp.array(dtype=float), n: int):
    i = wp.tid()
    for j in range(n):
        s[0] = s[0] + x[j]


@wp.kernel
def no_tid(s: wp.array(dtype=int)):
    s[0] = s[0] + 1


@wp.kernel
def per_thread_index(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    k = 0
    if i > 5:
        k = 1
    s[k] = s[k] + x[i]
    j = i // 32
    s[j] = s[j] + x[i]


@wp.kernel
def idempotent(s: wp.array(dtype=float), flags: wp.array(dtype=int)):
    i = wp.tid()
    s[0] = wp.max(s[0], 1.0)
    flags[0] = flags[0] | 4


def run(x, s):
    wp.launch(serial, dim=1, inputs=[x, s, 10])
"""
    assert analyse(source, select=["WH010"]) == []


def test_lock_protected_sections_are_not_judged(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.func
def acquire(lock: wp.array(dtype=int)):
    while wp.atomic_cas(lock, 0, 0, 1) == 1:
        pass


@wp.kernel
def counter(count: wp.array(dtype=int), lock: wp.array(dtype=int)):
    i = wp.tid()
    acquire(lock)
    count[0] = count[0] + 1
    wp.atomic_exch(lock, 0, 0)
"""
    assert analyse(source, select=["WH010"]) == []


def test_on_the_cpu_target_it_is_a_warning(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH010"], target="cpu")
    assert record.severity is Severity.WARNING
