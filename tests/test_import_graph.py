"""The import graph of the package: no new import cycle, and no backward edge between the layers.

Every module of the distribution is parsed with `ast`; an import anywhere in it counts, a function-local
one too (a cycle hidden behind ``def f(): from x import y`` is still a cycle); only imports under
``if TYPE_CHECKING:`` do not (they never run). The cycles that exist today are listed in `_KNOWN_CYCLES`
with why they stay; a new one, or a known one that grows, fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
# import name of each top-level folder (pyproject.toml: [tool.setuptools] package-dir)
_FOLDERS = {
    "warp_harness": "warp_harness",
    "warp_harness.rules": "rules",
    "warp_harness.server": "server",
    "warp_harness.daemon": "daemon",
}

# The cycles that remain, each as the set of its modules (a strongly connected component), and why (none).
_KNOWN_CYCLES: dict[frozenset[str], str] = {}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in _FOLDERS.items():
        root = _ROOT / folder
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if folder == "warp_harness" and parts[0] in {"rules", "server", "daemon"}:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` blocks."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Name | ast.Attribute) and getattr(test, "id", getattr(test, "attr", "")) == (
            "TYPE_CHECKING"
        ):
            for statement in node.body:
                skipped.update(id(n) for n in ast.walk(statement))
    return skipped


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in it (a name imported from a module counts as
    that module, or as the submodule of that name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def known(module: str) -> str | None:
        while module and module not in modules:
            module = module.rpartition(".")[0]
        return module or None

    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(m for alias in node.names if (m := known(alias.name)) is not None)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                target = f"{base}.{alias.name}"
                module = target if target in modules else known(base)
                if module is not None:
                    found.add(module)
    found.discard(name)
    return found


@cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> Iterator[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: set[str] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        yield frozenset(component)


def test_the_graph_sees_function_local_imports() -> None:
    graph = _graph()
    # `engine.analyse_parsed` imports the rules inside the function: an edge all the same
    assert "warp_harness.rules" in graph["warp_harness.engine"]
    assert "warp_harness.model.module" in graph["warp_harness.engine"]


def test_the_cycle_finder_finds_a_cycle_behind_a_function_local_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert list(_cycles(graph)) == [frozenset({"a", "b", "c"})]


def test_no_new_import_cycle() -> None:
    found = set(_cycles(_graph()))
    new = [sorted(c) for c in found if c not in _KNOWN_CYCLES]
    assert new == [], f"import cycles not in _KNOWN_CYCLES: {new}"
    gone = [sorted(c) for c in _KNOWN_CYCLES if c not in found]
    assert gone == [], f"cycles removed: take them out of _KNOWN_CYCLES: {gone}"


def test_no_backward_edges() -> None:
    graph = _graph()
    rule_modules = {m for m in graph if m.startswith("warp_harness.rules.wh")}
    for name, imported in graph.items():
        if name.startswith("warp_harness.model."):
            assert "warp_harness.engine" not in imported, f"{name} imports the engine"
            assert not any(m.startswith("warp_harness.rules") for m in imported), f"{name} imports the rules"
        if not name.startswith("warp_harness.rules."):
            # the engine, the incremental analyser and the server know no rule by name
            assert not imported & rule_modules, f"{name} imports a rule: {sorted(imported & rule_modules)}"
