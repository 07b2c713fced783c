"""The rule registry cannot drift from the files: every ``rules/wh*.py`` is registered in
``rules/__init__.py`` (one line each), every registered module exists and holds exactly one rule whose
id matches its file name, and every id has its documentation with a Bad and a Good example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from warp_harness import rules
from warp_harness.rules import rule_classes, rule_modules
from warp_harness.rules.base import Rule

_RULES = Path(__file__).resolve().parents[2] / "rules"
_FILE_NAME = re.compile(r"wh(\d{3})_([a-z0-9_]+)")


def test_every_rule_file_is_registered_and_every_registration_has_a_file() -> None:
    files = sorted(p.stem for p in _RULES.glob("wh*.py"))
    registered = list(rule_modules())
    assert sorted(set(registered)) == sorted(registered), "a module is registered twice"
    assert sorted(registered) == files


def test_a_registered_module_that_is_missing_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "_RULE_MODULES", [*rules._RULE_MODULES, "wh999_not_written"])
    rules.rule_classes.cache_clear()
    try:
        with pytest.raises(ModuleNotFoundError):
            rules.rule_classes()
    finally:
        rules.rule_classes.cache_clear()


def test_each_module_holds_one_rule_named_as_its_file() -> None:
    by_module: dict[str, list[type[Rule]]] = {}
    for cls in rule_classes():
        by_module.setdefault(cls.__module__.rpartition(".")[2], []).append(cls)
    assert sorted(by_module) == sorted(rule_modules())
    ids = [cls.id for cls in rule_classes()]
    assert len(set(ids)) == len(ids), "two rules share an id"
    for module, classes in by_module.items():
        assert len(classes) == 1, f"{module} holds {len(classes)} rules"
        found = _FILE_NAME.fullmatch(module)
        assert found is not None, f"{module}: not named whNNN_<name>"
        cls = classes[0]
        assert cls.id == f"WH{found.group(1)}", f"{module} holds {cls.id}"
        assert cls.name.replace("-", "_") == found.group(2), f"{module} holds rule named {cls.name}"


@pytest.mark.parametrize("cls", rule_classes(), ids=lambda c: c.id)
def test_every_rule_has_docs_and_a_bad_and_a_good_example(cls: type[Rule]) -> None:
    doc = cls.doc()
    assert doc.startswith(f"## {cls.id} {cls.name}\n"), f"{cls.id}: no title"
    assert "### Why it matters" in doc
    for part in ("Bad", "Good"):
        assert re.search(rf"### {part}\n```python\n.+?```", doc, re.S), f"{cls.id}: no {part} example"
    assert cls.summary.strip()
