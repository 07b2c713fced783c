"""What the code under test could patch in the worker, and the checks that it did not.

The worker imports the workspace's module (and so runs its top-level code), then launches,
times and compares its kernels in the same process. The workspace could therefore rebind
``wp.launch``, ``time.perf_counter``, Warp's event timing or numpy's comparisons at import
(or later, from a reference or an input generator) and game the verdict. Three defences,
all in this module:

- ``Guard``: the identities of every callable the harness relies on are saved when the
  worker starts, before any workspace code ran: the module-level callables of ``warp``,
  ``warp._src.context``, ``time``, ``numpy``, ``numpy.testing``, ``builtins`` and of the
  harness's own verdict modules; the methods of ``wp.array``, ``wp.Event``, ``wp.Stream``,
  ``wp.Kernel`` and of Warp's ``Module``, ``ModuleExec`` and ``Launch`` (what a launch goes
  through), of the contract classes, and of ``numpy.ndarray`` and the builtin types (a C
  type's real dict can be written through ``gc`` and ctypes); the fields of ``TRUSTED``; for
  Python functions also their code object and defaults, read back from the function (a
  pointer written through ctypes shows there). ``Guard.changed``
  lists what changed; the worker checks after the import, after ``validate`` and after
  ``bench`` (WHD060), and ``Guard.restore`` puts the originals back, so a patch neither
  changes this job's measurement nor leaks into the next job served by the same worker.
- ``TRUSTED``: the functions the steps call (launch, synchronise, clocks, event timing),
  bound when the worker starts. Steps call these, never ``wp.launch`` looked up at call time.
- ``persisting_l2_bytes``: (CUDA) the context's persisting-L2 limit, which a module could
  raise at import so its data survives the cold-L2 flush (WHD064); set back to its value
  before the import when found.

What stays trusted, and why, is written down in docs/reliability.md ("Gaming the evaluator").
"""

from __future__ import annotations

import builtins
import ctypes
import gc
import importlib
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

import numpy as np
import numpy.testing
import warp as _warp

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped

_context: Any = importlib.import_module("warp._src.context")


@dataclass(frozen=True)
class Trusted:
    """The functions the steps launch, synchronise and time with, bound before any workspace
    code ran (the worker imports this module at start)."""

    launch: Callable[..., Any]
    launch_tiled: Callable[..., Any]
    synchronize_device: Callable[..., Any]
    synchronize_event: Callable[..., Any]
    get_event_elapsed_time: Callable[..., Any]
    event: Callable[..., Any]
    perf_counter: Callable[[], float]
    array_numpy: Callable[..., Any]
    array_assign: Callable[..., Any]


TRUSTED = Trusted(
    launch=wp.launch,
    launch_tiled=wp.launch_tiled,
    synchronize_device=wp.synchronize_device,
    synchronize_event=wp.synchronize_event,
    get_event_elapsed_time=wp.get_event_elapsed_time,
    event=wp.Event,
    perf_counter=time.perf_counter,
    array_numpy=wp.array.numpy,
    array_assign=wp.array.assign,
)


def to_numpy(arr: Any) -> np.ndarray:
    """``arr.numpy()`` through the saved method (a patched ``wp.array.numpy`` is not called)."""
    return np.asarray(TRUSTED.array_numpy(arr))


def snapshot_bytes(arr: Any) -> tuple[bytes, np.dtype[Any], tuple[int, ...]]:
    """The output's contents as immutable bytes, taken right after the synchronise and before
    any other workspace code (the reference) runs: nothing can write the answer in later."""
    host = np.ascontiguousarray(to_numpy(arr))
    return host.tobytes(), host.dtype, tuple(host.shape)


def from_snapshot(snap: tuple[bytes, np.dtype[Any], tuple[int, ...]]) -> np.ndarray:
    data, dtype, shape = snap
    return np.frombuffer(data, dtype=dtype).reshape(shape)  # read-only: backed by bytes


# --------------------------------------------------------------------------- identities

