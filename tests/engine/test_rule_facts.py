"""The rule contract checks itself: a rule that reads a module-wide fact it does not declare in
`Rule.reads` fails (the tests run with WARP_HARNESS_CHECK_FACTS=1, tests/conftest.py), whether it reads it
through a `RuleContext` accessor or through the model it hands a shared analysis; and the incremental
analyser's reuse follows what the rules declare, nothing added."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from warp_harness import incremental, rules
from warp_harness.engine import analyse_source
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.model.kernel import KernelDef
from warp_harness.model.module import ModuleModel
from warp_harness.record import Record, Severity
from warp_harness.rules import base as rule_base
from warp_harness.rules import rule_classes
from warp_harness.rules.base import CHECK_FACTS, ITEM_FACTS, Fact, Rule, RuleContext, Scope, UndeclaredFact

_RULES = Path(__file__).resolve().parents[2] / "rules"

SOURCE = """
import warp as wp

SCALE = 2.0


@wp.kernel
def k(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * SCALE
"""


def _constant_names(model: ModuleModel) -> list[str]:
    """A shared analysis: it reads the module's constants from the model it is handed."""
    return sorted(model.constants.values)


class _Probe(Rule):
    id = "WH900"
    name = "probe"
    summary = "reports each kernel, after reading what ``how`` says"
    severity = Severity.INFO
    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS})
    how = "accessor"

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if self.how == "accessor":
            names = sorted(ctx.constants.values)
        elif self.how == "analysis":
            names = _constant_names(ctx.model)
        elif self.how == "types":
            names = [str(ctx.types(kernel))[:0]]
        else:
            names = []
        yield self.report(ctx, kernel.node, f"{kernel.name}: {names}", kernel=kernel.name)


def _probe(
    monkeypatch: pytest.MonkeyPatch, how: str, reads: frozenset[Fact], scope: Scope = Scope.KERNEL
) -> None:
    probe = type("Probe", (_Probe,), {"how": how, "reads": reads, "scope": scope})()
    monkeypatch.setattr(rules, "all_rules", lambda: (probe,))


def test_the_tests_run_with_the_check_on() -> None:
    assert CHECK_FACTS


