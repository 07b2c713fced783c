"""Which names in a module refer to Warp.

Handles ``import warp as wp``, ``import warp`` and ``from warp import kernel`` alike.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from warp_harness.model.index import NodeIndex

_UNSEEN = object()  # a node not asked about yet (None is an answer)


@dataclass
class ImportMap:
    # local name -> dotted module path, for `import warp as wp`, `import math`, `import numpy as np`
    modules: dict[str, str] = field(default_factory=dict)
    # local name -> dotted path of the imported object, for `from warp import kernel as k`
    objects: dict[str, str] = field(default_factory=dict)
    # node -> its `warp_name` (AST nodes hash and compare by identity: the node is its own key, and is kept
    # with its answer, so no other node takes its place meanwhile)
    _warp_names: dict[ast.expr, str | None] = field(default_factory=dict, repr=False, compare=False)
    # dotted path -> its name in Warp's namespace (many nodes spell the same path)
    _warp_paths: dict[str, str | None] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_tree(cls, tree: ast.Module, index: NodeIndex | None = None) -> ImportMap:
        result = cls()
        index = index or NodeIndex([tree])
        for node in [*index.of(ast.Import), *index.of(ast.ImportFrom)]:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        result.modules[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        result.modules[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    local = alias.asname or alias.name
                    result.objects[local] = f"{node.module}.{alias.name}"
        return result

    def without_answers(self) -> ImportMap:
        """The same map without the answers cached per node: it keeps no node (of a tree to be freed)."""
        return ImportMap(dict(self.modules), dict(self.objects))

    @property
    def uses_warp(self) -> bool:
        return any(m == "warp" or m.startswith("warp.") for m in self.modules.values()) or any(
            o.startswith("warp.") for o in self.objects.values()
        )

    def dotted(self, node: ast.expr) -> str | None:
        """The full dotted path an expression names (``wp.tile_load`` -> ``warp.tile_load``)."""
        if isinstance(node, ast.Name):
            if node.id in self.objects:
                return self.objects[node.id]
            return self.modules.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def warp_name(self, node: ast.expr) -> str | None:
        """The name inside Warp's namespace (``tile_load``, ``types.vector``), or None if not Warp's."""
        if not isinstance(node, ast.Name | ast.Attribute):
            return None
        cached = self._warp_names.get(node, _UNSEEN)
        if cached is not _UNSEEN:
            return cached  # type: ignore[return-value]
        name = self._warp_names[node] = self._warp_name(node)
        return name

    def _warp_name(self, node: ast.expr) -> str | None:
        path = self.dotted(node)
        if path is None:
            return None
        if path not in self._warp_paths:
            self._warp_paths[path] = self._warp_path(path)
        return self._warp_paths[path]

    @staticmethod
    def _warp_path(path: str) -> str | None:
        for prefix in ("warp._src.", "warp."):
            if path.startswith(prefix):
                name = path[len(prefix) :]
                for sub in ("types.", "context.", "builtins.", "math.", "lang."):
                    if name.startswith(sub) and name.count(".") == 1:
                        return name[len(sub) :]
                return name
        return None

    def math_name(self, node: ast.expr) -> str | None:
        """``sqrt`` for ``math.sqrt`` (Warp maps the math module's functions onto its builtins)."""
        path = self.dotted(node)
        if path is not None and path.startswith("math.") and path.count(".") == 1:
            return path[5:]
        return None
