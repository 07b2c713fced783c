"""The launch recorder: runs inside the user's own process (``warp-harness capture -- COMMAND``).

Installed by the private ``sitecustomize`` that ``capture`` puts first on the child's
``PYTHONPATH`` (``install_on_import``): once ``warp`` is imported, ``wp.launch`` (and with it
``wp.launch_tiled``, which forwards to it) is wrapped. For each distinct launch of a kernel of the
workspace (device, dim, block_dim, argument kinds, dtypes and shapes; at most ``N`` per kernel) it
copies every argument to the host before the launch, launches, copies the arrays again, and writes
one raw launch (``<pid>-<n>.npz`` arrays, then ``<pid>-<n>.json`` metadata as the commit mark) to
the private folder ``WARP_HARNESS_CAPTURE_RAW``. Each launch is written when it happens, so a command
that fails later still leaves it. What it cannot record is written as ``<pid>-skipped-<n>.json``.

It never changes what the user's launch computes: the original ``launch`` runs with the same
arguments; the copies are taken around it. The harness (``store.ingest``), not this process, files
the raw launches into the workspace's store and signs them.

Its cost is paid by every launch of the command, so a launch already recorded (or one that will
never be: a kernel outside the workspace) costs a lookup of its kernel's identity (cached per
kernel object) and a tuple of its arguments' kinds, dtypes and shapes; only a new distinct launch
is hashed and copied, and after it only the arrays whose bytes changed are copied again. numpy and
the source reader are imported once Warp is (every Python process of the command runs this
module's import, most never use Warp).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import inspect
import itertools
import json
import os
import sys
import threading
import weakref
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

RAW_ENV = "WARP_HARNESS_CAPTURE_RAW"
MAX_ENV = "WARP_HARNESS_CAPTURE_MAX"
ARG_CAP_ENV = "WARP_HARNESS_CAPTURE_ARG_BYTES"
WORKSPACE_ENV = "WARP_HARNESS_CAPTURE_WORKSPACE"
COMMAND_ENV = "WARP_HARNESS_CAPTURE_COMMAND"
DEFAULT_MAX_PER_KERNEL = 4
DEFAULT_ARG_BYTES = 32 * 1024 * 1024
# a uint64 parameter holds a mesh, hash grid, volume or BVH id: a pointer of the capturing process
_OBJECT_ID = "a uint64 object id (mesh, hash grid, volume, BVH) is valid only in the capturing process"


class Recorder:
    def __init__(self, raw: Path, workspace: Path, max_per_kernel: int, arg_bytes: int, command: str) -> None:
        self.raw = raw
        self.workspace = workspace
        self.max_per_kernel = max_per_kernel
        self.arg_bytes = arg_bytes
        self.command = command
        self.seen: dict[tuple[str, str], set[str]] = {}
        self.skipped: set[tuple[str, str]] = set()
        self.sources: dict[str, dict[str, Any]] = {}
        self.counter = itertools.count()
        self.lock = threading.Lock()
        self.busy = threading.local()
        self.signatures: dict[int, inspect.Signature] = {}
        # id(kernel) -> (the kernel, kept alive so that its id is not reused; its identity or None)
        # id(kernel) -> (a weak reference to the kernel: a reused id is told apart, and the kernel
        # is not kept alive, as Warp's tests of kernels made per call expect; its identity or None;
        # the record of its closure when it was made inside a function, ``closure_record``)
        self.identities: dict[int, tuple[Any, tuple[str, str, str] | None, dict[str, Any] | None]] = {}
        # frames of these files are not the user's launch site: Warp's, the recorder's, frozen modules
        import warp

        self.skipped_roots = (
            os.path.dirname(os.path.abspath(warp.__file__)) + os.sep,
            os.path.dirname(os.path.abspath(__file__)) + os.sep,
            "<frozen",
        )

    # ------------------------------------------------------------------ notes
    def skip(self, kernel: str, reason: str) -> None:
        key = (kernel, reason)
        if key in self.skipped:
            return
        self.skipped.add(key)
        self._write_json(
            f"{os.getpid()}-skipped-{next(self.counter)}.json", {"kernel": kernel, "reason": reason}
        )

    def _write_json(self, name: str, data: dict[str, Any]) -> None:
        tmp = self.raw / f".{name}.tmp"
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.raw / name)

    # ------------------------------------------------------------------ identity
    def kernel_identity(self, kernel: Any) -> tuple[str, str, str] | None:
        """(module path relative to the workspace, kernel name, source digest), or None."""
        func = getattr(kernel, "func", None)
        try:
            file = inspect.getsourcefile(func) if func is not None else None
        except TypeError:
            file = None
        if not file:
            return None
        real = Path(os.path.realpath(file))
        try:
            rel = real.relative_to(self.workspace).as_posix()
        except ValueError:
            return None
        if rel.startswith((".venv/", "venv/", ".warp-harness/")) or "/site-packages/" in rel:
            return None
        name = getattr(func, "__name__", "")
        if rel not in self.sources:
            from warp_harness.capture.identity import kernel_sources

            try:
                self.sources[rel] = {
                    k: v.digest for k, v in kernel_sources(real.read_text(encoding="utf-8")).items()
                }
            except (OSError, UnicodeDecodeError):
                self.sources[rel] = {}
        digest = self.sources[rel].get(name)
        if digest is None:
            return None
        return rel, name, digest

    # ------------------------------------------------------------------ the launch
    def around(self, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if getattr(self.busy, "on", False):  # a launch from inside our own copying
            return original(*args, **kwargs)
        try:
            plan = self.plan(original, args, kwargs)
        except Exception as exc:  # the user's launch runs whatever the recorder thinks of it
            plan = None
            self.skip("?", f"recorder error before the launch: {exc!r}")
        if plan is None:
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        try:
            self.busy.on = True
            self.finish(plan)
        except Exception as exc:
            self.skip(plan["meta"]["kernel"]["name"], f"recorder error after the launch: {exc!r}")
        finally:
            self.busy.on = False
        return result

    def plan(self, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        import warp as wp

        params_of = self.signatures.get(id(original))
        if params_of is None:
            params_of = self.signatures[id(original)] = inspect.signature(original)
        bound = params_of.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        kernel = a["kernel"]
        known = self.identities.get(id(kernel))
        if known is None or known[0]() is not kernel:
            identity = self.kernel_identity(kernel)
            closure = closure_record(kernel, identity[0], self.workspace) if identity else None
            try:
                ref: Any = weakref.ref(kernel)
            except TypeError:  # not weakly referenceable: kept alive, its id never reused
                ref = lambda kernel=kernel: kernel  # noqa: E731
            known = self.identities[id(kernel)] = (ref, identity, closure)
        identity, closure = known[1], known[2]
        if identity is None:
            return None
        rel, name, digest = identity
        label = f"{rel}::{name}"
        if a.get("adjoint"):
            self.skip(label, "adjoint (backward) launches are not recorded")
            return None
        if a.get("record_cmd"):
            self.skip(label, "launches recorded as `wp.Launch` objects (record_cmd=True) are not recorded")
            return None
        device = wp.get_device(a.get("device"))
        if getattr(device, "is_capturing", False):
            self.skip(label, "launches inside a CUDA graph capture (wp.ScopedCapture) are not recorded")
            return None
        values = list(a.get("inputs") or []) + list(a.get("outputs") or [])
        params = list(kernel.adj.args)
        if len(values) != len(params):
            return None  # Warp itself rejects it; nothing to record
        dim = a["dim"]
        dims = [int(dim)] if isinstance(dim, int) else [int(d) for d in dim]
        described = [
            {"name": p.label, "kind": "unrecorded", "why": _OBJECT_ID}
            if p.type is wp.uint64
            else self.describe(p.label, v, wp)
            for p, v in zip(params, values, strict=True)
        ]
        shapes = [(d["name"], d["kind"], d.get("dtype"), d.get("shape")) for d in described]
        # one factory makes kernels of one name over different closures: each its own launches
        cells = json.dumps(closure, sort_keys=True) if closure is not None else None
        distinct = repr((str(device), dims, a.get("block_dim"), shapes, cells))
        key = (rel, name)
        with self.lock:
            seen = self.seen.setdefault(key, set())
            if distinct in seen:
                return None
            if len(seen) >= self.max_per_kernel:
                self.skip(label, f"more than {self.max_per_kernel} distinct launches (--max-per-kernel)")
                return None
            seen.add(distinct)
        signed: list[Any] = [str(device), dims, a.get("block_dim"), shapes]
        if closure is not None:  # a module-level kernel's launch ids are those of before
            signed.append(closure)
        sig_src = json.dumps(signed, sort_keys=True)
        signature = hashlib.sha256(sig_src.encode()).hexdigest()[:16]
        before: dict[str, np.ndarray] = {}
        incomplete: list[str] = []
        arrays: dict[str, Any] = {}
        for d, v in zip(described, values, strict=True):
            self._copy(d, v, before, arrays, incomplete)
        meta = {
            "schema": 1,
            "kernel": {"path": rel, "name": name, "digest": digest, "key": str(getattr(kernel, "key", name))},
            "signature": signature,
            "device": str(device),
            "dim": dims,
            "block_dim": a.get("block_dim"),
            "args": described,
            "incomplete": incomplete,
            "provenance": self.provenance(),
        }
        if closure is not None:
            meta["closure"] = closure
        return {"meta": meta, "before": before, "arrays": arrays}

    def _copy(
        self,
        d: dict[str, Any],
        value: Any,
        before: dict[str, np.ndarray],
        arrays: dict[str, Any],
        incomplete: list[str],
    ) -> None:
        if d["kind"] == "array":
            if d["bytes"] > self.arg_bytes:
                d["kind"] = "too-large"
                incomplete.append(f"`{d['name']}` ({d['bytes']} bytes) is above the per-argument cap")
                return
            before[d["name"]] = _np().array(value.numpy(), copy=True)
            arrays[d["name"]] = value
        elif d["kind"] == "struct":
            for f in d["fields"]:
                self._copy(f, getattr(value, f["name"].split(".", 1)[1]), before, arrays, incomplete)
        elif d["kind"] == "unrecorded":
            incomplete.append(f"`{d['name']}`: {d['why']}")

    def describe(self, name: str, value: Any, wp: Any) -> dict[str, Any]:
        """How an argument is recorded: arrays by dtype/shape/strides (contents copied apart),
        scalars and vectors/matrices by value, structs field by field."""
        if isinstance(value, wp.array):
            if type(value) is not wp.array:
                return {"name": name, "kind": "unrecorded", "why": f"{type(value).__name__} is not recorded"}
            # capb (#31): the store holds plain numeric arrays only (an array of structs was refused, WHD084)
            if type(value.dtype).__name__ == "Struct":
                return {"name": name, "kind": "unrecorded", "why": "an array of structs is not recorded"}
            return {
                "name": name,
                "kind": "array",
                "dtype": getattr(value.dtype, "__name__", str(value.dtype)),
                "shape": [int(s) for s in value.shape],
                "strides": [int(s) for s in value.strides],
                "bytes": int(value.capacity or 0),
                "device": str(value.device),
            }
        if value is None:
            return {"name": name, "kind": "none"}
        if isinstance(value, bool | int | float):
            return {"name": name, "kind": "scalar", "dtype": type(value).__name__, "value": value}
        cls = getattr(value, "_cls", None)
        if cls is not None and hasattr(cls, "vars"):  # a wp.struct instance
            fields = [
                {"name": f"{name}.{fname}", "kind": "unrecorded", "why": _OBJECT_ID}
                if var.type is wp.uint64
                else self.describe(f"{name}.{fname}", getattr(value, fname), wp)
                for fname, var in cls.vars.items()
            ]
            return {"name": name, "kind": "struct", "dtype": getattr(cls, "key", "struct"), "fields": fields}
        dtype = type(value)
        if hasattr(dtype, "_length_"):  # vector, matrix, quaternion, transform (ctypes arrays)
            numpy = _np()
            flat = numpy.array(value, dtype=numpy.float64).ravel().tolist()
            return {"name": name, "kind": "vector", "dtype": dtype.__name__, "value": flat}
        if hasattr(value, "value") and isinstance(value.value, int | float):  # wp.float32(1.0) and co
            return {"name": name, "kind": "scalar", "dtype": dtype.__name__, "value": value.value}
        return {"name": name, "kind": "unrecorded", "why": f"{dtype.__name__} is not recorded"}

    def provenance(self) -> dict[str, Any]:
        """file:line of the user's launch (first frame outside Warp and the harness), the test id."""
        frame = sys._getframe(2)
        where: dict[str, Any] = {}
        while frame is not None:
            file = frame.f_code.co_filename
            if not file.startswith(self.skipped_roots):
                try:
                    rel = Path(os.path.realpath(file)).relative_to(self.workspace).as_posix()
                except ValueError:
                    rel = file
                where = {"file": rel, "line": frame.f_lineno}
                break
            frame = frame.f_back  # type: ignore[assignment]
        test = os.environ.get("PYTEST_CURRENT_TEST", "")
        if test:
            where["test"] = test.rsplit(" (", 1)[0]
        where["command"] = self.command
        return where

    def finish(self, plan: dict[str, Any]) -> None:
        numpy = _np()
        meta = plan["meta"]
        after: dict[str, np.ndarray] = {}
        written: list[str] = []
        for name, arr in plan["arrays"].items():
            now = arr.numpy()  # a CPU array's own memory: copied only when the launch changed it
            old = plan["before"][name]
            if not _same_bytes(now, old):
                written.append(name)
                after[name] = numpy.array(now, copy=True)
        meta["written"] = written
        n = next(self.counter)
        stem = f"{os.getpid()}-{n}"
        blobs = {f"b/{k}": v for k, v in plan["before"].items()} | {f"a/{k}": v for k, v in after.items()}
        tmp = self.raw / f".{stem}.npz.tmp"
        with open(tmp, "wb") as fh:
            numpy.savez(fh, **blobs)
        os.replace(tmp, self.raw / f"{stem}.npz")
        self._write_json(f"{stem}.json", meta)


