"""The CUDA oracles of a replay: the same captured launch on the CPU and on CUDA, and twice on CUDA.

Warp runs a CPU launch's threads one after another, so a non-atomic read-modify-write
(``s[0] = s[0] + x[i]``, ``h[b] = h[b] + 1``; ``a[j] += v`` is an atomic add in Warp) or a compare-then-store
(``if d < best[k]: best[k] = d``) computes the right answer there. On a GPU the threads race: updates
are lost, and two runs of the same launch may disagree. A difference between the CPU run and a CUDA
run, or between two CUDA runs, beyond what a different accumulation order explains, is a likely race.

Which device runs it (`plan`) is decided where Warp is (the worker), from the workspace's
``devices`` and the launch's own device; the comparison (`compare_runs`) runs where no workspace
code runs (numpy only).

Tolerances: an array each thread writes with a plain store (``y[i] = ...``, and the racy
``s[0] = s[0] + v``) gets the same value on every backend up to a few ulps, so it is compared
element by element (``ELEMENT_TOLERANCES``). An array the kernel accumulates into with atomics
(``wp.atomic_add``, or ``a[j] += v``, which Warp makes atomic: `accumulated_arrays`) is a float
sum whose order the GPU picks, so it also gets ``max(rtol, 4 * eps * sqrt(threads))`` of the
array's largest magnitude (rounding grows with the square root of the number of terms): a lost
update differs by a whole term, an order change by a few ulps of the total.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# per dtype (rtol, atol) of one element computed by one thread on two backends
ELEMENT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "float32": (1e-5, 1e-6),
    "float64": (1e-12, 1e-14),
}
_EPS = {"float16": 2.0**-10, "float32": 2.0**-23, "float64": 2.0**-52}
_ATOMICS = frozenset({"atomic_add", "atomic_sub"})
FIRST_SHOWN = 5  # elements listed in a record

NOT_RUN_NO_CUDA = "no CUDA device on this machine"


def plan(devices: Sequence[str], captured_device: str, cuda_count: int) -> tuple[str | None, str]:
    """(the CUDA device that runs the oracle, or None; why not, when None).

    A launch captured on CUDA gets it whenever a CUDA device is present (the user ran it there); a
    launch captured on the CPU only when the workspace's ``devices`` name CUDA (``cuda`` or
    ``cuda:N``)."""
    if cuda_count <= 0:
        return None, NOT_RUN_NO_CUDA
    wanted: list[str] = []
    for d in devices:
        if d == "cuda":
            wanted.append("cuda:0")
        elif d.startswith("cuda:"):
            wanted.append(d)
    if captured_device.startswith("cuda"):
        wanted.insert(0, captured_device if ":" in captured_device else "cuda:0")
    if not wanted:
        return None, 'the workspace\'s devices do not include CUDA (devices = ["cpu", "cuda"] enables it)'
    for d in wanted:
        if int(d.split(":", 1)[1] or 0) < cuda_count:
            return d, ""
    return None, f"{wanted[0]} is not present ({cuda_count} CUDA device(s))"


@dataclass
class Difference:
    """Two runs of a launch that disagree on one array."""

    array: str
    between: str  # "the CPU and cuda:0" | "two runs on cuda:0"
    count: int
    total: int
    max_abs: float
    # (index, one run's value, the other's), the first FIRST_SHOWN of them
    first: list[tuple[tuple[int, ...], str, str]] = field(default_factory=list)

    def text(self) -> str:
        shown = ", ".join(f"[{', '.join(map(str, i))}] {x} vs {y}" for i, x, y in self.first)
        size = f", max difference {self.max_abs:.3g}" if self.max_abs == self.max_abs else ""
        return f"{self.count} of {self.total} elements differ between {self.between}{size}" + (
            f" (first: {shown})" if shown else ""
        )


@dataclass
class RaceFinding:
    array: str
    differences: list[Difference]

    @property
    def count(self) -> int:
        return max(d.count for d in self.differences)


def accumulated_arrays(text: str, kernel: str) -> frozenset[str]:
    """The parameters of ``kernel`` (in a module's text) it accumulates into with atomics:
    ``wp.atomic_add(a, ...)``, ``wp.atomic_sub(a, ...)``, ``a[...] += v`` / ``-=``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if fn is None:
        return frozenset()
    params = {a.arg for a in fn.args.args}
    out: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add | ast.Sub):
            target: ast.expr = node.target
            while isinstance(target, ast.Subscript | ast.Attribute):
                target = target.value
            if isinstance(target, ast.Name) and target.id in params and target is not node.target:
                out.add(target.id)
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in _ATOMICS and node.args and isinstance(node.args[0], ast.Name):
                out.add(node.args[0].id)
    return frozenset(out & params)


