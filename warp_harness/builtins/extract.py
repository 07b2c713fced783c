"""Dump Warp's builtin signature table as plain data (msgpack).

This file runs in a *child* process: the language server and the checker never import ``warp``.
The parent (``loader.py``) starts it as a script, ``python extract.py --output FILE``, so this
module imports nothing of ``warp_harness`` and imports ``warp`` only inside :func:`dump`.

``python -m warp_harness.builtins.extract --write-snapshot`` regenerates the snapshot shipped in
the package (``snapshot.msgpack``), the fallback for machines where Warp cannot be imported.

Data layout (``FORMAT`` below; the parent validates it and discards anything else):

``types``
    interned serialised types; every other record refers to them by index. A type is a small
    dict: ``{"k": "scalar", "n": "float32"}``, ``{"k": "generic", "n": "Float"}``, ``{"k": "any"}``,
    ``{"k": "vector", "len": 3 | None, "dtype": T}``, ``{"k": "matrix", "shape": [r, c], "dtype": T}``
    (``None`` for a generic extent), ``{"k": "quat", "dtype": T}``, ``{"k": "transform", "dtype": T}``,
    ``{"k": "array", "kind": "array", "ndim": 1, "dtype": T}``, ``{"k": "tile", "dtype": T,
    "ndim": 2 | None, "storage": "register"}``, ``{"k": "tuple", "items": [T, ...] | None,
    "ellipsis": bool}``, ``{"k": "py", "n": "str"}``, ``{"k": "callable"}``, ``{"k": "none"}`` (a
    function returning nothing), ``{"k": "multi", "items": [...]}`` (several return values, as
    ``wp.tid()``), ``{"k": "other", "n": "MeshQuery"}``.
``builtins``
    one record per entry of ``warp._src.context.builtin_functions``, overloads in Warp's
    resolution order (the first overload that matches wins). A parameter is
    ``[name, kind, type, has_default, default_matches]`` where ``kind`` is 0 positional-or-keyword,
    1 ``*args``, 2 keyword-only, 3 ``**kwargs``, and ``default_matches`` is False when Warp's own
    default value does not match the parameter type (such an overload only matches when the
    argument is passed). ``r`` is the return type index, or None when a ``value_func`` computes it.
    ``rm``, when present: the Warp version that removed the overload (``.. versionremoved::`` in its
    documentation; calling it raises).
``pyi``
    the builtin stubs of ``warp/__init__.pyi`` (read with ``ast``), annotation trees for the
    parameters and the return type: ``["n", name]``, ``["s", base, [args]]``, ``["u", [alts]]``,
    ``["c", constant]``, ``["..."]``, ``["?"]``.
``attrs``
    ``dir(warp)`` public names with a coarse kind; ``kcall`` maps the names that a kernel may call
    to the builtin they resolve to (``vec3`` -> ``vector``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FORMAT = 1

# Parameter kinds, as stored
POS_OR_KW, VAR_POS, KW_ONLY, VAR_KW = 0, 1, 2, 3

SNAPSHOT_PATH = Path(__file__).with_name("snapshot.msgpack")


def extractor_id() -> str:
    """A digest of this file: a cache written by another version of the extractor is not reused."""
    from warp_harness.digests import sha256

    return sha256(Path(__file__).read_bytes()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# Type serialisation (child side, warp imported)
# --------------------------------------------------------------------------------------------


def _warp_module(name: str) -> Any:
    """Import a Warp module (child process only), typed ``Any``: Warp's internals are not typed API."""
    import importlib

    return importlib.import_module(name)


