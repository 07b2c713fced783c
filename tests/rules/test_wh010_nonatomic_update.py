from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest
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
    assert "wp.atomic_add(s, 0, x[i])" in (record.hint or "")


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


# --- races through a loaded index, under a thread-dependent condition, compare-and-store ----------------

# the races users write, one kernel each; `apply_fixes` turns every one into its atomic form
RACES = """
import warp as wp


@wp.kernel
def histogram(values: wp.array(dtype=int), bins: wp.array(dtype=int)):
    i = wp.tid()
    b = values[i]
    bins[b] = bins[b] + 1


@wp.kernel
def binned(x: wp.array(dtype=float), scale: float, bins: wp.array(dtype=float)):
    i = wp.tid()
    bins[int(x[i] * scale)] = bins[int(x[i] * scale)] + 1.0


@wp.kernel
def springs(edges: wp.array2d(dtype=int), x: wp.array(dtype=wp.vec3), ke: float, f: wp.array(dtype=wp.vec3)):
    e = wp.tid()
    a = edges[e, 0]
    b = edges[e, 1]
    force = (x[b] - x[a]) * ke
    f[a] = f[a] + force
    f[b] = f[b] - force


@wp.kernel
def cfl(v: wp.array(dtype=wp.vec3), h: float, eps: float, dt: wp.array(dtype=float)):
    i = wp.tid()
    speed = wp.length(v[i])
    if speed > eps:
        dt[0] = wp.min(dt[0], h / speed)


@wp.kernel
def nearest(p: wp.array(dtype=wp.vec3), best: wp.array(dtype=float)):
    i = wp.tid()
    d = wp.length(p[i])
    if d < best[0]:
        best[0] = d
"""

FIXED_LINES = [
    "    bins[b] += 1\n",
    "    bins[int(x[i] * scale)] += 1.0\n",
    "    f[a] += force\n",
    "    f[b] -= force\n",
    "        wp.atomic_min(dt, 0, h / speed)\n",
    "    wp.atomic_min(best, 0, d)\n",
]


def test_races_users_write_are_reported_with_their_evidence(analyse: Analyse) -> None:
    records = analyse(RACES, select=["WH010"])
    found = {(r.location.kernel, r.location.line): r for r in records}
    assert sorted(found) == [
        ("binned", 15),
        ("cfl", 33),
        ("histogram", 9),
        ("nearest", 40),
        ("springs", 24),
        ("springs", 25),
    ]
    # a race that depends on the data is a warning; every thread on one element is an error
    assert {k: r.severity for k, r in found.items()} == {
        ("binned", 15): Severity.WARNING,
        ("cfl", 33): Severity.WARNING,
        ("histogram", 9): Severity.WARNING,
        ("nearest", 40): Severity.ERROR,
        ("springs", 24): Severity.WARNING,
        ("springs", 25): Severity.WARNING,
    }
    assert "repeated key" in found["histogram", 9].message
    assert found["histogram", 9].related[0].location.line == 8  # where `b` is loaded
    assert "same bin" in found["binned", 15].message
    assert "share a node" in found["springs", 24].message
    assert found["springs", 24].related[0].location.line == 21
    assert "every thread that gets here" in found["cfl", 33].message
    assert "minimum" in found["nearest", 40].message
    assert "wp.atomic_add(bins, b, 1)" in (found["histogram", 9].hint or "")
    assert (found["nearest", 40].location.line, found["nearest", 40].location.end_line) == (40, 41)
    assert analyse(RACES, select=["WH010"], target="cpu")[0].severity is Severity.WARNING


