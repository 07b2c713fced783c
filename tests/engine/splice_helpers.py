"""What the tests of the keystroke path share (`test_incremental_splice`, `test_incremental_quotes`): a spy
on the analyser's full model builds and on the kernels a rule is asked about, and the check that the
analyser's records are those of a fresh analysis."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from warp_harness import incremental
from warp_harness.builtins import BuiltinTable
from warp_harness.config import Settings
from warp_harness.engine import analyse_source
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.model.kernel import KernelDef
from warp_harness.model.module import ModuleModel
from warp_harness.record import Record
from warp_harness.rules import all_rules
from warp_harness.rules.base import Rule, RuleContext


class Spy:
    """Counts full model builds and which kernels WH001 is asked about."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.builds = 0
        self.checked: list[str] = []
        real_build = incremental.build_model

        def build(*args: object, **kwargs: object) -> ModuleModel:
            self.builds += 1
            return real_build(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(incremental, "build_model", build)
        rule = type(next(r for r in all_rules() if r.id == "WH001"))
        original = rule.check_kernel

        def counting(rule_self: Rule, ctx: RuleContext, kernel: KernelDef) -> Iterable[Record]:
            self.checked.append(kernel.name)
            return original(rule_self, ctx, kernel)

        monkeypatch.setattr(rule, "check_kernel", counting)

    def reset(self) -> None:
        self.builds = 0
        self.checked.clear()


def same(
    analyser: IncrementalAnalyser,
    text: str,
    table: BuiltinTable,
    spy: Spy | None,
    path: str,
    settings: Settings,
    memo: dict[str, tuple[Record, ...]] | None = None,
) -> list[Record]:
    """Assert the analyser's records of ``text`` are those of a fresh analysis (``spy``: reset before the
    analyser's, which it counts); return them. ``memo``: the fresh records by text, for a caller whose every
    call passes the same ``path``, ``settings`` and ``table`` (the fresh analysis is then a function of the
    text alone: a hypothesis test re-analysed its unedited source for every example)."""
    known = memo.get(text) if memo is not None else None
    if known is None:
        known = tuple(analyse_source(text, path, settings, builtins=table).records)
        if memo is not None:
            memo[text] = known
    fresh = list(known)
    if spy is not None:
        spy.reset()
    records = analyser.analyse(text, path, settings).records
    assert records == fresh
    return records