def closure_record(kernel: Any, rel: str, workspace: Path) -> dict[str, Any] | None:
    """What a kernel made inside a function (a factory) closes over, as data: its qualname, its
    module's path ``rel`` and per closure cell a literal (``int``/``float``/``bool``), a Warp type
    (``{"kind": "warp", "name": "float32"}``), a ``@wp.func``/``@wp.struct`` defined at the top of
    a workspace file (``{"kind": "func", "file", "qualname"}``), else ``{"kind": "other", "type"}``.
    None for a kernel defined at a module's top level. The replay builds the kernel from its text
    with these values (``daemon/hermetic_factory.py``); nothing here is ever executed."""
    func = getattr(kernel, "func", None)
    qualname = str(getattr(func, "__qualname__", ""))
    code = getattr(func, "__code__", None)
    definition = _definition(workspace / rel, qualname, getattr(code, "co_firstlineno", 0))
    if "<locals>" not in qualname:
        # a module-level kernel: a record only where its name has several defs (which one ran)
        if definition is None:
            return None
        return {"qualname": qualname, "path": rel, "cells": {}, "definition": list(definition)}
    names = tuple(getattr(code, "co_freevars", ()))
    cells = getattr(func, "__closure__", None) or ()
    record: dict[str, Any] = {}
    for name, cell in zip(names, cells, strict=False):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell: the factory had not bound it yet
            record[name] = {"kind": "other", "type": "empty cell"}
            continue
        record[name] = _cell(value, workspace)
    out: dict[str, Any] = {"qualname": qualname, "path": rel, "cells": record}
    if definition is not None:
        out["definition"] = list(definition)
    out.update(_decorator_values(kernel, qualname, workspace / rel, workspace, definition))
    return out


