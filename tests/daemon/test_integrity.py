"""The hardening against code that games the evaluator, piece by piece (issue #18).

The exploits themselves run through the real worker in tests/exploits/; here: the identity
guard, the host-clock check's decision, the cross-check's comparison in the daemon's process,
and that the daemon's side of it never imports Warp.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

from warp_harness.contract import Tolerance
from warp_harness.daemon import findings as F
from warp_harness.daemon import verdict
from warp_harness.daemon.comparison import compare, encode_array, poison_like, within


def test_guard_sees_a_rebound_clock_and_restores_it() -> None:
    from warp_harness.daemon import integrity

    guard = integrity.Guard()
    real = time.perf_counter
    try:
        time.perf_counter = lambda: 0.0
        assert guard.changed() == ["time.perf_counter"]
        guard.restore()
        assert time.perf_counter is real
        assert guard.changed() == []
    finally:
        time.perf_counter = real


def test_guard_sees_a_function_body_swapped_in_place() -> None:
    """`wp.launch.__code__ = ...` keeps the identity and changes what runs."""
    import warp as wp

    from warp_harness.daemon import integrity

    guard = integrity.Guard()
    saved = wp.synchronize_device.__code__
    try:
        wp.synchronize_device.__code__ = (lambda device=None: None).__code__
        assert "wp.synchronize_device" in guard.changed()
        guard.restore()
        assert wp.synchronize_device.__code__ is saved
        assert guard.changed() == []
    finally:
        wp.synchronize_device.__code__ = saved


def test_guard_sees_numpy_and_array_method_patches() -> None:
    import warp as wp

    from warp_harness.daemon import integrity

    guard = integrity.Guard()
    real_allclose, real_numpy = np.allclose, wp.array.numpy
    try:
        np.allclose = lambda *a, **k: True
        wp.array.numpy = lambda self: None
        assert set(guard.changed()) == {"numpy.allclose", "wp.array.numpy"}
    finally:
        guard.restore()
    assert np.allclose is real_allclose and wp.array.numpy is real_numpy


def test_guard_sees_a_code_pointer_written_through_ctypes() -> None:
    """The word of the function object that holds ``__code__`` written directly (the attribute's
    setter never runs): the function is the same object, its code is not."""
    import ctypes

    import warp as wp

    from warp_harness.daemon import integrity

    guard = integrity.Guard()
    saved = wp.synchronize_device.__code__
    replacement = (lambda device=None: "skipped").__code__
    words = (ctypes.c_void_p * 16).from_address(id(wp.synchronize_device))
    slot = next(k for k in range(16) if words[k] == id(saved))
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(replacement))
    words[slot] = id(replacement)
    try:
        assert wp.synchronize_device() == "skipped"  # the swap took effect
        assert "wp.synchronize_device" in guard.changed()
        guard.restore()
        assert wp.synchronize_device.__code__ is saved and guard.changed() == []
    finally:
        wp.synchronize_device.__code__ = saved


def test_guard_sees_a_c_type_method_written_through_its_real_dict() -> None:
    """``np.ndarray.all = f`` raises; the type's real dict (found through gc) can be written and
    the method cache dropped through ctypes. Seen, and written back the same way."""
    import ctypes
    import gc

    from warp_harness.daemon import integrity

    guard = integrity.Guard()
    real_dict = gc.get_referents(np.ndarray.__dict__)[0]
    original = real_dict["all"]
    real_dict["all"] = lambda self, *a, **k: True
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(np.ndarray))
    try:
        assert np.array([False]).all() is True  # patched
        assert guard.changed() == ["numpy.ndarray.all"]
        guard.restore()
        assert not np.array([False]).all() and guard.changed() == []
    finally:
        real_dict["all"] = original
        ctypes.pythonapi.PyType_Modified(ctypes.py_object(np.ndarray))


def test_guard_watches_the_harness_own_functions_and_builtins() -> None:
    import builtins

    from warp_harness.daemon import integrity, worker
    from warp_harness.daemon.integrity import TRUSTED
    from warp_harness.daemon.steps import validate

    guard = worker.guard()  # made after the steps were imported, as in the worker
    real_compare, real_launch, real_sorted = validate.compare, TRUSTED.launch, builtins.sorted
    try:
        validate.compare = lambda *a, **k: None
        object.__setattr__(TRUSTED, "launch", lambda *a, **k: None)
        builtins.sorted = lambda *a, **k: []
        assert set(guard.changed()) >= {
            "warp_harness.daemon.steps.validate.compare",
            "integrity.TRUSTED.launch",
            "builtins.sorted",
        }
        guard.restore()
        assert guard.changed() == []
        assert validate.compare is real_compare and TRUSTED.launch is real_launch
        assert builtins.sorted is real_sorted
    finally:
        validate.compare, builtins.sorted = real_compare, real_sorted
        object.__setattr__(TRUSTED, "launch", real_launch)
    assert integrity.Guard().changed() == []


def _contract(**overrides: object) -> object:
    from warp_harness.contract import Contract

    fields: dict[str, object] = {
        "kernel": "scale",
        "reference": lambda x: {"y": 2.0 * x},
        "inputs": lambda n, rng: {"x": rng.random(n)},
        "outputs": ["y"],
    }
    fields.update(overrides)
    return Contract(**fields)  # type: ignore[arg-type]


def test_contract_seal_sees_rebound_fields_and_puts_them_back() -> None:
    from warp_harness.contract import restore, tampered

    c: Any = _contract()
    built_with = c.reference
    assert tampered(c) == []
    object.__setattr__(c, "reference", lambda x: {"y": 2.0 * x + 0.5})
    object.__setattr__(c, "sizes", (1,))
    assert tampered(c) == ["reference", "sizes"]
    assert restore(c, ["reference", "sizes"]) == []
    assert c.reference is built_with and tampered(c) == []


def test_contract_seal_sees_changes_in_place() -> None:
    """A tolerance widened in place, an output list emptied, a reference's code swapped, a
    global the reference reads rebound: the objects are the same, what they mean is not."""
    from warp_harness.contract import Tolerance, restore, tampered

    c: Any = _contract(tolerance=Tolerance(rtol=1e-5))
    object.__setattr__(c.tolerance, "rtol", 1e9)
    assert tampered(c) == ["tolerance"]
    assert restore(c, ["tolerance"]) == ["tolerance"]  # the same object: cannot be put back
    c2: Any = _contract()
    c2.outputs.clear()
    assert tampered(c2) == ["outputs"]
    c3: Any = _contract()
    c3.reference.__code__ = (lambda x: {"y": x}).__code__
    assert tampered(c3) == ["reference"]
    c4: Any = _contract(reference=_reads_scale)
    global SCALE
    saved = SCALE
    try:
        SCALE = 3.0
        assert tampered(c4) == ["reference"]
    finally:
        SCALE = saved
    assert tampered(c4) == []
    bare = object.__new__(type(c))  # never built through Contract(...): no seal
    assert tampered(bare) == ["<not built>"]


SCALE = 2.0


def _reads_scale(x: Any) -> dict[str, Any]:
    return {"y": SCALE * x + LATER}


def test_contract_seal_ignores_globals_defined_after_the_contract() -> None:
    """A generator that reads the contract's own name, a helper defined below the contract:
    names that did not exist when it was built are not a change."""
    from warp_harness.contract import tampered

    c: Any = _contract(reference=_reads_scale)
    globals()["_DEFINED_LATER"] = 1.0
    try:
        assert tampered(c) == []
    finally:
        del globals()["_DEFINED_LATER"]


LATER = 0.0


def test_compare_reports_the_same_max_rel_on_its_fast_path() -> None:
    """A passing output takes the fast path; its max relative error is the full path's."""
    rng = np.random.default_rng(4)
    ref = rng.standard_normal(5000)
    ref[10] = 0.0  # |ref| = 0: the absolute difference counts
    got = (ref * (1 + 1e-6)).astype(np.float32)
    got[10] = 1e-7
    fast = compare("y", got, ref, Tolerance(), True)
    diff = np.abs(got.astype(np.float64) - ref)
    expected = np.where(np.abs(ref) > 0, diff / np.where(np.abs(ref) > 0, np.abs(ref), 1.0), diff).max()
    assert fast.ok and fast.max_rel == pytest.approx(expected, rel=0, abs=0)
    assert compare("y", np.zeros(0, np.float32), np.zeros(0), Tolerance(), True).max_rel == 0.0