def _differs(a: np.ndarray, b: np.ndarray, threads: int | None) -> np.ndarray:
    """``threads``: the array is an atomic accumulation over that many threads (None: plain stores)."""
    if a.dtype.kind != "f":
        return np.asarray(a != b)
    rtol, atol = ELEMENT_TOLERANCES.get(str(a.dtype), (1e-5, 1e-6))
    x = a.astype(np.float64)
    y = b.astype(np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    finite = np.isfinite(x) & np.isfinite(y)
    allowed = atol + rtol * np.abs(y)
    if threads is not None and finite.any():
        spread = max(rtol, 4.0 * _EPS.get(str(a.dtype), 2.0**-23) * math.sqrt(max(threads, 1)))
        allowed = allowed + spread * float(np.abs(y[finite]).max())
    with np.errstate(invalid="ignore", over="ignore"):
        bad = ~(np.abs(x - y) <= allowed)
    return np.asarray(bad & ~both_nan & ~((x == y) & ~finite))


def compare(
    name: str, between: str, a: np.ndarray, b: np.ndarray, threads: int | None = None
) -> Difference | None:
    """The elements of ``a`` and ``b`` (one array after two runs of a launch) that differ beyond the
    dtype's tolerance (``threads``: an atomic accumulation over that many threads); None when none do."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return Difference(name, between, int(b.size), int(b.size), float("nan"))
    bad = _differs(a, b, threads)
    if not bad.any():
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a.astype(np.float64) - b.astype(np.float64))
    finite = bad & np.isfinite(err)
    first: list[tuple[tuple[int, ...], str, str]] = []
    for flat in np.flatnonzero(bad)[:FIRST_SHOWN]:
        index = tuple(int(i) for i in np.unravel_index(int(flat), bad.shape))
        first.append((index, repr(a[index].item()), repr(b[index].item())))
    return Difference(
        name,
        between,
        int(bad.sum()),
        int(bad.size),
        float(err[finite].max()) if finite.any() else float("nan"),
        first,
    )


def compare_runs(
    cpu: dict[str, np.ndarray],
    cuda: Sequence[dict[str, np.ndarray]],
    device: str,
    accumulated: frozenset[str] = frozenset(),
    threads: int = 1,
) -> list[RaceFinding]:
    """Per array, where the CPU run and the first CUDA run disagree, and where the two CUDA runs do
    (``accumulated``: the arrays summed into with atomics by ``threads`` threads)."""
    out: list[RaceFinding] = []
    if not cuda:
        return out
    for name in sorted(set(cpu).union(*cuda)):
        found: list[Difference] = []
        pairs = [(f"the CPU and {device}", cpu, cuda[0])]
        if len(cuda) > 1:
            pairs.append((f"two runs on {device}", cuda[0], cuda[1]))
        for between, one, other in pairs:
            if name in one and name in other:
                n = threads if name in accumulated else None
                d = compare(name, between, one[name], other[name], n)
                if d is not None:
                    found.append(d)
        if found:
            out.append(RaceFinding(name, found))
    return out


def message(kernel: str, f: RaceFinding, provenance: str) -> str:
    """The record's text: a likely race, the counts, the first elements that differ, the launch."""
    return (
        f"`{kernel}`: likely race (non-atomic read-modify-write, compare-then-store) in `{f.array}`: "
        + "; ".join(d.text() for d in f.differences)
        + f" (beyond what the order of floating-point sums explains; {provenance})"
    )


def summary_note(status: dict[str, Any] | None) -> str:
    """What the replay summary (WHD086) says about the CUDA oracles: ran on which device, or why not."""
    if not status:
        return ""
    if status.get("device"):
        return f"; CPU vs {status['device']} and two runs on {status['device']} agree"
    return f"; CUDA race oracle not run: {status.get('skipped') or NOT_RUN_NO_CUDA}"
