"""The comparison of a kernel's outputs with its reference, in numpy only (no Warp).

Used in the worker by ``steps/validate.py`` and ``steps/bench.py``, and in the supervisor by
``verdict.py``: the second comparison happens in a process the workspace's code never ran in,
on outputs the worker sent and references a fresh process computed (docs/reliability.md,
"Gaming the evaluator"). The poison (a NaN with a payload no arithmetic produces) tells
unwritten elements apart from computed NaNs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from warp_harness.contract import Tolerance

# quiet NaNs with a payload no arithmetic produces
_POISON_BITS = {2: (np.uint16, 0x7E5A), 4: (np.uint32, 0x7FC5A5A5), 8: (np.uint64, 0x7FF8A5A5A5A5A5A5)}


class ContractProblem(Exception):
    """The contract (not the kernel) is wrong: report it as such."""


@dataclass
class OutputReport:
    name: str
    shape: tuple[int, ...]
    n_total: int
    n_bad: int
    n_unwritten: int
    n_nonfinite: int
    max_rel: float
    first_bad: tuple[int, ...] | None
    got: float | None
    expected: float | None
    boundary: bool
    tolerance: Tolerance
    # evidence for the hint (daemon/hints.py)
    edge_run: int | None = None  # the bad elements are one run of this many indices at an end of an axis
    edge: str | None = None  # "start" | "end": which end
    integral: bool = False  # every finite reference value is a whole number
    whole_units: bool = False  # every bad result is a whole number, off by at least one

    @property
    def ok(self) -> bool:
        return self.n_bad == 0


def poison_like(arr: np.ndarray) -> np.ndarray:
    out = np.empty_like(arr)
    if arr.dtype.kind == "f" and arr.dtype.itemsize in _POISON_BITS:
        utype, bits = _POISON_BITS[arr.dtype.itemsize]
        out.view(utype).fill(bits)
    elif arr.dtype.kind in "iu":
        out.view(np.uint8).fill(0xA5)
    else:
        out.fill(0)
    return out


def unwritten_mask(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "f" and arr.dtype.itemsize in _POISON_BITS:
        utype, bits = _POISON_BITS[arr.dtype.itemsize]
        return np.asarray(arr.view(utype) == utype(bits))
    if arr.dtype.kind in "iu":
        return np.asarray(arr == poison_like(arr))
    return np.zeros(arr.shape, dtype=bool)


def encode_array(arr: np.ndarray) -> dict[str, Any]:
    arr = np.ascontiguousarray(arr)
    return {"__ndarray__": True, "dtype": arr.dtype.str, "shape": list(arr.shape), "data": arr.tobytes()}


def decode_value(value: Any) -> Any:
    if isinstance(value, dict) and value.get("__ndarray__"):
        return np.frombuffer(value["data"], dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()
    return value


def _is_boundary(bad: np.ndarray) -> bool:
    """Whether every bad element lies on the first or last index of some axis (and not all are bad)."""
    n_bad = int(bad.sum())
    if n_bad == 0 or n_bad == bad.size or bad.size <= 2:
        return False
    idx = np.argwhere(bad)
    for axis, extent in enumerate(bad.shape):
        if extent > 1 and np.all((idx[:, axis] == 0) | (idx[:, axis] == extent - 1)):
            return True
    return False


def _edge_run(bad: np.ndarray) -> tuple[int | None, str | None]:
    """(length, "start" | "end") when the bad elements are exactly the indices of one contiguous
    run touching an end of some axis (all of them along the other axes, or not: any slab), else
    (None, None). A stencil reading ``x[i + k]`` past the end fails on the last k elements."""
    n_bad = int(bad.sum())
    if n_bad == 0 or n_bad == bad.size:
        return None, None
    idx = np.argwhere(bad)
    for axis, extent in enumerate(bad.shape):
        along = np.unique(idx[:, axis])
        if len(along) == extent or along[-1] - along[0] + 1 != len(along):
            continue
        if along[-1] == extent - 1:
            return len(along), "end"
        if along[0] == 0:
            return len(along), "start"
    return None, None


def _integral(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(finite.size) and bool(np.all(finite == np.round(finite)))


def compare(name: str, got_raw: np.ndarray, ref: np.ndarray, tol: Tolerance, poisoned: bool) -> OutputReport:
    """Every element of ``got_raw`` against ``ref``. The evidence the hints use (``boundary``,
    ``edge_run``, ``integral``, ``whole_units``) is only gathered for an output with bad elements:
    a passing output costs a third of the time (most outputs pass)."""
    with np.errstate(all="ignore"):  # a signalling NaN (memory never written) sets `invalid`
        got = got_raw.astype(np.float64)
    if ref.shape != got.shape:
        if ref.size == got.size:
            ref = ref.reshape(got.shape)
        else:
            raise ContractProblem(
                f"the reference gives `{name}` the shape {ref.shape}, "
                f"the kernel's output has shape {got.shape}"
            )
    passing = _passing_report(name, got_raw, got, ref, tol, poisoned)
    if passing is not None:
        return passing
    unwritten = unwritten_mask(got_raw) if poisoned else np.zeros(got.shape, dtype=bool)
    with np.errstate(all="ignore"):
        diff = np.abs(got - ref)
        ok = _close(got, ref, tol)
        ok &= ~unwritten
        finite = np.isfinite(got) & np.isfinite(ref)
        rel = np.where(np.abs(ref) > 0, diff / np.where(np.abs(ref) > 0, np.abs(ref), 1.0), diff)
    bad = ~ok
    nonfinite = ~np.isfinite(got) & np.isfinite(ref) & ~unwritten
    rel_bad = rel[bad & finite]
    max_rel = float(rel_bad.max()) if rel_bad.size else (float("inf") if bad.any() else 0.0)
    if not bad.any() and finite.any():
        max_rel = float(rel[finite].max())
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else None
    edge_run, edge = _edge_run(bad)
    bad_finite = bad & finite
    whole = bool(bad_finite.any()) and _integral(got[bad_finite]) and bool(np.all(diff[bad_finite] >= 1.0))
    return OutputReport(
        name=name,
        shape=tuple(got.shape),
        n_total=int(got.size),
        n_bad=int(bad.sum()),
        n_unwritten=int(unwritten.sum()),
        n_nonfinite=int(nonfinite.sum()),
        max_rel=max_rel,
        first_bad=first,
        got=float(got[first]) if first is not None else None,
        expected=float(ref[first]) if first is not None else None,
        boundary=_is_boundary(bad),
        tolerance=tol,
        edge_run=edge_run,
        edge=edge,
        integral=_integral(ref),
        whole_units=whole,
    )


def _passing_report(
    name: str, got_raw: np.ndarray, got: np.ndarray, ref: np.ndarray, tol: Tolerance, poisoned: bool
) -> OutputReport | None:
    """The report of an output whose every element passes, with the max relative error over
    the finite elements as ``compare`` computes it; None when some element fails (or is NaN/Inf,
    which the full comparison judges)."""
    with np.errstate(all="ignore"):
        diff = np.abs(got - ref)
        scale = np.abs(ref)
        if not bool((diff <= tol.atol + tol.rtol * scale).all()) or not bool(np.isfinite(ref).all()):
            return None  # NaN, Inf and unwritten elements fail here too: the full path decides
        if poisoned and unwritten_mask(got_raw).any():  # pragma: no cover - a NaN fails above
            return None
        rel = np.divide(diff, scale, out=diff.copy(), where=scale > 0)
    return OutputReport(
        name=name,
        shape=tuple(got.shape),
        n_total=int(got.size),
        n_bad=0,
        n_unwritten=0,
        n_nonfinite=0,
        max_rel=float(rel.max()) if rel.size else 0.0,
        first_bad=None,
        got=None,
        expected=None,
        boundary=False,
        tolerance=tol,
    )


def within(got_raw: np.ndarray, ref: np.ndarray, tol: Tolerance, poisoned: bool) -> bool:
    """Whether every element passes (the test of ``compare`` without its evidence: a fast path
    for outputs that are almost always right; on False, ``compare`` says what is wrong)."""
    if ref.shape != got_raw.shape:
        if ref.size != got_raw.size:
            return False
        ref = ref.reshape(got_raw.shape)
    with np.errstate(all="ignore"):  # a signalling NaN (memory never written) sets `invalid`
        got = got_raw.astype(np.float64)
        ok = np.abs(got - ref) <= tol.atol + tol.rtol * np.abs(ref)
    if not ok.all() or not np.isfinite(ref).all():
        with np.errstate(all="ignore"):
            ok = _close(got, ref, tol)
        if not ok.all():
            return False
    return not (poisoned and unwritten_mask(got_raw).any())


def _close(got: np.ndarray, ref: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Per element: within the tolerance of a finite reference, or the same non-finite value
    (the same infinity, NaN where the reference is NaN). ``|got - inf| <= atol + rtol * inf``
    holds for any finite ``got``: a tolerance scaled by an infinite reference accepts anything."""
    finite_ref = np.isfinite(ref)
    ok = finite_ref & (np.abs(got - ref) <= tol.atol + tol.rtol * np.abs(ref))
    ok |= np.isnan(got) & np.isnan(ref)
    ok |= np.isinf(ref) & (got == ref)
    return np.asarray(ok)