def test_patch_line_finds_the_assignment() -> None:
    from warp_harness.daemon.integrity import patch_line

    src = ["import time", "", "x = 1", "time.perf_counter = fake", 'setattr(wp, "launch", f)']
    src.append('object.__setattr__(contract, "reference", f)')
    assert patch_line(src, "time.perf_counter") == 4
    assert patch_line(src, "wp.launch") == 5
    assert patch_line(src, "contract.reference") == 6
    assert patch_line(src, "numpy.allclose") == 1


def test_clock_disagreement_needs_a_large_gap() -> None:
    from warp_harness.daemon.integrity import clock_disagrees

    events = [1e-3] * 10  # 1 ms each by the events
    assert not clock_disagrees(10 * 1.1e-3, events)  # launch overhead: no finding
    assert not clock_disagrees(10 * 4.1e-3, events)  # below 4x + 200 µs
    assert clock_disagrees(10 * 20e-3, events)  # 20 ms a launch by the host clock: a side stream
    assert not clock_disagrees(0.0, events) and not clock_disagrees(1.0, [])


def test_persisting_l2_is_none_without_cuda() -> None:
    from warp_harness.daemon.integrity import persisting_l2_bytes

    class Cpu:
        is_cuda = False

    assert persisting_l2_bytes(Cpu()) is None


