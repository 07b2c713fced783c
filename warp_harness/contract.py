"""Contracts: what "correct" and "fast enough" mean for one Warp kernel.

A contract is plain Python next to the kernel (or in a sibling ``<module>_contract.py``)::

    import numpy as np
    from warp_harness.contract import Contract, Tolerance

    def make_inputs(n, rng):
        return {"x": rng.standard_normal(n).astype(np.float32),
                "y": np.empty(n, np.float32),          # an output: poisoned with NaN before each launch
                "a": np.float32(2.0)}

    scale_contract = Contract(
        kernel="scale",                    # the kernel's name in its module (or the kernel object)
        reference=lambda x, a: {"y": a * x},   # numpy, called with float64 copies of the inputs
        inputs=make_inputs,
        sizes=[1, 17, 1024, 65536],
        outputs=["y"],
        tolerance=Tolerance(rtol=1e-5, atol=1e-6),
        bytes=lambda n: 8 * n,
        targets=["latency_us <= 200"],
    )

The daemon finds every module-level ``Contract`` (and the items of a ``__contracts__``
list). This module never imports Warp, so the static tier can import it cheaply.
"""

from __future__ import annotations

import operator
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import CodeType, FunctionType, MethodType
from typing import Any

Inputs = dict[str, Any]
InputGenerator = Callable[[int, Any], Inputs]  # (size, numpy Generator) -> {param name: value}
Reference = Callable[..., Any]
Constraint = Callable[[Inputs], bool]

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-5


@dataclass(frozen=True)
class Tolerance:
    """``|out - ref| <= atol + rtol * |ref|``, evaluated in float64."""

    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    def __post_init__(self) -> None:
        if self.rtol < 0 or self.atol < 0:
            raise ValueError(f"tolerances must be non-negative, got rtol={self.rtol}, atol={self.atol}")


@dataclass(frozen=True)
class EdgeCase:
    """Inputs that stress a corner (huge magnitudes, zeros, denormals ...), run at ``size``."""

    name: str
    inputs: InputGenerator
    size: int | None = None  # None: the smallest size in the contract that is >= 16, else the largest


_TARGET_RE = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(>=|<=|==|>|<)\s*([-+0-9.eE]+)\s*$")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}
# metrics the benchmark stage measures
METRICS = {
    "latency_us": "median time per launch in microseconds",
    "time_ms": "median time per launch in milliseconds",
    "bandwidth_gbs": "achieved bandwidth in GB/s (needs `bytes`)",
    "bandwidth_util": "achieved bandwidth / the profile's peak bandwidth (needs `bytes`)",
    "gflops": "achieved GFLOP/s (needs `flops`)",
    "flops_util": "achieved FLOP rate / the profile's peak FLOP rate (needs `flops`)",
}


@dataclass(frozen=True)
class Target:
    """A performance target such as ``bandwidth_util >= 0.8`` or ``latency_us <= 12``."""

    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Target:
        m = _TARGET_RE.match(text)
        if not m:
            raise ValueError(f"cannot parse performance target {text!r}; write e.g. 'bandwidth_util >= 0.8'")
        metric, op, value = m.group(1), m.group(2), m.group(3)
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r} in target {text!r}; known: {', '.join(METRICS)}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"target {text!r}: {value!r} is not a number") from None
        return cls(metric, op, number)

    def holds(self, measured: float) -> bool:
        return _OPS[self.op](measured, self.value)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.value:g}"


def kernel_name(kernel: Any) -> str:
    """The name a contract refers to: a string as given, or a Warp kernel's function name."""
    if isinstance(kernel, str):
        return kernel
    func = getattr(kernel, "func", None)
    name = (
        getattr(func, "__name__", None) or getattr(kernel, "key", None) or getattr(kernel, "__name__", None)
    )
    if not isinstance(name, str):
        raise TypeError(f"contract kernel must be a kernel or its name, got {kernel!r}")
    return name