def vacuous(initial: np.ndarray, ref: np.ndarray, tol: Tolerance) -> bool:
    """Whether an output the kernel never touched already passes: its memory as the launch
    found it (``initial``: the generator's values, the untouched input of an in-place output),
    or zeros. A check that such an output passes cannot tell a no-op from the kernel."""
    if initial.size == 0 or ref.size == 0:
        return False
    if within(initial, ref, tol, poisoned=False):
        return True
    return within(np.zeros(initial.shape, dtype=initial.dtype), ref, tol, poisoned=False)


# the cross-check compares at most this many elements of an output: both ends (where a
# boundary bug shows) and the rest drawn with a seed the supervisor picks per job
SAMPLE_ELEMENTS = 4096
SAMPLE_ENDS = 256


@functools.lru_cache(maxsize=64)
def sample_indices(n: int, seed: int) -> np.ndarray | None:
    """Flat indices of the elements the cross-check compares (None: all of them); read-only,
    kept: every case of a size, and both launches of a case, use the same indices."""
    if n <= SAMPLE_ELEMENTS:
        return None
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, n, SAMPLE_ELEMENTS - 2 * SAMPLE_ENDS)
    ends = np.concatenate([np.arange(SAMPLE_ENDS), np.arange(n - SAMPLE_ENDS, n)])
    out = np.unique(np.concatenate([ends, drawn]))
    out.setflags(write=False)
    return out


def sampled(arr: np.ndarray, seed: int | None) -> np.ndarray:
    """``arr`` flattened, at ``sample_indices`` (all of it without a seed or when small)."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    idx = sample_indices(flat.size, seed) if seed is not None else None
    return flat if idx is None else flat[idx]
