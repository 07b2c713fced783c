"""The tests' own corpus: realistic kernels in the style of simulation code, each with its verdict.

A case is one module ``cases/<name>.py`` or one package ``cases/<name>/`` (launches across modules). Its
header line (in the module, or in the package's ``__init__.py``) says what the checker must report and what
Warp does with the code::

    # corpus: expect=WH007,WH011 warp=silent

``expect`` lists the rule ids of every error and warning the checker must report across the case (a rule
twice when it fires twice; ``expect=`` for none). ``warp`` is ``rejects`` (Warp's code generator or launch
raises: asserted here with the oracle), ``silent`` (Warp compiles and runs it wrong: the rule's own tests
show the wrong result) or ``ok`` (correct code: nothing may be reported, and Warp accepts it).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from warp_oracle import warp_error

from warp_harness.engine import check_paths
from warp_harness.record import Severity

CASES = Path(__file__).parent / "cases"
_HEADER = re.compile(r"^# corpus: expect=(?P<expect>[A-Z0-9,]*) warp=(?P<warp>rejects|silent|ok)\s*$", re.M)


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file())


def _header(case: Path) -> tuple[Counter[str], str]:
    text = (case / "__init__.py" if case.is_dir() else case).read_text(encoding="utf-8")
    match = _HEADER.search(text)
    assert match, f"{case.name}: no `# corpus: expect=... warp=...` header"
    expect = Counter(r for r in match["expect"].split(",") if r)
    return expect, match["warp"]


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.stem)
def test_checker_reports_what_the_case_expects(case: Path) -> None:
    expect, verdict = _header(case)
    if verdict == "ok":
        assert not expect, "an `ok` case expects nothing"
    results = check_paths([case], {"exclude": []})  # the project excludes its corpora from its own check
    found = Counter(
        r.rule
        for result in results
        for r in result.records
        if r.severity in (Severity.ERROR, Severity.WARNING)
    )
    report = [f"{r.location.line}: {r.rule} {r.message}" for x in results for r in x.records]
    assert found == expect, "\n".join(report)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", [c for c in _cases() if c.is_file() and _header(c)[1] != "silent"], ids=lambda p: p.stem
)
def test_warp_agrees_with_the_verdict(case: Path) -> None:
    """`rejects`: Warp raises on the module's kernels (or in its ``run()`` on the CPU); `ok`: it does not."""
    _, verdict = _header(case)
    source = case.read_text(encoding="utf-8")
    error = warp_error(source, launch="def run(" in source)
    if verdict == "rejects":
        assert error is not None
    else:
        assert error is None, error