@dataclass(frozen=True, eq=False)
class Contract:
    kernel: Any  # the @wp.kernel object or its name in the module
    reference: Reference
    inputs: InputGenerator
    outputs: Sequence[str]
    sizes: Sequence[int] = (1, 7, 64, 1000)
    # outputs that also carry input values (not poisoned, passed to the reference)
    inplace: Sequence[str] = ()
    # launch dimension: an int/tuple, or (size, inputs) -> int | tuple; default: shape of the first output
    dim: Any = None
    # tile kernels: launched with wp.launch_tiled (``dim`` then counts blocks, each of ``block_dim``
    # threads working on one tile); block_dim: an int, or (size, inputs) -> int; default: Warp's
    tiled: bool = False
    block_dim: Any = None
    # (description, predicate over the inputs) pairs, or bare predicates
    constraints: Sequence[Any] = ()
    # one Tolerance, or {"cpu": ..., "cuda": ..., "cuda:1": ..., "default": ...}
    tolerance: Tolerance | Mapping[str, Tolerance] = field(default_factory=Tolerance)
    edge_cases: Sequence[EdgeCase] = ()
    bytes: Callable[[int], float] | None = None
    flops: Callable[[int], float] | None = None
    targets: Sequence[str] = ()
    # the benchmark's size: an int, or {"cpu": ..., "cuda": ..., "cuda:1": ..., "default": ...}
    # (a size that fills a GPU is too large for a CPU); default: the largest of ``sizes``
    bench_size: int | Mapping[str, int] | None = None
    name: str | None = None  # shown in reports; default: the kernel name
    # `warp-harness tune`: module-level constants (`TILE_M = wp.constant(32)`, `THREADS = 64`)
    # -> the values to try; every combination is checked, validated and benchmarked
    tunables: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not callable(self.reference):
            raise TypeError("Contract.reference must be callable")
        if not callable(self.inputs):
            raise TypeError("Contract.inputs must be callable: (size, rng) -> {name: array}")
        if isinstance(self.outputs, str):
            object.__setattr__(self, "outputs", (self.outputs,))
        if not self.outputs:
            raise ValueError("Contract.outputs must name at least one output parameter")
        if not self.sizes or any(not isinstance(s, int) or s < 1 for s in self.sizes):
            raise ValueError(f"Contract.sizes must be positive integers, got {self.sizes!r}")
        object.__setattr__(self, "sizes", tuple(sorted(set(self.sizes))))
        for t in self.targets:
            Target.parse(t)  # fail at definition time, not in the daemon
        unknown = set(self.inplace) - set(self.outputs)
        if unknown:
            raise ValueError(f"Contract.inplace names {sorted(unknown)}, which are not outputs")
        kernel_name(self.kernel)
        sized = self.bench_size
        for s in sized.values() if isinstance(sized, Mapping) else [sized]:
            if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 1):
                raise ValueError(f"Contract.bench_size: positive integers (one or by device), got {sized!r}")
        for key, values in self.tunables.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"Contract.tunables: {key!r} is not a module-level constant's name")
            if isinstance(values, str) or not values:
                raise ValueError(f"Contract.tunables[{key!r}] must be a non-empty list of values")
        _seal(self)

    @property
    def kernel_name(self) -> str:
        return kernel_name(self.kernel)

    @property
    def label(self) -> str:
        return self.name or self.kernel_name

    def parsed_targets(self) -> list[Target]:
        return [Target.parse(t) for t in self.targets]

    def tolerance_for(self, device: str) -> Tolerance:
        """The tolerance for ``device``: exact alias, then its kind (``cuda``), then ``default``."""
        if isinstance(self.tolerance, Tolerance):
            return self.tolerance
        kind = device.split(":")[0]
        for key in (device, kind, "default", "*"):
            if key in self.tolerance:
                return self.tolerance[key]
        return Tolerance()

    def check_constraints(self, inputs: Inputs) -> str | None:
        """The description of the first violated validity constraint, or None."""
        for i, item in enumerate(self.constraints):
            if isinstance(item, tuple):
                description, predicate = item
            else:
                description, predicate = getattr(item, "__doc__", None) or f"constraint #{i + 1}", item
            if not predicate(inputs):
                return str(description)
        return None

    def edge_case_size(self, case: EdgeCase) -> int:
        if case.size is not None:
            return case.size
        return next((s for s in self.sizes if s >= 16), self.sizes[-1])

    @property
    def benchmark_size(self) -> int:
        """The benchmark's size where no device is named: ``bench_size``'s ``default``."""
        return self.benchmark_size_for("default")

    def benchmark_size_for(self, device: str) -> int:
        """The benchmark's size on ``device``: exact alias, then its kind (``cuda``), then
        ``default``, then the largest of ``sizes`` (as ``tolerance_for``)."""
        if isinstance(self.bench_size, int):
            return self.bench_size
        if isinstance(self.bench_size, Mapping):
            for key in (device, device.split(":")[0], "default"):
                if key in self.bench_size:
                    return int(self.bench_size[key])
        return self.sizes[-1]

    def benchmark_sizes_for(self, devices: Iterable[str]) -> list[int]:
        """Every size the benchmark may run at on ``devices`` as a process that sees no GPU names
        them (the verdict worker): a bare ``cuda`` stands for every ``cuda:N`` the mapping names."""
        sizes = set()
        for device in devices:
            sizes.add(self.benchmark_size_for(device))
            if device == "cuda" and isinstance(self.bench_size, Mapping):
                sizes.update(int(v) for k, v in self.bench_size.items() if k.startswith("cuda:"))
        return sorted(sizes)


# --------------------------------------------------------------------------- seals
#
# A contract is the specification its kernel is judged by; the daemon imports the kernel's
# module (and so runs its code) in the same processes as the contract. Each contract's fields
# are fingerprinted when it is built (the end of ``__post_init__``, before any later code of
# the module ran): the identity of every value, and of functions their code, defaults, closure
# cells and the module globals they read. ``tampered`` lists the fields that changed since:
# ``object.__setattr__(contract, "reference", ...)``, a tolerance widened in place, a list of
# sizes emptied, a reference's ``__code__`` swapped or a global it reads rebound.