class _Serialiser:
    def __init__(self) -> None:
        import builtins as py_builtins
        import collections.abc
        import typing

        wt = _warp_module("warp._src.types")
        self.wt = wt
        self.typing = typing
        self.py = py_builtins
        self.abc_callable = collections.abc.Callable
        self.types: list[dict[str, Any]] = []
        self._index: dict[str, int] = {}
        self._vector_hint = getattr(wt, "Vector", None)
        self._matrix_hint = getattr(wt, "Matrix", None)
        self._quat_hint = getattr(wt, "Quaternion", None)
        self._transform_hint = getattr(wt, "Transformation", None)

    def intern(self, t: Any) -> int:
        d = self.ser(t)
        key = json.dumps(d, sort_keys=True)
        idx = self._index.get(key)
        if idx is None:
            idx = len(self.types)
            self.types.append(d)
            self._index[key] = idx
        return idx

    def _scalar_name(self, t: Any) -> str | None:
        wt = self.wt
        if t is float:
            return "float32"
        if t is int:
            return "int32"
        if t is self.py.bool or t is wt.bool:
            return "bool"
        if t is getattr(wt, "handle", None):
            return "uint64"  # Warp treats handle and uint64 as interchangeable
        if isinstance(t, type) and t in wt.scalar_types:
            return str(t.__name__)
        return None

    def _length(self, v: Any) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

    def ser(self, t: Any) -> dict[str, Any]:
        wt = self.wt
        typing = self.typing
        strip = getattr(wt, "strip_reference", None)
        if strip is not None:
            t = strip(t)
        if t is typing.Any:
            return {"k": "any"}
        if t is None:
            return {"k": "none"}
        if isinstance(t, typing.TypeVar):
            return {"k": "generic", "n": t.__name__}
        name = self._scalar_name(t)
        if name is not None:
            return {"k": "scalar", "n": name}
        if t is str:
            return {"k": "py", "n": "str"}
        if t is tuple:
            return {"k": "tuple", "items": None, "ellipsis": False}
        if wt.is_tuple(t):
            return self._tuple(tuple(t.types))
        if typing.get_origin(t) is tuple:
            return self._tuple(typing.get_args(t))
        if t is self.abc_callable or typing.get_origin(t) is self.abc_callable or t is typing.Callable:
            return {"k": "callable"}
        if isinstance(t, type) and hasattr(t, "_wp_generic_type_hint_"):
            hint = getattr(t, "_wp_generic_type_hint_", None)
            params = tuple(getattr(t, "_wp_type_params_", ()))
            if hint is self._vector_hint and len(params) == 2:
                return {"k": "vector", "len": self._length(params[0]), "dtype": self.ser(params[1])}
            if hint is self._matrix_hint and len(params) == 3:
                shape = [self._length(params[0]), self._length(params[1])]
                return {"k": "matrix", "shape": shape, "dtype": self.ser(params[2])}
            if hint is self._quat_hint and len(params) == 1:
                return {"k": "quat", "dtype": self.ser(params[0])}
            if hint is self._transform_hint and len(params) == 1:
                return {"k": "transform", "dtype": self.ser(params[0])}
            return {"k": "other", "n": getattr(t, "__name__", repr(t))}
        if wt.is_array(t):
            kind = wt.concrete_array_type(t).__name__
            array_ndim = getattr(t, "ndim", None)
            return {
                "k": "array",
                "kind": kind,
                "ndim": array_ndim if isinstance(array_ndim, int) else None,
                "dtype": self.ser(getattr(t, "dtype", typing.Any)),
            }
        if wt.is_tile(t):
            tile_shape: Any = getattr(t, "shape", None)
            ndim: int | None = None
            if isinstance(tile_shape, tuple):
                ndim = len(tile_shape)
            elif typing.get_origin(tile_shape) is tuple:
                args = typing.get_args(tile_shape)
                ndim = None if (args and args[-1] is Ellipsis) else len(args)
            storage = getattr(t, "storage", None)
            return {
                "k": "tile",
                "dtype": self.ser(getattr(t, "dtype", typing.Any)),
                "ndim": ndim,
                "storage": storage if isinstance(storage, str) else None,
            }
        if isinstance(t, list | tuple):
            return {"k": "multi", "items": [self.ser(x) for x in t]}
        return {"k": "other", "n": str(getattr(t, "__name__", None) or type(t).__name__)}

    def _tuple(self, args: tuple[Any, ...]) -> dict[str, Any]:
        if args and args[-1] is Ellipsis:
            return {"k": "tuple", "items": [self.ser(x) for x in args[:-1]], "ellipsis": True}
        return {"k": "tuple", "items": [self.ser(x) for x in args], "ellipsis": False}


def _is_trivial_value_func(func: Any) -> bool:
    """True for the wrapper ``add_builtin`` makes around a plain ``value_type``."""
    return getattr(func, "__qualname__", "") == "add_builtin.<locals>.value_func"


