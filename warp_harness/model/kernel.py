"""Kernels, functions and structs as found in a module's AST."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Literal

from warp_harness.model.imports import ImportMap
from warp_harness.model.index import NodeIndex, hidden_nodes
from warp_harness.model.static_branches import StaticBranch
from warp_harness.model.types import WarpType

KernelKind = Literal["kernel", "func", "func_native", "func_grad", "func_replay"]

_DECORATOR_KINDS: dict[str, KernelKind] = {
    "kernel": "kernel",
    "func": "func",
    "func_native": "func_native",
    "func_grad": "func_grad",
    "func_replay": "func_replay",
}


@dataclass
class Param:
    name: str
    annotation: ast.expr | None
    type: WarpType
    node: ast.arg


@dataclass
class KernelDef:
    name: str
    kind: KernelKind
    node: ast.FunctionDef
    params: list[Param] = field(default_factory=list)
    # keyword options of the decorator, e.g. enable_backward=False, module="unique"
    options: dict[str, ast.expr] = field(default_factory=dict)
    return_annotation: ast.expr | None = None
    # a `@wp.func` whose body is only `raise NotImplementedError` (or `...` / `pass`): a base method that
    # subclasses override; Warp never builds it, and its body is hidden from the rules (`static_branches`)
    abstract: bool = False
    # the `if`s Warp resolves when it compiles (`if wp.static(FLAG):`), each with the branch taken if known
    static_branches: tuple[StaticBranch, ...] = ()

    @property
    def is_kernel(self) -> bool:
        return self.kind == "kernel"

    def live(self, block: list[ast.stmt]) -> list[ast.stmt]:
        """The statements of ``block`` (the body, or a block nested in it) Warp compiles for certain: without
        an untaken or undecided branch of a static ``if`` or an abstract body (the view `index.body_index`
        gives the rules), for analyses that walk statements themselves."""
        hidden = hidden_nodes(self.node)
        if not hidden:
            return block
        return [stmt for stmt in block if id(stmt) not in hidden]

    @property
    def has_python_body(self) -> bool:
        """func_native bodies are a docstring; the snippet is C++, not something the rules read."""
        return self.kind != "func_native"

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


@dataclass
class StructDef:
    name: str
    node: ast.ClassDef
    fields: dict[str, ast.expr] = field(default_factory=dict)


def warp_decorator(decorator: ast.expr, imports: ImportMap) -> tuple[KernelKind | None, dict[str, ast.expr]]:
    """(kind, options) when ``decorator`` is one of Warp's function decorators."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = imports.warp_name(target)
    if name is None:
        return None, {}
    kind = _DECORATOR_KINDS.get(name)
    options: dict[str, ast.expr] = {}
    if kind is not None and isinstance(decorator, ast.Call):
        options = {kw.arg: kw.value for kw in decorator.keywords if kw.arg}
    return kind, options


def is_struct_decorator(decorator: ast.expr, imports: ImportMap) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return imports.warp_name(target) == "struct"


def find_structs(
    tree: ast.Module, imports: ImportMap, index: NodeIndex | None = None
) -> dict[str, StructDef]:
    structs: dict[str, StructDef] = {}
    for node in (index or NodeIndex([tree])).of(ast.ClassDef):
        if any(is_struct_decorator(d, imports) for d in node.decorator_list):
            fields = {
                stmt.target.id: stmt.annotation
                for stmt in node.body
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
            }
            structs[node.name] = StructDef(node.name, node, fields)
    return structs


def find_kernel_nodes(
    tree: ast.Module, imports: ImportMap, index: NodeIndex | None = None
) -> list[tuple[ast.FunctionDef, KernelKind, dict[str, ast.expr]]]:
    found = []
    for node in (index or NodeIndex([tree])).of(ast.FunctionDef):
        decorated = kernel_decorator(node, imports)
        if decorated is not None:
            found.append((node, *decorated))
    found.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
    return found


def kernel_decorator(
    node: ast.FunctionDef, imports: ImportMap
) -> tuple[KernelKind, dict[str, ast.expr]] | None:
    """The kind and options of the first of Warp's function decorators on ``node`` (None: not a Warp
    function)."""
    for decorator in node.decorator_list:
        kind, options = warp_decorator(decorator, imports)
        if kind is not None:
            return kind, options
    return None