def _tree(path: Path) -> Any:
    """The syntax tree of the file ``path`` (kept while its modification time is the same)."""
    import ast

    stamp = path.stat().st_mtime
    kept = _TREES.get(str(path))
    if kept is None or kept[0] != stamp:
        kept = _TREES[str(path)] = (stamp, ast.parse(path.read_text(encoding="utf-8")))
    return kept[1]


def _definition(path: Path, qualname: str, first_line: int) -> tuple[int, int] | None:
    """Which of the defs of the kernel's name it was made from, where its name has several
    (``identity.definition_in``): the replay builds that one."""
    from warp_harness.capture.identity import definition_in

    try:
        return definition_in(_tree(path), qualname, int(first_line))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError, TypeError):
        return None


# the keywords of ``@wp.kernel(...)`` Warp keeps in ``Kernel.options`` under their own names, absent
# when given None (warp/_src/context.py ``kernel``)
_KERNEL_KEYWORDS = ("enable_backward", "grid_stride", "launch_bounds")
_TREES: dict[str, tuple[float, Any]] = {}


def _decorator_values(
    kernel: Any, qualname: str, path: Path, workspace: Path, definition: tuple[int, int] | None
) -> dict[str, Any]:
    """What the factory computed, as data, and the digests that say which code computed it: the
    digest of the factory's code around the kernel (``identity.factory_digest``) and of the texts of
    the module names that code reads (``factory_reads.reads_digest``; absent when they cannot be
    followed), and what the factory gave the kernel's decorator: ``module_options`` (the options of
    its own module, ``module="unique"``, that differ from a fresh module's) and the keywords of
    ``_KERNEL_KEYWORDS`` Warp kept (absent when any of it is not a literal or a Warp enum member).
    The replay takes these values, and the closure cells of locals the factory computed
    (mujoco-warp's ``IS_ELLIPTIC = cone_type == types.ConeType.ELLIPTIC``), only while the saved
    texts give the same digests."""
    import warp as wp

    from warp_harness.capture import factory_reads
    from warp_harness.capture.identity import factory_digest
    from warp_harness.daemon.hermetic_imports import Sources

    try:
        tree = _tree(path)
        digest = factory_digest(tree, qualname, definition)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return {}
    if digest is None:
        return {}
    out: dict[str, Any] = {"factory": digest}
    try:
        sources = Sources.for_file(str(path), workspace, None)
        out["reads"] = factory_reads.reads_digest(tree, qualname, str(path), sources, definition)
    except Exception:  # what cannot be followed is not recorded: the replay then refuses, saying why
        pass
    module: Any = getattr(kernel, "module", None)
    context: Any = sys.modules.get("warp._src.context") or sys.modules.get("warp.context")
    try:
        fresh = dict(context.Module("_wh_defaults", None).options)
        options = {k: v for k, v in dict(getattr(module, "options", {})).items() if fresh.get(k, v) != v}
        own = dict(getattr(kernel, "options", {}) or {})
    except Exception:  # a Warp that keeps neither: no decorator values are recorded
        return out
    module_options = {k: _option_value(v, wp) for k, v in options.items()}
    keywords = {k: _option_value(own[k], wp) for k in _KERNEL_KEYWORDS if k in own}
    values = [*module_options.values(), *keywords.values()]
    if any(v is _UNRECORDABLE for v in values):
        return out
    return {**out, "module_options": module_options, "keywords": keywords}