@pytest.mark.parametrize("how", ["accessor", "analysis"])
def test_an_undeclared_fact_read_fails(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    _probe(monkeypatch, how, frozenset({Fact.IMPORTS}))
    with pytest.raises(UndeclaredFact, match=r"WH900 reads .* does not declare Fact\.CONSTANTS"):
        analyse_source(SOURCE, "k.py")


@pytest.mark.parametrize("how", ["accessor", "analysis"])
def test_a_declared_fact_read_passes(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    _probe(monkeypatch, how, frozenset({Fact.IMPORTS, Fact.CONSTANTS}))
    records = analyse_source(SOURCE, "k.py").records
    assert [r.message for r in records] == ["k: ['SCALE']"]


def test_inferred_types_need_what_inference_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    _probe(monkeypatch, "types", frozenset({Fact.IMPORTS, Fact.CONSTANTS}))
    with pytest.raises(UndeclaredFact, match=r"Fact\.FUNCS, Fact\.STRUCTS"):
        analyse_source(SOURCE, "k.py")
    _probe(monkeypatch, "types", rule_base.TYPE_FACTS)
    assert len(analyse_source(SOURCE, "k.py").records) == 1


def test_a_rule_declares_what_its_items_are_derived_from(monkeypatch: pytest.MonkeyPatch) -> None:
    _probe(monkeypatch, "nothing", frozenset())
    with pytest.raises(UndeclaredFact, match=r"items of scope kernel .* Fact\.IMPORTS"):
        analyse_source(SOURCE, "k.py")


def test_the_incremental_analyser_fails_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    _probe(monkeypatch, "accessor", frozenset({Fact.IMPORTS}))
    monkeypatch.setattr(incremental, "all_rules", rules.all_rules)
    incremental._facts.cache_clear()
    try:
        with pytest.raises(UndeclaredFact):
            IncrementalAnalyser().analyse(SOURCE, "k.py", rule_base.Settings())
    finally:
        incremental._facts.cache_clear()


def test_without_the_check_nothing_is_checked() -> None:
    """A fresh interpreter without WARP_HARNESS_CHECK_FACTS: the same undeclared read runs."""
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from warp_harness import rules
from warp_harness.engine import analyse_source
from warp_harness.rules.base import CHECK_FACTS, Fact
import test_rule_facts as t
assert not CHECK_FACTS
probe = type("P", (t._Probe,), {{"how": "analysis", "reads": frozenset()}})()
rules.all_rules = lambda: (probe,)
print([r.message for r in analyse_source(t.SOURCE, "k.py").records])
"""
    env = {k: v for k, v in os.environ.items() if k != rule_base.CHECK_FACTS_ENV}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "[\"k: ['SCALE']\"]"


@pytest.mark.parametrize("cls", rule_classes(), ids=lambda c: c.id)
def test_every_rule_declares_the_facts_of_its_items(cls: type[Rule]) -> None:
    assert ITEM_FACTS[cls.scope] <= cls.reads, f"{cls.id}: {sorted(f.name for f in ITEM_FACTS[cls.scope])}"


@pytest.mark.parametrize("path", sorted(_RULES.glob("wh*.py")), ids=lambda p: p.stem)
def test_rules_read_facts_only_through_the_accessors(path: Path) -> None:
    """``ctx.model`` is handed to shared analyses (whose reads the check sees); a rule itself reads
    no member of it."""
    text = path.read_text(encoding="utf-8")
    assert re.findall(r"ctx\.model\.\w+", text) == []
    tree = ast.parse(text)
    aliases = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and isinstance(n.value, ast.Attribute)
        and ast.unparse(n.value) == "ctx.model"
        and any(isinstance(t, ast.Name) and t.id == "model" for t in n.targets)
    ]
    readers = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "model"
    }
    assert not (aliases and readers & set(rule_base._MODEL_FACTS)), f"reads {readers} of `model = ctx.model`"


def test_the_units_follow_the_declared_facts_only() -> None:
    """A chunk holding a class is context only while some rule declares `Fact.STRUCTS`."""

    class Declares(_Probe):
        reads = frozenset({Fact.IMPORTS, Fact.STRUCTS})

    without = incremental._Facts.of((_Probe(),))
    with_structs = incremental._Facts.of((Declares(),))
    assert ast.ClassDef not in without.nodes and ast.ClassDef in with_structs.nodes
    every = incremental._Facts.of(rules.all_rules())
    # the registered rules declare, between them, every fact there is
    assert {f for r in rules.all_rules() for f in r.reads} == set(Fact)
    assert set(every.nodes) == {n for f in Fact for n in f.value.nodes}


def _documented_rule() -> type[Rule]:
    """The worked example of docs/architecture.md ("How to add a rule"), as a module of its own."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = re.search(r"^````python\n(.*?)^````$", doc, re.S | re.M)
    assert found is not None, "the worked example is gone"
    module = types.ModuleType("wh099_kernel_printf")
    sys.modules[module.__name__] = module
    exec(compile(found.group(1), "wh099_kernel_printf.py", "exec"), module.__dict__)
    rule: type[Rule] = module.KernelPrintf
    return rule


PRINTING = """
import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float)):
    i = wp.tid()
    wp.printf("%f\\n", x[i])


def run(x):
    wp.launch(scale, dim=len(x), inputs=[x])
"""


def test_the_worked_example_of_a_new_rule_runs_checked_and_incrementally(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cls = _documented_rule()
    assert cls.doc().startswith("## WH099 kernel-printf") and "### Bad" in cls.doc()
    monkeypatch.setattr(rules, "all_rules", lambda: (cls(),))
    monkeypatch.setattr(incremental, "all_rules", rules.all_rules)
    incremental._facts.cache_clear()
    try:
        fresh = analyse_source(PRINTING, "p.py").records
        assert [r.message for r in fresh] == ["`scale` prints from every thread (launched at line 12)"]
        # lines added above the launch: the quoted line moves, incrementally as in a fresh analysis
        analyser = IncrementalAnalyser()
        analyser.analyse(PRINTING, "p.py", rule_base.Settings())
        edited = PRINTING.replace("def run(x):\n", "def run(x):\n    y = 1\n    z = 2\n")
        moved = analyser.analyse(edited, "p.py", rule_base.Settings()).records
        assert moved == analyse_source(edited, "p.py").records
        assert [r.message for r in moved] == ["`scale` prints from every thread (launched at line 14)"]
        # the same rule without Fact.LAUNCHES declared fails at its first read of the launches
        monkeypatch.setattr(cls, "reads", frozenset({Fact.IMPORTS}))
        with pytest.raises(UndeclaredFact, match=r"ctx\.launches_of"):
            analyse_source(PRINTING, "p.py")
    finally:
        incremental._facts.cache_clear()