_MODULES: tuple[tuple[str, ModuleType], ...] = (
    ("wp", wp),
    ("warp._src.context", _context),
    ("time", time),
    ("numpy", np),
    ("numpy.testing", numpy.testing),
    ("builtins", builtins),
)
# the harness's own modules the verdict goes through, watched when imported (the worker imports
# them before it makes its Guard): `validate.compare = ...` would otherwise pass every output
_HARNESS_MODULES = (
    "warp_harness.contract",
    "warp_harness.daemon.comparison",
    "warp_harness.daemon.integrity",
    "warp_harness.daemon.steps.launching",
    "warp_harness.daemon.steps.validate",
    "warp_harness.daemon.steps.bench",
)
_CLASSES: tuple[tuple[str, Any], ...] = (
    ("wp.array", wp.array),
    ("wp.Event", wp.Event),
    ("wp.Stream", wp.Stream),
    ("wp.Kernel", wp.Kernel),
    # what wp.launch goes through: the module's compiled hooks and the launch object
    ("warp._src.context.Module", _context.Module),
    ("warp._src.context.ModuleExec", _context.ModuleExec),
    ("warp._src.context.Launch", _context.Launch),
    # a C type's methods cannot be assigned, but its real dict can be written (found through
    # ``gc.get_referents(np.ndarray.__dict__)``, then ``PyType_Modified`` through ctypes)
    ("numpy.ndarray", np.ndarray),
    *((f"builtins.{t.__name__}", t) for t in (float, int, bool, bytes, tuple, list, dict)),
    # the functions the steps call, saved at start (a frozen dataclass: object.__setattr__ works)
    ("integrity.TRUSTED", TRUSTED),
)
_CONTRACT_CLASSES = ("Contract", "Tolerance", "EdgeCase", "Target")
# module attributes that are state, not behaviour (Warp assigns them itself); builtins the
# interpreter or a REPL helper may rebind without touching a verdict
_IGNORED = frozenset({"runtime", "print", "input", "help", "exit", "quit", "breakpoint", "_"})
_DUNDERS_WATCHED = frozenset({"__import__", "__build_class__"})


def _watched() -> Iterator[tuple[str, Any, str, Any]]:
    """(label, owner, attribute, value) of every callable the harness may rely on."""
    modules = list(_MODULES)
    classes = list(_CLASSES)
    for name in _HARNESS_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            modules.append((name, module))
    contract_module = sys.modules.get("warp_harness.contract")
    if contract_module is not None:
        classes += [(f"warp_harness.contract.{c}", getattr(contract_module, c)) for c in _CONTRACT_CLASSES]
    for label, module in modules:
        for name, value in list(vars(module).items()):
            if name in _IGNORED or isinstance(value, ModuleType):
                continue
            if name.startswith("__") and name not in _DUNDERS_WATCHED:
                continue
            if callable(value):
                yield f"{label}.{name}", module, name, value
    for label, cls in classes:
        for name, value in list(vars(cls).items()):
            if name in ("__dict__", "__weakref__", "__doc__", "__module__"):
                continue
            if callable(value) or isinstance(value, staticmethod | classmethod | property):
                yield f"{label}.{name}", cls, name, value


class Guard:
    """The identities saved when the worker started; what was rebound since, and the fix.

    Checked several times a job, so kept cheap (0.2-0.3 ms for ~1,900 callables): one dict
    lookup per watched attribute, and for Python functions the identities of their code object
    and defaults (``f.__code__ = other.__code__``, or the same pointer written through ctypes,
    keeps the function's identity)."""

    def __init__(self) -> None:
        self.saved: dict[str, tuple[Any, str, Any]] = {}
        self._entries: list[tuple[Any, str, str, Any]] = []
        self._bodies: list[tuple[str, FunctionType, Any, Any, Any]] = []
        for label, owner, name, value in _watched():
            self.saved[label] = (owner, name, value)
            # a class's mappingproxy shows writes to its real dict too
            self._entries.append((vars(owner), label, name, value))
            if isinstance(value, FunctionType):
                self._bodies.append((label, value, value.__code__, value.__defaults__, value.__kwdefaults__))

    def changed(self) -> list[str]:
        """The labels (``wp.launch``, ``time.perf_counter``) rebound, deleted, or whose
        function body (``__code__``, defaults) was swapped in place since the start."""
        out = [
            label
            for namespace, label, name, value in self._entries
            if namespace.get(name, _MISSING) is not value
        ]
        out += [
            label
            for label, f, code, defaults, kwdefaults in self._bodies
            if f.__code__ is not code or f.__defaults__ is not defaults or f.__kwdefaults__ is not kwdefaults
        ]
        return list(dict.fromkeys(out))

    def restore(self, labels: list[str] | None = None) -> None:
        """Put the saved originals back (all of them, or those named)."""
        wanted = set(labels if labels is not None else self.changed())
        for label in wanted:
            owner, name, value = self.saved[label]
            _force_setattr(owner, name, value)
        for label, f, code, defaults, kwdefaults in self._bodies:
            if label in wanted:
                f.__code__, f.__defaults__, f.__kwdefaults__ = code, defaults, kwdefaults