_UNRECORDABLE = object()


def _option_value(value: Any, wp: Any) -> Any:
    """A literal (``None``, ``bool``, ``int``, ``float``, ``str``, a list of ints for a tuple) as
    itself, a Warp enum member as ``{"warp": "DeterministicMode.RUN_TO_RUN"}``, else _UNRECORDABLE."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, tuple) and all(type(v) is int for v in value):
        return list(value)
    enum_type = type(value)
    member = getattr(value, "name", None)
    if (
        isinstance(member, str)
        and getattr(wp, enum_type.__name__, None) is enum_type
        and getattr(enum_type, member, None) is value
    ):
        return {"warp": f"{enum_type.__name__}.{member}"}
    return _UNRECORDABLE


def _cell(value: Any, workspace: Path, depth: int = 0) -> dict[str, Any]:
    import warp as wp

    if type(value) in (bool, int, float):
        return {"kind": type(value).__name__, "value": value}
    if value in (bool, int, float):  # a scalar type spelled as Python's (``scalar_type=float``)
        return {"kind": "builtin", "name": value.__name__}
    type_name = str(getattr(value, "__name__", "")) if isinstance(value, type) else ""
    if type_name and getattr(wp, type_name, None) is value:
        return {"kind": "warp", "name": type_name}  # wp.float32, wp.vec3f
    if type_name in ("vec_t", "mat_t"):  # made by wp.types.vector(...)/matrix(...) in the factory
        made = _made_type(value, type_name, wp)
        if made is not None:
            return made
    struct_type: Any = getattr(sys.modules.get("warp._src.codegen"), "Struct", ())
    if isinstance(value, wp.Function):
        kind, py = "func", getattr(value, "func", None)
    elif struct_type and isinstance(value, struct_type):
        kind, py = "struct", getattr(value, "cls", None)
    else:
        return {"kind": "other", "type": type(value).__name__}
    try:
        file = inspect.getsourcefile(py) if py is not None else None
        rel = Path(os.path.realpath(file)).relative_to(workspace).as_posix() if file else None
    except (TypeError, ValueError):
        rel = None
    if rel is None:
        return {"kind": "other", "type": f"{kind} outside the workspace"}
    qualname = str(getattr(py, "__qualname__", ""))
    out: dict[str, Any] = {"kind": kind, "file": rel, "qualname": qualname}
    if kind == "func" and "<locals>" in qualname and depth == 0:
        # a `@wp.func` its factory made beside the kernel: what it closes over, one level deep
        code = getattr(py, "__code__", None)
        cells = getattr(py, "__closure__", None) or ()
        inner: dict[str, Any] = {}
        for name, cell in zip(tuple(getattr(code, "co_freevars", ())), cells, strict=False):
            try:
                inner[name] = _cell(cell.cell_contents, workspace, depth + 1)
            except ValueError:
                inner[name] = {"kind": "other", "type": "empty cell"}
        out["cells"] = inner
    return out


def _made_type(value: Any, type_name: str, wp: Any) -> dict[str, Any] | None:
    """A vector or matrix type a factory made (``vecdim = wp.types.vector(length=n, dtype=float)``,
    mujoco-warp's ``constraint.py``; newton's ``exported_ids_vec``) as data: its length (shape) and
    its scalar type by its name under ``warp``; None for anything else."""
    scalar = getattr(value, "_wp_scalar_type_", None)
    scalar_name = str(getattr(scalar, "__name__", ""))
    if not scalar_name or getattr(wp, scalar_name, None) is not scalar:
        return None
    if type_name == "vec_t" and type(getattr(value, "_length_", None)) is int:
        return {"kind": "vector", "length": value._length_, "dtype": scalar_name}
    shape = getattr(value, "_shape_", None)
    if (
        type_name == "mat_t"
        and isinstance(shape, tuple)
        and len(shape) == 2
        and all(type(d) is int for d in shape)
    ):
        return {"kind": "matrix", "shape": list(shape), "dtype": scalar_name}
    return None


def _np() -> Any:
    import numpy

    return numpy


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays hold the same shape and bytes (a NaN equal to itself)."""
    if a.shape != b.shape or a.dtype.itemsize != b.dtype.itemsize:
        return False
    numpy = _np()
    left, right = numpy.ascontiguousarray(a), numpy.ascontiguousarray(b)
    return bool(numpy.array_equal(left.view(numpy.uint8), right.view(numpy.uint8)))