_SEALS: weakref.WeakKeyDictionary[
    Contract, tuple[dict[str, Any], dict[str, Any], dict[int, tuple[str, ...]]]
] = weakref.WeakKeyDictionary()
_FIELD_NAMES: tuple[str, ...] = ()


def _code_names(code: CodeType, depth: int = 0) -> set[str]:
    names = set(code.co_names)
    if depth < 3:
        for const in code.co_consts:
            if isinstance(const, CodeType):
                names |= _code_names(const, depth + 1)
    return names


def _fingerprint(value: Any, known: dict[int, tuple[str, ...]], depth: int = 0) -> Any:
    """What ``value`` is, by identity, deep enough to see it changed in place. ``known``: for
    each function (by id), the globals it reads that existed when the contract was built (one
    defined later, such as the contract's own name read by its generator, is no change)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if depth > 4:
        return ("id", id(value))
    if isinstance(value, FunctionType):
        cells = []
        for cell in value.__closure__ or ():
            try:
                cells.append(_fingerprint(cell.cell_contents, known, depth + 1))
            except ValueError:  # an empty cell
                cells.append(("empty",))
        g = value.__globals__
        names = known.get(id(value))
        if names is None:
            names = known[id(value)] = tuple(sorted(n for n in _code_names(value.__code__) if n in g))
        read = tuple(id(g.get(n, _ABSENT)) for n in names)
        return (
            "function",
            id(value),
            id(value.__code__),
            id(value.__defaults__),
            id(value.__kwdefaults__),
            tuple(cells),
            read,
        )
    if isinstance(value, MethodType):
        return ("method", id(value.__self__), _fingerprint(value.__func__, known, depth + 1))
    if isinstance(value, Tolerance | EdgeCase):
        return (
            type(value).__name__,
            tuple(_fingerprint(getattr(value, f.name), known, depth + 1) for f in fields(value)),
        )
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_fingerprint(v, known, depth + 1) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), _fingerprint(v, known, depth + 1)) for k, v in value.items()))
    return ("id", id(value))


_ABSENT = object()


def _seal(contract: Contract) -> None:
    global _FIELD_NAMES
    if not _FIELD_NAMES:
        _FIELD_NAMES = tuple(f.name for f in fields(Contract))
    values = {name: getattr(contract, name) for name in _FIELD_NAMES}
    known: dict[int, tuple[str, ...]] = {}
    prints = {name: _fingerprint(v, known) for name, v in values.items()}
    _SEALS[contract] = (values, prints, known)


def tampered(contract: Contract) -> list[str]:
    """The fields of ``contract`` changed since it was built (``["<not built>"]``: it was never
    sealed, made without ``Contract(...)`` or its seal removed)."""
    sealed = _SEALS.get(contract)
    if sealed is None:
        return ["<not built>"]
    _, prints, known = sealed
    return [
        name for name, fp in prints.items() if _fingerprint(getattr(contract, name, None), dict(known)) != fp
    ]


def restore(contract: Contract, names: Sequence[str]) -> list[str]:
    """Bind the fields ``names`` back to the values they had when the contract was built; the
    names still changed afterwards (changed in place: a function's code, a widened tolerance)."""
    sealed = _SEALS.get(contract)
    if sealed is None:
        return list(names)
    values = sealed[0]
    for name in names:
        if name in values:
            object.__setattr__(contract, name, values[name])
    still = set(tampered(contract))
    return [n for n in names if n in still]


def define(
    kernel: Any,
    *,
    inputs: InputGenerator,
    outputs: Sequence[str],
    **options: Any,
) -> Callable[[Reference], Contract]:
    """Decorator form: the decorated numpy function becomes the reference of a Contract."""

    def wrap(reference: Reference) -> Contract:
        return Contract(kernel=kernel, reference=reference, inputs=inputs, outputs=outputs, **options)

    return wrap


def discover(namespace: Mapping[str, Any]) -> list[Contract]:
    """Every Contract a module defines at top level or lists in ``__contracts__``, in order, once."""
    found: list[Contract] = []
    seen: set[int] = set()

    def add(obj: Any) -> None:
        if isinstance(obj, Contract) and id(obj) not in seen:
            seen.add(id(obj))
            found.append(obj)

    for value in list(namespace.values()):
        add(value)
    extra = namespace.get("__contracts__")
    if isinstance(extra, list | tuple):
        for item in extra:
            add(item)
    return found


SIBLING_SUFFIXES = ("_contract", "_contracts")


__all__ = [
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "METRICS",
    "SIBLING_SUFFIXES",
    "Contract",
    "EdgeCase",
    "Target",
    "Tolerance",
    "define",
    "discover",
    "kernel_name",
    "restore",
    "tampered",
]
