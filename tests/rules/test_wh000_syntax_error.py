"""WH000: a file that does not parse is reported once, where Python says, and the rest is still checked."""

from __future__ import annotations

from checker_helpers import Analyse, rules_of

from warp_harness.engine import check_bytes
from warp_harness.rules import rule_by_id
from warp_harness.rules.base import Scope

_HALF_TYPED = """import warp as wp


@wp.kernel
def before(x: wp.array(dtype=wp.float16)):
    i = wp.tid()
    x[i] = x[i] * 2.0


@wp.kernel
def typing(x: wp.array(dtype=float):
    i = wp.tid()


@wp.kernel
def after(x: wp.array(dtype=wp.float16)):
    i = wp.tid()
    x[i] = x[i] * 2.0
"""


def test_one_record_at_the_error_and_the_other_kernels_still_checked(analyse: Analyse) -> None:
    records = analyse(_HALF_TYPED)
    assert rules_of(records).count("WH000") == 1
    (syntax,) = (r for r in records if r.rule == "WH000")
    assert syntax.location.line == 11 and syntax.severity.value == "error"
    assert syntax.message.startswith("syntax error: ")
    # the kernels above and below the half-typed one keep their findings
    assert sorted(r.location.line for r in records if r.rule == "WH003") == [7, 18]


def test_selecting_other_rules_keeps_the_syntax_error(analyse: Analyse) -> None:
    assert "WH000" in rules_of(analyse(_HALF_TYPED, select=["WH003"]))


def test_bytes_that_are_not_text() -> None:
    for data in (b"\x00\x01\x02", b"# coding: ascii\nx = '\xe9'\n"):
        result = check_bytes(data, "bad.py")
        assert rules_of(list(result.records)) == ["WH000"]


def test_the_rule_is_listed_and_documented_though_the_engine_reports_it() -> None:
    rule = rule_by_id("WH000")
    assert rule is not None and rule.scope is Scope.MODULE
    assert "### Bad" in rule.doc() and "### Good" in rule.doc()
