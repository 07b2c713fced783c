"""Judging a replayed launch without a reference (numpy only; runs where no workspace code runs).

For each array of the launch: ``before`` (its captured contents before the launch, poisoned when the
kernel only writes it), ``baseline`` (the accepted outputs: stored at capture or at the last
``accept``; for an array the recorded launch left alone, ``before`` itself) and ``replay`` (what the
replay left in it).

- unwritten: elements the recorded run changed that the replay left poisoned (NaN / sentinel);
- non-finite: NaN or Inf where the baseline is finite and every float input was finite;
- behaviour diff: elements beyond the dtype's tolerance of the baseline (count, max abs and rel
  error, first index).

Elements neither run changed (a kernel that writes only some elements of a write-only array) count as
unchanged: their poison is put back to the captured value before comparing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# per dtype (rtol, atol): the replay may run a debug build (no -O3, no contraction) of the kernel
# the capture ran in release; beyond these, a difference is the code's
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "float32": (1e-4, 1e-5),
    "float64": (1e-9, 1e-12),
}
INT_SENTINEL = -0x21524111  # 0xDEADBEEF as a signed 32-bit integer


# NaNs with a payload of their own: an element still holding it was never written, while a NaN the
# kernel computes (0/0, sqrt(-1)) has the default payload and counts as a value (non-finite)
_NAN_BITS: dict[str, tuple[str, int]] = {
    "float16": ("uint16", 0x7E5D),
    "float32": ("uint32", 0x7FC0DEAD),
    "float64": ("uint64", 0x7FF8DEADBEEFDEAD),
}


def _sentinel(dtype: np.dtype[Any]) -> int:
    info = np.iinfo(dtype)
    return INT_SENTINEL if info.min <= INT_SENTINEL <= info.max else int(info.max)


def poison(arr: np.ndarray) -> np.ndarray | None:
    """A poisoned copy (a marked NaN for floats, a sentinel for integers); None for other dtypes."""
    kind = arr.dtype.kind
    bits = _NAN_BITS.get(str(arr.dtype))
    if kind == "f" and bits is not None:
        out = np.empty_like(arr)
        out.view(bits[0])[...] = bits[1]
        return out
    if kind in "iu":
        return np.full_like(arr, _sentinel(arr.dtype))
    return None


def poisoned_mask(arr: np.ndarray) -> np.ndarray:
    """Elements still holding the poison `poison` wrote."""
    kind = arr.dtype.kind
    bits = _NAN_BITS.get(str(arr.dtype))
    if kind == "f" and bits is not None:
        return np.asarray(np.ascontiguousarray(arr).view(bits[0]) == bits[1])
    if kind in "iu":
        return np.asarray(arr == _sentinel(arr.dtype))
    return np.zeros(arr.shape, dtype=bool)


def differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.asarray(~((a == b) | (np.isnan(a) & np.isnan(b))))
    return np.asarray(a != b)


@dataclass
class Finding:
    kind: str  # unwritten | nonfinite | diff | shape
    array: str
    count: int
    total: int
    first_index: tuple[int, ...]
    max_abs: float = 0.0
    max_rel: float = 0.0
    expected: str = ""
    actual: str = ""


def _first(mask: np.ndarray) -> tuple[int, ...]:
    flat = int(np.flatnonzero(mask)[0])
    return tuple(int(i) for i in np.unravel_index(flat, mask.shape))


def _show(arr: np.ndarray, index: tuple[int, ...]) -> str:
    return repr(arr[index].item()) if arr.ndim else repr(arr.item())


def judge_array(
    name: str,
    before: np.ndarray,
    baseline: np.ndarray,
    replay: np.ndarray,
    *,
    was_poisoned: bool,
    inputs_finite: bool,
    tolerance: tuple[float, float] | None = None,
) -> list[Finding]:
    if replay.shape != baseline.shape or replay.dtype != baseline.dtype:
        return [
            Finding(
                "shape",
                name,
                0,
                int(baseline.size),
                (),
                expected=f"{baseline.dtype}{list(baseline.shape)}",
                actual=f"{replay.dtype}{list(replay.shape)}",
            )
        ]
    out: list[Finding] = []
    changed_by_recording = (
        differs(before, baseline) if before.shape == baseline.shape else np.ones_like(baseline, dtype=bool)
    )
    effective = replay
    excluded = np.zeros(baseline.shape, dtype=bool)
    if was_poisoned:
        left = poisoned_mask(replay)
        unwritten = left & changed_by_recording & ~poisoned_mask(baseline)
        if unwritten.any():
            i = _first(unwritten)
            out.append(
                Finding(
                    "unwritten",
                    name,
                    int(unwritten.sum()),
                    int(baseline.size),
                    i,
                    expected=_show(baseline, i),
                    actual="unwritten (still the poison value)",
                )
            )
        effective = np.where(left & ~changed_by_recording, before, replay)
        excluded |= unwritten
    if baseline.dtype.kind == "f":
        newly = ~np.isfinite(effective) & np.isfinite(baseline) & ~excluded
        if inputs_finite and newly.any():
            i = _first(newly)
            out.append(
                Finding(
                    "nonfinite",
                    name,
                    int(newly.sum()),
                    int(baseline.size),
                    i,
                    expected=_show(baseline, i),
                    actual=_show(effective, i),
                )
            )
        excluded |= newly
        rtol, atol = tolerance or TOLERANCES.get(str(baseline.dtype), (1e-4, 1e-5))
        a = effective.astype(np.float64)
        b = baseline.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(a - b)
            bad = (err > atol + rtol * np.abs(b)) | (np.isnan(a) != np.isnan(b))
        bad &= ~excluded
        if bad.any():
            i = _first(bad)
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(np.abs(b) > 0, err / np.abs(b), np.inf)
            finite = bad & np.isfinite(err)
            nonzero = finite & (np.abs(b) > 0)
            out.append(
                Finding(
                    "diff",
                    name,
                    int(bad.sum()),
                    int(baseline.size),
                    i,
                    max_abs=float(err[finite].max()) if finite.any() else float("nan"),
                    max_rel=float(rel[nonzero].max()) if nonzero.any() else 0.0,
                    expected=_show(baseline, i),
                    actual=_show(effective, i),
                )
            )
    else:
        bad = differs(effective, baseline) & ~excluded
        if bad.any():
            i = _first(bad)
            err = np.abs(effective.astype(np.float64) - baseline.astype(np.float64))
            out.append(
                Finding(
                    "diff",
                    name,
                    int(bad.sum()),
                    int(baseline.size),
                    i,
                    max_abs=float(err[bad].max()),
                    expected=_show(baseline, i),
                    actual=_show(effective, i),
                )
            )
    return out