def test_fixes_make_every_race_atomic_and_warp_emits_atomics(analyse: Analyse) -> None:
    records = analyse(RACES, select=["WH010"])
    fixed, applied = apply_fixes(RACES, records)
    assert applied == 6
    for line in FIXED_LINES:
        assert line in fixed
    assert analyse(fixed, select=["WH010"]) == []
    assert warp_error(fixed) is None
    code = forward_code(fixed)
    expected = {
        "histogram": ["atomic_add"],
        "binned": ["atomic_add"],
        "springs": ["atomic_add", "atomic_sub"],
        "cfl": ["atomic_min"],
        "nearest": ["atomic_min"],
    }
    for kernel, atomics in expected.items():
        body = next(c for k, c in code.items() if k.endswith(kernel))
        for atomic in atomics:
            assert atomic in body, (kernel, atomic)
    racy = forward_code(RACES)
    assert not any("atomic_" in body for body in racy.values())


def test_plus_equals_through_a_loaded_index_is_atomic_in_warp(analyse: Analyse) -> None:
    """`f[j] += force` on a vec3 array, `bins[b] += 1`, `f[j] -= force`: Warp 1.19 emits atomics, so the
    rule stays quiet; an int16 array gets a plain load-add-store, which is reported."""
    source = """
import warp as wp


@wp.kernel
def assemble(edges: wp.array2d(dtype=int), force: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
             bins: wp.array(dtype=int), small: wp.array(dtype=wp.int16), values: wp.array(dtype=int)):
    e = wp.tid()
    j = edges[e, 1]
    f[j] += force[e]
    f[edges[e, 0]] -= force[e]
    b = values[e]
    bins[b] += 1
    small[b] += wp.int16(1)
"""
    records = analyse(source, select=["WH010"])
    assert [(r.location.line, r.severity) for r in records] == [(14, Severity.WARNING)]
    assert "int16" in records[0].message
    body = next(iter(forward_code(source).values()))
    assert body.count("atomic_add") == 2 and body.count("atomic_sub") == 1