def test_within_agrees_with_compare() -> None:
    rng = np.random.default_rng(3)
    ref = rng.standard_normal(1000)
    tol = Tolerance()
    got = ref.astype(np.float32)
    assert within(got, ref, tol, True) and compare("y", got, ref, tol, True).ok
    bad = got.copy()
    bad[17] += 1.0
    assert not within(bad, ref, tol, True) and not compare("y", bad, ref, tol, True).ok
    unwritten = got.copy()
    unwritten[3] = poison_like(unwritten[:1])[0]
    assert not within(unwritten, ref, tol, True)
    assert compare("y", unwritten, ref, tol, True).n_unwritten == 1
    nan_both = ref.copy()
    nan_both[5] = np.nan
    assert within(nan_both.astype(np.float32), nan_both, tol, True)


def _ref_case(key: str, ref: np.ndarray, digest: str = "d") -> dict[str, object]:
    return {
        "key": key,
        "kernel": "k",
        "size": ref.size,
        "seed": 5,
        "edge_case": None,
        "digest": digest,
        "refs": {"y": encode_array(ref)},
        "poisoned": {"y": True},
        "tolerance": {"cpu": [1e-5, 1e-6]},
    }


def _shipped(key: str, got: np.ndarray, digest: str = "d") -> dict[str, object]:
    out = {"y": encode_array(got)}  # the checked launch's and the poisoned launch's (issue #37)
    return {"key": key, "device": "cpu", "digest": digest, "outputs": out, "poison_outputs": out}


_CLAIM = {"k": {"validate": {"cpu": "pass"}, "bench": {}}}


def _refs(*cases: dict[str, object]) -> dict[str, object]:
    return {"status": "ok", "cases": list(cases), "missing": []}


def test_cross_check_reports_a_pass_the_reference_worker_disagrees_with() -> None:
    ref = np.arange(8, dtype=np.float64)
    got = (ref + 1).astype(np.float32)
    j = verdict.judge(_CLAIM, _refs(_ref_case("k|a", ref)), [_shipped("k|a", got)], "m.py", {"k": (3, 4, 5)})
    records, notes = j.records, j.notes
    assert [r.rule for r in records] == [F.VERDICT_DISAGREES]
    assert records[0].location.line == 3 and records[0].hint
    assert "size 8, seed 5" in records[0].message
    assert notes["compared"] == 1 and not j.confirmed


def test_cross_check_accepts_agreement_and_withdraws_unreproducible_inputs() -> None:
    """Issue #37: inputs that differ between the workers are no longer skipped (the pass stood
    on no evidence): the pass is withdrawn (WHD067; tests/exploits/test_hermetic_verdicts.py)."""
    ref = np.arange(8, dtype=np.float64)
    ok = verdict.judge(
        _CLAIM, _refs(_ref_case("k|a", ref)), [_shipped("k|a", ref.astype(np.float32))], "m.py", {}
    )
    assert ok.records == [] and ok.notes["compared"] == 1 and ok.confirmed == {("k", "cpu")}
    other = verdict.judge(
        _CLAIM,
        _refs(_ref_case("k|a", ref)),
        [_shipped("k|a", ref[::-1].astype(np.float32), digest="x")],
        "m.py",
        {},
    )
    assert [r.rule for r in other.records] == [F.VERDICT_UNCONFIRMED] and other.notes["not_reproducible"] == 1


def test_the_daemons_side_never_imports_warp() -> None:
    code = (
        "import sys\n"
        "import warp_harness.daemon.verdict, warp_harness.daemon.comparison, warp_harness.daemon.supervisor\n"
        "print('warp' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "rule",
    [
        F.EVALUATOR_PATCHED,
        F.WRONG_AFTER_TIMING,
        F.SEED_INDEPENDENT,
        F.CLOCK_DISAGREES,
        F.PERSISTING_L2,
        F.VERDICT_DISAGREES,
        F.CONTRACT_TAMPERED,
    ],
)
def test_new_rules_are_documented(rule: str) -> None:
    doc = F.BY_ID[rule]
    assert doc.why and doc.todo and doc.name
    assert F.dynamic_rule(doc.name) is doc