_RECORDER: Recorder | None = None


def install(recorder: Recorder) -> None:
    """Wrap ``wp.launch`` (the public name and the one ``launch_tiled`` calls) with the recorder."""
    import warp as wp

    context: Any = sys.modules.get("warp._src.context") or sys.modules["warp.context"]
    original = context.launch
    if getattr(original, "__wh_capture__", False):
        return

    def launch(*args: Any, **kwargs: Any) -> Any:
        return recorder.around(original, args, kwargs)

    wrapper: Any = launch
    wrapper.__wh_capture__ = True
    wrapper.__wrapped__ = original
    wrapper.__signature__ = inspect.signature(original)
    public: Any = wp
    context.launch = wrapper
    public.launch = wrapper
    if "warp.context" in sys.modules:
        legacy: Any = sys.modules["warp.context"]
        legacy.launch = wrapper


def recorder_from_env() -> Recorder | None:
    raw = os.environ.get(RAW_ENV, "")
    if not raw or not os.path.isdir(raw):
        return None
    workspace = Path(os.path.realpath(os.environ.get(WORKSPACE_ENV) or os.getcwd()))
    try:
        max_per = int(os.environ.get(MAX_ENV) or DEFAULT_MAX_PER_KERNEL)
        arg_bytes = int(os.environ.get(ARG_CAP_ENV) or DEFAULT_ARG_BYTES)
    except ValueError:
        max_per, arg_bytes = DEFAULT_MAX_PER_KERNEL, DEFAULT_ARG_BYTES
    return Recorder(Path(raw), workspace, max_per, arg_bytes, os.environ.get(COMMAND_ENV, ""))


class _AfterWarp(importlib.abc.MetaPathFinder):
    """Installs the recorder right after ``warp`` is imported (the child imports Warp only if it
    uses it: a command that never does pays nothing)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "warp":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_install(module: ModuleType) -> None:
            exec_module(module)
            global _RECORDER
            if _RECORDER is None:
                _RECORDER = recorder_from_env()
            if _RECORDER is not None:
                install(_RECORDER)

        loader.exec_module = exec_and_install  # type: ignore[method-assign]
        return spec


def install_on_import() -> None:
    """Called by the capture's private ``sitecustomize``."""
    if "warp" in sys.modules:
        global _RECORDER
        _RECORDER = recorder_from_env()
        if _RECORDER is not None:
            install(_RECORDER)
        return
    sys.meta_path.insert(0, _AfterWarp())
