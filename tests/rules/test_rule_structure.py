"""The shape of the constraint layer: rules are independent units over shared analyses."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from warp_harness.rules import rule_classes
from warp_harness.rules.base import Fact, Rule, Scope

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


_METHOD = {
    Scope.KERNEL: "check_kernel",
    Scope.KERNEL_OR_FUNC: "check_kernel",
    Scope.LAUNCH: "check_launch",
    Scope.MODULE: "check_module",
    Scope.FINDINGS: "check_findings",
}


@pytest.mark.parametrize("cls", rule_classes(), ids=lambda c: c.id)
def test_every_rule_declares_its_scope_and_judges_one_item(cls: type[Rule]) -> None:
    assert isinstance(cls.__dict__.get("scope"), Scope), f"{cls.id} declares no scope"
    assert all(isinstance(fact, Fact) for fact in cls.reads)
    method = _METHOD[cls.scope]
    assert method in cls.__dict__, f"{cls.id} has scope {cls.scope.value} but no {method}"
    # the engine owns the loop: no rule overrides it or walks the model's kernels or launches itself
    assert "check" not in cls.__dict__ and "scoped" not in cls.__dict__
    source = Path(sys.modules[cls.__module__].__file__ or "").read_text(encoding="utf-8")
    assert re.search(r"in ctx\.model\.(kernels|launches)\b", source) is None
