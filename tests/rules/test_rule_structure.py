"""The shape of the constraint layer: rules are independent units over shared analyses."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

_RULES = Path(__file__).resolve().parents[2] / "rules"
_RULE_FILES = sorted(_RULES.glob("wh*.py"))


def _imported_modules(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.level:  # relative: `from .wh009_x import y` or `from . import wh009_x`
                found.update(f"warp_harness.rules.{alias.name}" for alias in node.names)
                found.add(f"warp_harness.rules.{node.module}")
            else:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_there_are_rule_files() -> None:
    assert len(_RULE_FILES) >= 16


@pytest.mark.parametrize("path", _RULE_FILES, ids=lambda p: p.stem)
def test_no_rule_imports_another_rule(path: Path) -> None:
    imported = _imported_modules(ast.parse(path.read_text(encoding="utf-8")))
    others = sorted(
        name
        for name in imported
        if any(part.startswith("wh") and part[2:5].isdigit() for part in name.split("."))
    )
    assert others == [], f"{path.name} imports another rule's module: {others}"