def _default_matches(o: Any, name: str, value: Any) -> bool:
    """Whether Warp's own default for ``name`` matches its parameter (as ``func_match_args`` checks)."""
    import typing

    cg = _warp_module("warp._src.codegen")
    wt = _warp_module("warp._src.types")

    if value is None:
        return True
    param = o.input_types.get(name)
    if param is None or param is typing.Any:
        return True
    try:
        arg = wt.strip_reference(cg.get_arg_type(value))
        param = wt.strip_reference(param)
        if wt.is_array(param):
            return True
        return bool(wt.types_equal_generic(param, arg))
    except Exception:
        return True


def _overload_record(o: Any, ser: _Serialiser, user: bool, template: bool = False) -> dict[str, Any]:
    import typing

    params: list[list[Any]] = []
    kind = POS_OR_KW
    for raw, t in o.input_types.items():
        if raw.startswith("**"):
            name, pkind = raw[2:], VAR_KW
        elif raw.startswith("*"):
            name, pkind = raw[1:], VAR_POS
            kind = KW_ONLY
        else:
            name, pkind = raw, kind
        has_default = name in o.defaults
        ok = _default_matches(o, name, o.defaults[name]) if has_default else True
        params.append([name, pkind, ser.intern(t), has_default, ok])

    ret: int | None = None
    if user and not template:
        # a concrete @wp.func overload returns its annotation; a generic template's instances
        # infer the type from the body (Warp drops the annotation's value_func for them)
        arg_types = getattr(getattr(o, "adj", None), "arg_types", {}) or {}
        if "return" in arg_types:
            r = ser.ser(arg_types["return"])
            if r["k"] not in ("any", "generic"):
                ret = ser.intern(arg_types["return"])
    elif _is_trivial_value_func(o.value_func) and o.value_type is not typing.Any:
        ret = ser.intern(o.value_type)
    record: dict[str, Any] = {"p": params, "r": ret, "v": bool(o.variadic), "h": bool(o.hidden), "ra": None}
    removed = _removed_in(getattr(o, "doc", "") or "")
    if removed is not None:
        record["rm"] = removed
    return record


def _removed_in(doc: str) -> str | None:
    """The version in a ``.. versionremoved:: X`` directive of an overload's documentation: Warp keeps
    such overloads registered so that calling one raises a message saying what replaced it."""
    marker = ".. versionremoved::"
    at = doc.find(marker)
    if at < 0:
        return None
    words = doc[at + len(marker) :].split()
    return words[0] if words else ""


def _attribute_kind(name: str, value: Any, builtin_names: set[str], param_classes: set[int]) -> str:
    import types
    import typing

    wc = _warp_module("warp._src.context")
    wt = _warp_module("warp._src.types")

    if isinstance(value, wc.Function):
        return (
            "builtin_function" if (value.key in builtin_names or name in builtin_names) else "warp_function"
        )
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, typing.TypeVar | types.UnionType):
        return "type"
    if isinstance(value, type):
        array_bases = (*wt.array_types, getattr(wt, "_ArrayAnnotationBase", wt.array))
        if (
            value in wt.scalar_types
            or value is wt.bool
            or value is getattr(wt, "handle", None)
            or hasattr(value, "_wp_generic_type_str_")
            or issubclass(value, array_bases)
            or value is getattr(wt, "tile", None)
            or value is getattr(wt, "ref", None)
            or id(value) in param_classes
        ):
            return "type"
        return "class"
    if isinstance(value, bool | int | float | complex | str | bytes) or value is None:
        return "constant"
    if callable(value):
        return "python_function"
    return "constant"


def _kernel_call_target(name: str, value: Any, present: bool, builtin_names: set[str]) -> str | None:
    """The builtin that ``wp.<name>(...)`` resolves to inside a kernel (mirrors Adjoint.emit_Call)."""
    wc = _warp_module("warp._src.context")

    if present and isinstance(value, wc.Function):
        return str(value.key) if value.key in builtin_names else None
    if name in builtin_names:
        return name
    if not present:
        return None
    if hasattr(value, "_wp_generic_type_str_"):
        ctor = getattr(value, "_wp_constructor_", None)
        return ctor if isinstance(ctor, str) and ctor in builtin_names else None
    dunder = getattr(value, "__name__", None)
    if isinstance(dunder, str) and dunder in builtin_names:
        return dunder
    return None


# --------------------------------------------------------------------------------------------
# __init__.pyi (ast only)
# --------------------------------------------------------------------------------------------


