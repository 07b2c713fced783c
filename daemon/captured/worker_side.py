"""The worker's half of a replay (job kind ``replay``): launch captured launches, return arrays.

Runs in the sandboxed worker (time and memory limits, a crash kills only it). It judges nothing:
the supervisor's side (``replay``) prepared every input as an ``.npy`` file in a private folder
(outputs already poisoned), and reads the arrays this side leaves there after each launch.

Each kernel is built from the module text the supervisor sent (``msg["source"]``, the text it
judged): hermetically where the supervisor found it can be (``hermetic_build.build``: only the
kernel and what it reaches run, nothing of the module's top level nor of the workspace modules it
imports; ``captured/hermetic.py``), else from the module's *definitions* only (`definitions_only`):
its imports, functions, classes (``@wp.struct``) and constant assignments run, its other top-level
statements (a script's own launches, its ``if __name__ == "__main__":`` block) do not, and the
modules it imports run as usual (the supervisor marks such a replay's records, WHD069).

With ``bounds`` set, each kernel is launched as its bounds probe (``steps/probe.py``: a debug-mode
copy with an assertion before every array access), so an out-of-bounds access kills the worker
with the Python line of the access; the supervisor's side reads it from the worker's output.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from warp_harness.capture.identity import definition_of
from warp_harness.daemon import hermetic_build

_CONSTANT_CALLS = re.compile(
    r"(constant|vec\w*|mat\w*|quat\w*|transform\w*|spatial\w*|float\w*|u?int\w*|bool|"
    r"set_module_options|struct|func|kernel|overload|static|types|"
    r"finfo|iinfo)$"  # capb (#31): newton's `_FLOAT32_EPS = wp.constant(float(np.finfo(np.float32).eps))`
)


def _calls_ok(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if not _CONSTANT_CALLS.match(name):
                return False
    return True


def definitions_only(tree: ast.Module) -> ast.Module:
    """The module's imports, definitions and constant assignments (top-level statements only), and
    the assignments of names those definitions read that only running code binds
    (`_bindings_read`: warp's ``SimpleStruct1 = create_struct_simple()``, read by its kernels).
    Leaving such a binding out made the build fail with a NameError (WHD085 on correct code);
    this path runs the module's code anyway (its records carry WHD069)."""
    needed = _bindings_read(tree)
    kept: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef):
            kept.append(stmt)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            if _calls_ok(stmt.value) or id(stmt) in needed:
                kept.append(stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _calls_ok(stmt.value):
            kept.append(stmt)  # wp.set_module_options({...})
    return ast.Module(body=kept, type_ignores=[])


def _assigned_names(stmt: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _read_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bindings_read(tree: ast.Module) -> set[int]:
    """The top-level assignments (by ``id``) of names that the module's functions and classes read,
    and, transitively, of names those assignments read."""
    assigns = [s for s in tree.body if isinstance(s, ast.Assign | ast.AnnAssign) and s.value is not None]
    wanted: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef):
            wanted |= _read_names(stmt)
    needed: set[int] = set()
    grew = True
    while grew:
        grew = False
        for stmt in assigns:
            if id(stmt) not in needed and _assigned_names(stmt) & wanted:
                needed.add(id(stmt))
                value = stmt.value
                assert value is not None
                wanted |= _read_names(value)
                grew = True
    return needed


def _package_of(path: Path) -> str:
    """capb (#31): the dotted package of a module below the worker's folder (the workspace), as
    ``python -m`` run there sees it (regular or namespace packages: newton's ``_src`` has no
    ``__init__.py``); the workspace goes at the end of ``sys.path``, so the package's imports of
    itself (relative, or ``import newton``) resolve."""
    root = Path.cwd().resolve()
    try:
        parts = path.parent.resolve().relative_to(root).parts
    except ValueError:
        return ""
    if not parts or not all(p.isidentifier() for p in parts):
        return ""
    if str(root) not in sys.path:
        sys.path.append(str(root))
    return ".".join(parts)


def build_module(path: Path, source: str | None = None) -> types.ModuleType:
    """The module at ``path`` (its text ``source``, else the file's) from its definitions only."""
    if source is None:
        source = path.read_text(encoding="utf-8")
    tree = definitions_only(ast.parse(source, filename=str(path)))
    name = f"_wh_replay_{hashlib.sha256(source.encode()).hexdigest()[:16]}"
    if name in sys.modules:
        return sys.modules[name]
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__package__ = _package_of(path)  # capb (#31): a package's module (newton's) imports relatively
    sys.modules[name] = module
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        exec(compile(tree, str(path), "exec", dont_inherit=True), module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _dtype(wp: Any, declared: Any, name: str) -> Any:
    types_module: Any = importlib.import_module("warp._src.types")

    if declared is not None and not types_module.type_is_generic(declared):
        return declared
    found = getattr(wp, str(name), None)
    if found is None:
        raise ValueError(f"unknown dtype {name!r}")
    return found


def _value(wp: Any, declared: Any, d: dict[str, Any], folder: Path, device: Any) -> Any:
    kind = d["kind"]
    if kind == "array":
        data = np.load(folder / str(d["file"]), allow_pickle=False)
        dtype = _dtype(wp, getattr(declared, "dtype", None), d["dtype"])
        return wp.array(data, dtype=dtype, device=device)
    if kind == "scalar":
        return d["value"]
    if kind == "vector":
        t = _dtype(wp, declared, d["dtype"])
        return t(*d["value"])
    if kind == "struct":
        inst = declared()
        for f in d["fields"]:
            field = f["name"].split(".")[-1]
            setattr(inst, field, _value(wp, declared.vars[field].type, f, folder, device))
        return inst
    if kind == "none":
        return None
    raise ValueError(f"argument `{d['name']}` was not recorded ({kind})")


def _arrays(args: list[dict[str, Any]], values: list[Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for d, v in zip(args, values, strict=True):
        if d["kind"] == "array":
            out.append((d["name"], v))
        elif d["kind"] == "struct":
            fields = [getattr(v, f["name"].split(".")[-1]) for f in d["fields"]]
            out += _arrays(d["fields"], fields)
    return out


@dataclass
class SavedKernels:
    """The kernels a replay or timing job names, built from the saved text (``saved_kernels``)."""

    kernels: dict[str, Any] = field(default_factory=dict)  # name -> warp.Kernel
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # the module (or a hermetic kernel) could not be built: nothing ran


def hermetic_kernel(
    text: str, path: Path, name: str, workspace: Any, decided: dict[str, Any], entry: dict[str, Any]
) -> Any:
    """Kernel ``name`` built from ``text`` alone (``hermetic_build.build``), with the workspace
    modules' texts the supervisor decided on (``decided["imports"]``) and the factory's closure
    the capture recorded (``entry["closure"]``)."""
    imports, closure = decided.get("imports"), entry.get("closure")
    return hermetic_build.build(
        text,
        str(path),
        name,
        workspace,
        imports if isinstance(imports, dict) else None,
        closure if isinstance(closure, dict) else None,
    ).kernel


def not_the_imported_definition(closure: Any) -> bool:
    """The record says the launches ran a def of the kernel's name other than the module's last
    (``identity.definition_of``): an import of the module binds the name to another kernel."""
    definition = definition_of(closure)
    module_level = isinstance(closure, dict) and "<locals>" not in str(closure.get("qualname", ""))
    return module_level and definition is not None and definition[0] != definition[1] - 1


def saved_kernels(msg: dict[str, Any], job: Any, progress: Any) -> SavedKernels:
    """The kernels of ``msg["kernels"]``, each built from the text the supervisor sent: from that
    text alone where its entry says ``hermetic`` (a failure is an error, never an import), else from
    the module's definitions (built once for the job; its imports run)."""
    wp: Any = importlib.import_module("warp")
    source = msg.get("source")
    text = source if isinstance(source, str) else job.path.read_text(encoding="utf-8")
    out = SavedKernels()
    module: types.ModuleType | None = None
    progress(stage="import", budget_s=job.options.timeout_s)
    for entry in msg.get("kernels") or []:
        name = str(entry["name"])
        try:
            if entry.get("hermetic"):
                kernel = hermetic_kernel(text, job.path, name, msg.get("workspace"), entry, entry)
            elif not_the_imported_definition(entry.get("closure")):
                out.notes.append(
                    f"kernel `{name}`'s captured launches ran another of its definitions than the last, "
                    "which an import of the module gives"
                )
                continue
            else:
                module = module or build_module(job.path, text)
                kernel = getattr(module, name, None)
        except BaseException as exc:
            out.error = f"{type(exc).__name__}: {exc}"
            return out
        if kernel is None or not isinstance(kernel, wp.Kernel):
            out.notes.append(f"kernel `{name}` is not a module-level kernel of the saved file")
            continue
        out.kernels[name] = kernel
    return out


def launch_device(wp: Any, launch: dict[str, Any]) -> str:
    """The launch's device where it is present, else the CPU."""
    device = str(launch["device"])
    return device if wp.is_device_available(wp.get_device(device)) else "cpu"


def load_for(wp: Any, kernel: Any, device: str, block_dim: Any) -> None:
    """Build ``kernel``'s module for ``device`` (and a launch's ``block_dim``)."""
    resolve = importlib.import_module("warp._src.context")._resolve_launch_block_dim
    dev = wp.get_device(device)
    kernel.module.load(dev, resolve(dev, block_dim))


def launch_values(wp: Any, kernel: Any, launch: dict[str, Any], folder: Path, device: str) -> list[Any]:
    """A fresh set of the launch's arguments, typed by ``kernel``'s parameters (arrays read again:
    each set has its own memory)."""
    params = list(kernel.adj.args)
    return [_value(wp, p.type, d, folder, device) for p, d in zip(params, launch["args"], strict=True)]


def _launch_saved(
    wp: Any, kernel: Any, launch: dict[str, Any], folder: Path, device: str, prefix: str
) -> dict[str, str]:
    """One plain (not the bounds probe) launch on fresh copies of the inputs; its arrays as files."""
    values = launch_values(wp, kernel, launch, folder, device)
    wp.launch(
        kernel, dim=tuple(launch["dim"]), inputs=values, device=device, block_dim=launch.get("block_dim")
    )
    wp.synchronize_device(device)
    files: dict[str, str] = {}
    for i, (arg, arr) in enumerate(_arrays(launch["args"], values)):
        file = f"{prefix}-{launch['id']}-{i}.npy"
        np.save(folder / file, arr.numpy(), allow_pickle=False)
        files[arg] = file
    return files


def _cross(
    wp: Any, kernel: Any, launch: dict[str, Any], entry: dict[str, Any], folder: Path, progress: Any, job: Any
) -> dict[str, Any]:
    """The CUDA oracles' runs (``cuda_oracle``): the launch once on the CPU and twice on CUDA, or why
    they did not run."""
    from warp_harness.daemon.captured.cuda_oracle import plan

    device, why = plan(
        [str(d) for d in entry.get("cross_devices") or []],
        str(launch.get("device") or "cpu"),
        int(wp.get_cuda_device_count()),
    )
    if device is None:
        return {"skipped": why}
    try:
        for name in ("cpu", device):  # the builds have the job's budget, the launches their own
            progress(stage="compile", kernel=kernel.key, device=name, budget_s=job.options.timeout_s)
            load_for(wp, kernel, name, launch.get("block_dim"))
        progress(
            stage="validate",
            kernel=kernel.key,
            launch=launch["id"],
            device=device,
            oracle="cuda",
            budget_s=job.options.launch_timeout_s,
        )
        return {
            "device": device,
            "cpu": _launch_saved(wp, kernel, launch, folder, "cpu", "xc"),
            "cuda": [_launch_saved(wp, kernel, launch, folder, device, f"x{n}") for n in (1, 2)],
        }
    except Exception as exc:
        return {"device": device, "error": f"{type(exc).__name__}: {exc}"[:400]}


def run_replay_job(msg: dict[str, Any], progress: Any, job: Any, guard: Any) -> dict[str, Any]:
    """The replay of ``msg``'s captured launches; ``job``: the worker's job for it (Warp configured),
    ``guard``: the worker's integrity guard, restored at the end (handed in: the worker imports this
    module, not the other way round)."""
    from warp_harness.daemon.steps import KernelInfo, probe

    wp: Any = importlib.import_module("warp")
    folder = Path(str(msg["folder"]))
    launches: dict[str, Any] = {}
    try:
        saved = saved_kernels(msg, job, progress)
        if saved.error is not None:
            return {"status": "import-error", "error": saved.error, "launches": {}}
        notes = saved.notes
        for entry in msg.get("kernels") or []:
            name = str(entry["name"])
            kernel = saved.kernels.get(name)
            if kernel is None:
                continue
            launched = kernel
            if entry.get("bounds"):
                info = KernelInfo(name=name, line=1, col=0, end_col=0, kernel=kernel)
                try:
                    launched, _checked = probe.probe_kernel(info)
                except Exception as exc:
                    notes.append(f"bounds probe of `{name}` not built: {exc!r}")
            built: set[str] = set()
            for launch in entry["launches"]:
                lid = str(launch["id"])
                device = launch_device(wp, launch)
                if device not in built:  # the build has the job's budget, the launch its own
                    progress(stage="compile", kernel=name, device=device, budget_s=job.options.timeout_s)
                    try:
                        load_for(wp, launched, device, launch.get("block_dim"))
                    except Exception as exc:
                        notes.append(f"`{name}` did not build for {device}: {exc!r}")
                    built.add(device)
                progress(
                    stage="validate",
                    kernel=name,
                    launch=lid,
                    device=device,
                    budget_s=job.options.launch_timeout_s,
                )
                try:
                    values = launch_values(wp, kernel, launch, folder, device)
                    wp.launch(
                        launched,
                        dim=tuple(launch["dim"]),
                        inputs=values,
                        device=device,
                        block_dim=launch.get("block_dim"),
                    )
                    wp.synchronize_device(device)
                except Exception as exc:
                    launches[lid] = {"kernel": name, "error": f"{type(exc).__name__}: {exc}"}
                    continue
                outputs: dict[str, str] = {}
                for i, (arg, arr) in enumerate(_arrays(launch["args"], values)):
                    file = f"out-{lid}-{i}.npy"
                    np.save(folder / file, arr.numpy(), allow_pickle=False)
                    outputs[arg] = file
                launches[lid] = {"kernel": name, "outputs": outputs, "device": device}
                if entry.get("cross_devices") is not None:
                    launches[lid]["cross"] = _cross(wp, kernel, launch, entry, folder, progress, job)
        return {"status": "ok", "launches": launches, "notes": notes}
    finally:
        guard().restore()
