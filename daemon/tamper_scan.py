"""Code in a kernel module that would patch the evaluator, found in the module's text.

A module built hermetically (daemon/hermetic_build.py) never runs in the worker that launches
and times its kernels, so a patch of ``wp.launch``, ``time.perf_counter`` or the harness's own
classes gains nothing there: before this scan, such a module's right kernel passed, timed doing
its own work. It still tried to forge its verdict, and the patch would run wherever the module is
imported (the user's own runs, a non-hermetic fallback, another tool), so the supervisor reports
it as an error and gives the module's kernels no pass (issue #37: every exploit ends in an error).

What counts (outside ``@wp.kernel``/``@wp.func`` bodies, which Python never runs):

- an assignment, augmented assignment or ``del`` of an attribute or item reached from a name bound
  to ``warp``, ``numpy``, ``time``, ``builtins``, ``sys``, ``gc`` or ``warp_harness`` (or anything
  imported from them): ``wp.launch = ...``, ``time.perf_counter = ...``, ``KernelInfo.runnable =
  ...``; Warp's settings (``wp.config.x = ...``) are not patches;
- ``setattr``/``delattr`` on such a name;
- reading a function's insides from such a name (``__code__``, ``__globals__``, ``__defaults__``,
  ``__kwdefaults__``, ``__closure__``): the first step of swapping code in place;
- writing memory through ``ctypes`` (``from_address``, ``memmove``, ``memset``, ``cast``);
- importing the harness beyond its public contract module (``warp_harness.contract``).

The scan reads text only (the supervisor never imports Warp or the module).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

PROTECTED_MODULES = ("warp", "numpy", "time", "builtins", "sys", "gc", "warp_harness")
PUBLIC_HARNESS_MODULES = ("warp_harness", "warp_harness.contract")
FUNCTION_INSIDES = ("__code__", "__globals__", "__defaults__", "__kwdefaults__", "__closure__")
CTYPES_WRITES = ("from_address", "memmove", "memset", "cast")
_KERNEL_DECORATORS = ("kernel", "func", "func_native", "func_grad", "func_replay")


@dataclass(frozen=True)
class Patch:
    line: int
    col: int
    what: str  # e.g. "assigns `wp.launch`"


def _protected(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in PROTECTED_MODULES)


def _bindings(tree: ast.Module) -> tuple[set[str], list[Patch]]:
    """The names bound to protected modules (or to what was imported from them), and the
    imports of the harness's internals."""
    names: set[str] = set()
    internal: list[Patch] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _protected(alias.name):
                    names.add(alias.asname or alias.name.split(".")[0])
                if alias.name.startswith("warp_harness.") and alias.name not in PUBLIC_HARNESS_MODULES:
                    internal.append(
                        Patch(node.lineno, node.col_offset, f"imports the harness's `{alias.name}`")
                    )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _protected(node.module):
                names.update(alias.asname or alias.name for alias in node.names if alias.name != "*")
            if node.module.startswith("warp_harness") and node.module not in PUBLIC_HARNESS_MODULES:
                internal.append(Patch(node.lineno, node.col_offset, f"imports the harness's `{node.module}`"))
            elif node.module == "warp_harness":
                for alias in node.names:
                    if alias.name != "contract":
                        internal.append(
                            Patch(
                                node.lineno,
                                node.col_offset,
                                f"imports the harness's `warp_harness.{alias.name}`",
                            )
                        )
    return names, internal


def _chain(node: ast.expr) -> list[str] | None:
    """``a.b.c`` (or ``a.b[...]``) as ["a", "b", "c"]; None when it does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _is_kernel_code(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef):
        return False
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        chain = _chain(target) if isinstance(target, ast.expr) else None
        if chain and chain[-1] in _KERNEL_DECORATORS:
            return True
    return False


def _python_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node Python would run: the module without its kernels' and Warp functions' bodies."""
    out: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        out.append(node)
        if _is_kernel_code(node):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return out


def patches(text: str) -> list[Patch]:
    """What the module's code would change in the evaluator, in line order; [] when it does not
    parse (the worker reports that)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    protected, found = _bindings(tree)
    ctypes_names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "ctypes"
    }

    def target_patch(target: ast.expr, verb: str) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                target_patch(element, verb)
            return
        if not isinstance(target, ast.Attribute | ast.Subscript):
            return
        chain = _chain(target)
        if not chain or chain[0] not in protected or (len(chain) > 2 and chain[1] == "config"):
            return
        found.append(Patch(target.lineno, target.col_offset, f"{verb} `{'.'.join(chain)}`"))

    for node in _python_nodes(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                target_patch(target, "assigns")
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and node.target is not None:
            target_patch(node.target, "assigns")
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                target_patch(target, "deletes")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
                chain = _chain(node.args[0])
                if chain and chain[0] in protected:
                    found.append(
                        Patch(node.lineno, node.col_offset, f"calls `{func.id}` on `{'.'.join(chain)}`")
                    )
            if (
                isinstance(func, ast.Attribute)
                and func.attr in CTYPES_WRITES
                and any(isinstance(n, ast.Name) and n.id in ctypes_names for n in ast.walk(func))
            ):
                found.append(
                    Patch(node.lineno, node.col_offset, f"writes process memory with ctypes `{func.attr}`")
                )
        elif isinstance(node, ast.Attribute) and node.attr in FUNCTION_INSIDES:
            chain = _chain(node)
            if chain and chain[0] in protected:
                found.append(Patch(node.lineno, node.col_offset, f"reads `{'.'.join(chain)}`"))
    return sorted(set(found), key=lambda p: (p.line, p.col, p.what))