def _ann_tree(node: ast.expr | None) -> list[Any]:
    if node is None:
        return ["n", "Any"]
    if isinstance(node, ast.Name):
        return ["n", node.id]
    if isinstance(node, ast.Attribute):
        return ["n", node.attr]
    if isinstance(node, ast.Constant):
        if node.value is None:
            return ["n", "None"]
        if node.value is Ellipsis:
            return ["..."]
        if isinstance(node.value, bool | int | str):
            return ["c", node.value]
        return ["?"]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        alts: list[Any] = []
        for side in (node.left, node.right):
            tree = _ann_tree(side)
            if tree[0] == "u":
                alts.extend(tree[1])
            else:
                alts.append(tree)
        return ["u", alts]
    if isinstance(node, ast.Subscript):
        base = _ann_tree(node.value)
        if base[0] != "n":
            return ["?"]
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return ["s", base[1], [_ann_tree(e) for e in elts]]
    if isinstance(node, ast.Tuple):
        return ["s", "tuple", [_ann_tree(e) for e in node.elts]]
    return ["?"]


def parse_pyi(path: Path, names: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The top-level ``def`` stubs of ``path`` for ``names``: parameter and return annotation trees."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: dict[str, list[dict[str, Any]]] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in names:
            continue
        a = node.args
        params: list[list[Any]] = []
        positional = [*a.posonlyargs, *a.args]
        first_default = len(positional) - len(a.defaults)
        for i, arg in enumerate(positional):
            params.append([arg.arg, POS_OR_KW, _ann_tree(arg.annotation), i >= first_default])
        if a.vararg is not None:
            params.append([a.vararg.arg, VAR_POS, _ann_tree(a.vararg.annotation), False])
        for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            params.append([arg.arg, KW_ONLY, _ann_tree(arg.annotation), default is not None])
        if a.kwarg is not None:
            params.append([a.kwarg.arg, VAR_KW, _ann_tree(a.kwarg.annotation), False])
        ret = node.returns
        out.setdefault(node.name, []).append(
            {"p": params, "r": _ann_tree(ret), "rs": ast.unparse(ret) if ret is not None else None}
        )
    return out


_ANN_KIND = {
    "Vector": ("vector",),
    "Matrix": ("matrix",),
    "Quaternion": ("quat",),
    "Transformation": ("transform",),
    "Array": ("array",),
    "FabricArray": ("array",),
    "IndexedFabricArray": ("array",),
    "Tile": ("tile",),
    "tuple": ("tuple",),
}
_SCALARISH = ("scalar", "generic", "any")


def _ann_accepts(tree: list[Any], t: dict[str, Any]) -> bool:
    """Coarse structural test: could stub annotation ``tree`` describe serialised type ``t``?"""
    if t["k"] == "any":
        return True
    tag = tree[0]
    if tag == "u":
        return any(_ann_accepts(alt, t) for alt in tree[1])
    if tag == "s":
        if tree[1] == "type":
            return True
        kinds = _ANN_KIND.get(str(tree[1]))
        return kinds is None or t["k"] in kinds
    if tag == "n":
        n = str(tree[1])
        if n == "Any":
            return True
        if n == "str":
            return bool(t["k"] == "py")
        if n in ("int", "float", "bool") or n.startswith(("int", "uint", "float", "bfloat")):
            return t["k"] in _SCALARISH
        if n in ("Float", "Int", "Scalar") or n.startswith("DType"):
            return t["k"] in _SCALARISH
        return True
    return True


def _associate_return_annotations(
    records: list[dict[str, Any]], types: list[dict[str, Any]], pyi: dict[str, list[dict[str, Any]]]
) -> None:
    """Give each overload whose return type a ``value_func`` computes its stub's return annotation."""
    for rec in records:
        stubs = pyi.get(rec["name"], [])
        if not stubs:
            continue
        for ov in rec["ovl"]:
            if ov["r"] is not None:
                continue
            names = [p[0] for p in ov["p"]]
            optional = {p[0] for p in ov["p"] if p[3] or p[1] in (VAR_POS, VAR_KW)}
            exact: list[str | None] = []
            loose: list[str | None] = []
            for stub in stubs:
                snames = [p[0] for p in stub["p"]]
                if not set(snames) <= set(names) or not (set(names) - set(snames)) <= optional:
                    continue
                by_name = {p[0]: p for p in stub["p"]}
                if not all(_ann_accepts(by_name[p[0]][2], types[p[2]]) for p in ov["p"] if p[0] in by_name):
                    continue
                (exact if snames == names else loose).append(stub["rs"])
            for group in (exact, exact + loose):
                if group and len(set(group)) == 1:
                    ov["ra"] = group[0]
                    break


# --------------------------------------------------------------------------------------------
# The dump
# --------------------------------------------------------------------------------------------


def dump() -> dict[str, Any]:
    """Import Warp (in this process!) and return the table as plain data."""
    warp = _warp_module("warp")
    wc = _warp_module("warp._src.context")
    wt = _warp_module("warp._src.types")

    ser = _Serialiser()
    builtin_names = set(wc.builtin_functions)
    records: list[dict[str, Any]] = []
    param_classes: set[int] = set()
    for key, f in wc.builtin_functions.items():
        user = not f.is_builtin()
        if user:
            concrete = list(getattr(f, "user_overloads", {}).values())
            templates = list(getattr(f, "user_templates", {}).values())
            overloads = [*concrete, *templates] or [f]
            is_template = [False] * len(concrete) + [True] * (len(overloads) - len(concrete))
        else:
            overloads = list(f.overloads)
            is_template = [False] * len(overloads)
        for o in overloads:
            for t in o.input_types.values():
                if isinstance(t, type):
                    param_classes.add(id(t))
        records.append(
            {
                "name": key,
                "ns": f.namespace,
                "export": bool(f.export),
                "hidden": bool(f.hidden),
                "user": user,
                "ovl": [
                    _overload_record(o, ser, user, t) for o, t in zip(overloads, is_template, strict=True)
                ],
            }
        )

    attrs: dict[str, str] = {}
    kcall: dict[str, str] = {}
    for name in dir(warp):
        if name.startswith("_"):
            continue
        try:
            value = getattr(warp, name)
        except Exception:
            continue
        attrs[name] = _attribute_kind(name, value, builtin_names, param_classes)
        target = _kernel_call_target(name, value, True, builtin_names)
        if target is not None and target != name:
            kcall[name] = target

    pyi_path = Path(warp.__file__).with_name("__init__.pyi")
    pyi = parse_pyi(pyi_path, builtin_names) if pyi_path.is_file() else {}
    _associate_return_annotations(records, ser.types, pyi)

    array_kinds: dict[str, list[str]] = {}
    for a in wt.array_types:
        array_kinds[a.__name__] = sorted(
            b.__name__ for b in wt.array_types if issubclass(a, b) or issubclass(b, a)
        )

    try:
        import importlib.metadata

        dist_version: str | None = importlib.metadata.version("warp-lang")
    except Exception:
        dist_version = None

    return {
        "format": FORMAT,
        "extractor": extractor_id(),
        "warp_version": str(warp.config.version),
        "dist_version": dist_version,  # what the parent reads from the metadata to name the cache
        "types": ser.types,
        "builtins": records,
        "attrs": attrs,
        "kcall": kcall,
        "array_kinds": array_kinds,
        "pyi": pyi,
    }


def _packb(data: dict[str, Any]) -> bytes:
    import msgpack  # type: ignore[import-untyped,unused-ignore]

    out = msgpack.packb(data, use_bin_type=True)
    assert isinstance(out, bytes)
    return out


def write_atomic(path: Path, payload: bytes, mode: int | None = None) -> None:
    """Write ``payload`` to ``path`` through a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--output", type=Path, help="write the table to this file (atomically)")
    group.add_argument("--write-snapshot", action="store_true", help=f"regenerate {SNAPSHOT_PATH.name}")
    args = parser.parse_args(argv)

    # Keep Warp's own chatter off stdout: the parent reads nothing from it, but be tidy.
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        t0 = time.perf_counter()
        data = dump()
        payload = _packb(data)
        target = SNAPSHOT_PATH if args.write_snapshot else args.output
        write_atomic(target, payload, 0o644 if args.write_snapshot else None)
    finally:
        sys.stdout = real_stdout
    if args.write_snapshot:
        n_ovl = sum(len(r["ovl"]) for r in data["builtins"])
        print(
            f"wrote {target} ({len(payload)} bytes): warp {data['warp_version']}, "
            f"{len(data['builtins'])} builtins, {n_ovl} overloads, {time.perf_counter() - t0:.2f} s"
        )
    return 0


if __name__ == "__main__":
    # Run as a script, this folder is sys.path[0]: keep its modules from shadowing anything
    if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)
    sys.exit(main())