def _force_setattr(owner: Any, name: str, value: Any) -> None:
    """``setattr``, also on a frozen dataclass instance and on a C type (through its real dict,
    the way such a patch is made)."""
    try:
        setattr(owner, name, value)
        return
    except (AttributeError, TypeError):
        pass
    try:
        if isinstance(owner, type):
            real = gc.get_referents(owner.__dict__)[0]
            real[name] = value
            ctypes.pythonapi.PyType_Modified(ctypes.py_object(owner))
        else:
            object.__setattr__(owner, name, value)
    except Exception:  # pragma: no cover - the record still says what was patched
        pass


_MISSING = object()


def patch_line(source_lines: list[str], label: str) -> int:
    """The 1-based line of the assignment that rebinds ``label``'s attribute (``wp.launch =``,
    ``setattr(time, "perf_counter", ...)``, ``object.__setattr__(contract, "reference", ...)``),
    or 1 when the source does not show it."""
    attr = label.rsplit(".", 1)[-1]
    assign = re.compile(rf"\.{re.escape(attr)}\s*=(?!=)")
    named = re.compile(rf"""setattr(?:__)?\([^,]+,\s*['"]{re.escape(attr)}['"]""")
    for i, line in enumerate(source_lines):
        if assign.search(line) or named.search(line):
            return i + 1
    return 1


# --------------------------------------------------------------------------- timing checks

# a window's host time per launch beyond the events' by this factor and this much: work the
# events did not see (a side stream, a deferred copy) or a patched event clock
CLOCK_FACTOR = 4.0
CLOCK_SLACK_S = 200e-6


def clock_disagrees(host_s: float, event_s: list[float]) -> bool:
    """Whether the host clock around a synchronised window of launches disagrees with the
    sum of their event times: ``host / n > CLOCK_FACTOR * event median + CLOCK_SLACK_S``.
    The host always sees more (launch overhead, the event waits): only a large gap counts."""
    if not event_s or host_s <= 0:
        return False
    per_launch = host_s / len(event_s)
    median = sorted(event_s)[len(event_s) // 2]
    return per_launch > CLOCK_FACTOR * median + CLOCK_SLACK_S


_CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def _libcuda() -> Any:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


# each CUDA device's persisting-L2 limit before any workspace code ran: a fresh context has one
# already (11,796,480 bytes on an H200 with driver 580, whether Warp or torch made the context),
# which sets nothing aside by itself: only a rise above it is the workspace's carve-out
_L2_BASELINE: dict[str, int] = {}


def note_persisting_l2_baseline() -> None:
    """Remember each CUDA device's persisting-L2 limit (the worker calls it before any import)."""
    try:
        devices = wp.get_cuda_devices()
    except Exception:
        return
    for device in devices:
        found = _persisting_l2_limit(device, None)
        if found is not None:
            _L2_BASELINE[str(device)] = found


def _persisting_l2_limit(device: Any, set_to: int | None) -> int | None:
    lib = _libcuda()
    if lib is None:
        return None
    value = ctypes.c_size_t(0)
    try:
        with wp.ScopedDevice(device):
            if lib.cuCtxGetLimit(ctypes.byref(value), _CU_LIMIT_PERSISTING_L2_CACHE_SIZE) != 0:
                return None
            if set_to is not None and value.value != set_to:
                lib.cuCtxSetLimit(_CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(set_to))
                lib.cuCtxResetPersistingL2Cache()
    except Exception:
        return None
    return int(value.value)


def persisting_l2_bytes(device: Any, *, reset: bool = False) -> int | None:
    """How far ``device``'s persisting-L2 limit was raised above its value before any workspace
    code ran (CUDA only; None where unknown). With ``reset``, a raised limit is set back to that
    value and the persisting lines are released (the carve-out no longer survives a flush)."""
    if not getattr(device, "is_cuda", False):
        return None
    baseline = _L2_BASELINE.get(str(device), 0)
    found = _persisting_l2_limit(device, None)
    if found is None or found <= baseline:
        return None if found is None else 0
    if reset:
        _persisting_l2_limit(device, baseline)
    return found - baseline