def test_what_stays_unreported(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def permute(perm: wp.array(dtype=int), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    # a permutation (or any one-to-one map) is correct: nothing says two threads share `j`
    i = wp.tid()
    j = perm[i]
    out[j] = out[j] + x[i]
    out[perm[i]] = x[i]


@wp.kernel
def own(keys: wp.array(dtype=int), offsets: wp.array(dtype=int), out: wp.array2d(dtype=float),
        seg: wp.array(dtype=float)):
    i = wp.tid()
    b = keys[i]
    out[b, i] = out[b, i] + 1.0  # column i is the thread's own
    start = offsets[i]
    for k in range(offsets[i + 1] - start):
        seg[start + k] = seg[start + k] * 2.0  # the thread's own segment


@wp.kernel
def decoded(keys: wp.array(dtype=int), slot: wp.array(dtype=int), first: wp.array(dtype=int)):
    i = wp.tid()
    world = keys[i] // 3  # decoding a packed key is not a binning
    first[world] = wp.min(first[world], slot[i])


@wp.kernel
def owner_only(edges: wp.array2d(dtype=int), owner: wp.array(dtype=int), f: wp.array(dtype=float),
               best: wp.array(dtype=float), claim: wp.array(dtype=int), x: wp.array(dtype=float)):
    e = wp.tid()
    j = edges[e, 1]
    if owner[j] == e:  # one thread per vertex
        f[j] = f[j] + x[e]
    if wp.atomic_add(claim, 0, 1) == 0:  # the first thread only
        best[0] = best[0] + x[e]
    if 2.0 < best[0]:
        best[0] = 2.0  # every thread stores the same value
    f[j] = wp.max(f[j], 0.0)  # idempotent


@wp.kernel
def tagged(edges: wp.array2d(dtype=int), flags: wp.array(dtype=int)):
    e = wp.tid()
    j = edges[e, 0]
    flags[j] = flags[j] | 4  # every thread sets the same bit
"""
    assert analyse(source, select=["WH010"]) == []
    assert warp_error(source) is None


def test_argmin_under_the_test_is_reported_without_a_fix(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def closest(p: wp.array(dtype=wp.vec3), active: wp.array(dtype=int), best: wp.array(dtype=float),
            best_id: wp.array(dtype=int)):
    i = wp.tid()
    if active[i] > 0:
        d = wp.length(p[i])
        if best[0] > d:
            best[0] = d
            best_id[0] = i
"""
    (record,) = analyse(source, select=["WH010"])
    assert record.location.line == 11 and record.severity is Severity.WARNING  # under `active[i] > 0`
    assert record.fix is None and "second pass" in (record.hint or "")


def _load(source: str) -> ModuleType:
    """``source`` imported as a module of its own (Warp reads kernels' source from the file)."""
    folder = Path(tempfile.mkdtemp(prefix="wh010_run_"))
    name = f"wh010_run_{next(_counter)}"
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _run_races(module: ModuleType, device: str, n: int) -> dict[str, object]:
    """Each kernel of `RACES` launched with ``n`` threads that all collide on the same elements."""
    import numpy as np
    import warp as wp

    rng = np.random.default_rng(7)
    out: dict[str, object] = {}
    # histogram: four keys for n threads
    values = wp.array((np.arange(n) % 4).astype(np.int32), device=device)
    bins = wp.zeros(4, dtype=int, device=device)
    wp.launch(module.histogram, dim=n, inputs=[values, bins], device=device)
    out["histogram"] = bins.numpy().tolist()
    # binned: samples in [0, 1) into 8 bins
    x = wp.array(rng.random(n).astype(np.float32), device=device)
    fbins = wp.zeros(8, dtype=float, device=device)
    wp.launch(module.binned, dim=n, inputs=[x, 8.0, fbins], device=device)
    out["binned"] = fbins.numpy().tolist()
    # springs: a star, every edge shares vertex 0
    edges = wp.array(np.stack([np.zeros(n), np.arange(1, n + 1)], axis=1).astype(np.int32), device=device)
    pos = np.zeros((n + 1, 3), dtype=np.float32)
    pos[1:, 0] = 1.0
    f = wp.zeros(n + 1, dtype=wp.vec3, device=device)
    wp.launch(
        module.springs,
        dim=n,
        inputs=[edges, wp.array(pos, dtype=wp.vec3, device=device), 1.0, f],
        device=device,
    )
    out["springs"] = f.numpy()[0].tolist()
    # cfl and nearest: distinct values, the smallest one somewhere in the middle
    speeds = rng.permutation(n).astype(np.float32) + 1.0
    v = np.zeros((n, 3), dtype=np.float32)
    v[:, 0] = speeds
    dt = wp.array([1.0e9], dtype=float, device=device)
    wp.launch(
        module.cfl, dim=n, inputs=[wp.array(v, dtype=wp.vec3, device=device), 1.0, 0.5, dt], device=device
    )
    out["cfl"] = float(dt.numpy()[0])
    best = wp.array([1.0e9], dtype=float, device=device)
    wp.launch(module.nearest, dim=n, inputs=[wp.array(v, dtype=wp.vec3, device=device), best], device=device)
    out["nearest"] = float(best.numpy()[0])
    return out


def _serial(n: int) -> dict[str, object]:
    """What the kernels of `_run_races` compute when their threads run one after another (numpy)."""
    import numpy as np

    rng = np.random.default_rng(7)
    x = rng.random(n).astype(np.float32)
    speeds = rng.permutation(n).astype(np.float32) + 1.0
    return {
        "histogram": [n // 4] * 4,
        "binned": np.bincount((x * np.float32(8.0)).astype(np.int32), minlength=8).astype(float).tolist(),
        "springs": [float(n), 0.0, 0.0],
        "cfl": float(np.float32(1.0) / speeds.max()),
        "nearest": float(speeds.min()),
    }


@pytest.mark.slow
def test_on_the_cpu_the_racy_and_the_atomic_kernels_agree_with_the_serial_result(analyse: Analyse) -> None:
    """Warp's CPU backend runs a launch's threads one after another: the racy kernels give the serial
    result there, exactly as their atomic fixes do. The race shows only on a GPU
    (`test_on_a_gpu_the_races_lose_updates_and_the_fixes_do_not`)."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    fixed, _ = apply_fixes(RACES, analyse(RACES, select=["WH010"]))
    n = 4096
    serial = _serial(n)
    racy = _run_races(_load(RACES), "cpu", n)
    atomic = _run_races(_load(fixed), "cpu", n)
    assert racy == atomic
    assert racy["histogram"] == serial["histogram"] and racy["springs"] == serial["springs"]
    assert racy["binned"] == serial["binned"]
    assert racy["cfl"] == pytest.approx(serial["cfl"]) and racy["nearest"] == serial["nearest"]


@pytest.mark.gpu
def test_on_a_gpu_the_races_lose_updates_and_the_fixes_do_not(analyse: Analyse) -> None:  # pragma: no cover
    """Needs a CUDA device (skipped without one; the lead runs it on a GPU machine): 2^20 threads
    colliding on a handful of elements. The racy kernels lose updates (counts and forces too small, a
    minimum overwritten by a later, larger store); their atomic fixes give the serial result."""
    import warp as wp

    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    wp.config.log_level = wp.LOG_WARNING
    fixed, _ = apply_fixes(RACES, analyse(RACES, select=["WH010"]))
    n = 1 << 20
    serial = _serial(n)
    racy_module, fixed_module = _load(RACES), _load(fixed)
    atomic = _run_races(fixed_module, "cuda:0", n)
    assert atomic["histogram"] == serial["histogram"] and atomic["binned"] == serial["binned"]
    assert atomic["springs"] == pytest.approx(serial["springs"])
    assert atomic["cfl"] == pytest.approx(serial["cfl"]) and atomic["nearest"] == serial["nearest"]
    racy = _run_races(racy_module, "cuda:0", n)
    assert sum(racy["histogram"]) < n  # lost increments
    assert sum(racy["binned"]) < n
    assert racy["springs"][0] < serial["springs"][0]  # lost forces on the shared vertex
    # a lost minimum needs a concurrent larger store after the smallest one: near certain with 2^20
    # threads, but give it a few launches
    lost = [_run_races(racy_module, "cuda:0", n) for _ in range(5)]
    assert any(r["cfl"] != pytest.approx(serial["cfl"]) for r in [racy, *lost])
    assert any(r["nearest"] != serial["nearest"] for r in [racy, *lost])


def test_struct_fields_and_the_two_statement_form_through_a_loaded_index(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.struct
class State:
    particle_f: wp.array(dtype=wp.vec3)
    counts: wp.array(dtype=int)


@wp.kernel
def gravity_pairs(pairs: wp.array(dtype=wp.vec2i), g: wp.vec3, state: State):
    p = wp.tid()
    pair = pairs[p]
    a = pair[0]
    state.particle_f[a] = state.particle_f[a] + g
    c = state.counts[pair[1]]
    state.counts[pair[1]] = c + 1
"""
    records = analyse(source, select=["WH010"])
    assert [(r.location.line, r.severity) for r in records] == [
        (16, Severity.WARNING),
        (18, Severity.WARNING),
    ]
    assert records[0].fix is not None
    assert records[0].fix.edits[0].new_text == "state.particle_f[a] += g"
    assert records[1].fix is None and records[1].related[0].location.line == 17  # read into `c` there
    fixed, _ = apply_fixes(source, records)
    assert warp_error(fixed) is None and warp_error(source) is None


def test_a_branch_warp_never_compiles_is_not_reported(analyse: Analyse) -> None:
    """`if wp.static(USE_HIST):` with USE_HIST = False: Warp drops the branch, so its race never runs."""
    source = """
import warp as wp

USE_HIST = {flag}


@wp.kernel
def count(values: wp.array(dtype=int), bins: wp.array(dtype=int)):
    i = wp.tid()
    if wp.static(USE_HIST):
        b = values[i]
        bins[b] = bins[b] + 1
"""
    assert analyse(source.format(flag="False"), select=["WH010"]) == []
    assert [r.location.line for r in analyse(source.format(flag="True"), select=["WH010"])] == [12]
