from __future__ import annotations

from pathlib import Path

from checker_helpers import Analyse, rules_of

from warp_harness.engine import analyse_source, check_bytes, check_paths
from warp_harness.record import Severity, Stage

BUGGY = """
import warp as wp

@wp.kernel
def k(x: wp.array(dtype=float), s):
    i = wp.tid()
    return x[i]
"""


def test_select_and_ignore(analyse: Analyse) -> None:
    assert set(rules_of(analyse(BUGGY))) >= {"WH001", "WH005"}
    assert rules_of(analyse(BUGGY, select=["WH005"])) == ["WH005"]
    assert "WH001" not in rules_of(analyse(BUGGY, ignore=["WH001"]))
    assert rules_of(analyse(BUGGY, select=["WH00"], ignore=["WH005"])) == ["WH001"]


def test_line_and_file_suppressions(analyse: Analyse) -> None:
    line = BUGGY.replace("    return x[i]", "    return x[i]  # wh: ignore[WH005]")
    assert "WH005" not in rules_of(analyse(line))
    assert "WH001" in rules_of(analyse(line))
    bare = BUGGY.replace(
        "def k(x: wp.array(dtype=float), s):", "def k(x: wp.array(dtype=float), s):  # wh: ignore"
    )
    assert "WH001" not in rules_of(analyse(bare))
    whole = "# wh: ignore-file[WH001, WH005]\n" + BUGGY
    assert not {"WH001", "WH005"} & set(rules_of(analyse(whole)))


def test_per_rule_severity_override(analyse: Analyse) -> None:
    records = analyse(BUGGY, select=["WH005"], severity={"WH005": "info"})
    assert [r.severity for r in records] == [Severity.INFO]


def test_records_carry_location_kernel_and_hint(analyse: Analyse) -> None:
    (record,) = analyse(BUGGY, select=["WH005"])
    assert record.stage is Stage.CONSTRAINT and record.location.kernel == "k"
    assert (record.location.line, record.location.col, record.location.end_line) == (7, 4, 7)
    assert record.hint and record.fix is not None


def test_columns_count_characters_not_bytes(analyse: Analyse) -> None:
    source = BUGGY.replace("    return x[i]", "    é = 1; return x[i]")
    (record,) = analyse(source, select=["WH005"])
    assert record.location.col == 11


def test_bad_input_never_raises(tmp_path: Path) -> None:
    cases = {
        "empty.py": b"",
        "binary.py": bytes(range(256)) * 4,
        "latin.py": b"x = '\xe9t\xe9'\n",
        "nowarp.py": b"def f(x):\n    return [i for i in x]\n",
        "half.py": b"import warp as wp\n@wp.kernel\ndef k(x: wp.arr",
        "huge.py": b"import warp as wp\n" + b"x = 1\n" * 200_000,
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    results = {Path(r.path).name: r for r in check_paths([tmp_path])}
    assert set(results) == set(cases)
    assert results["empty.py"].records == () and results["nowarp.py"].records == ()
    assert rules_of(list(results["binary.py"].records)) == ["WH000"]
    assert rules_of(list(results["latin.py"].records)) == ["WH000"]
    assert rules_of(list(results["half.py"].records)) == ["WH000"]
    assert results["huge.py"].records == ()


def test_syntax_error_reported_once_and_other_kernels_still_checked() -> None:
    source = BUGGY + "\n@wp.kernel\ndef broken(x: wp.array(dtype=float)\n    i = wp.tid()\n"
    records = analyse_source(source, "k.py").records
    assert rules_of(records).count("WH000") == 1
    assert "WH005" in rules_of(records)


def test_check_bytes_reports_undecodable_file() -> None:
    result = check_bytes(b"\x00\x01", "bin.py")
    assert len(result.records) == 1 and result.records[0].stage is Stage.SYNTAX


def test_a_file_that_cannot_hold_kernels_is_only_parsed() -> None:
    """No import can reach Warp without the word, and no kernel or launch without Warp's names for them,
    so `check_bytes` parses such a file for its syntax and skips the model and the rules: a fresh process
    imports neither the model nor the builtin table, and a syntax error is still reported."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from warp_harness.engine import check_bytes\n"
        "ok = check_bytes(b'import numpy as np\\nx = np.zeros(3)\\n', 'a.py')\n"
        "bad = check_bytes(b'def f(:\\n    pass\\n', 'b.py')\n"
        "host = check_bytes(b'import warp as wp\\nx = wp.zeros(3)\\n', 'c.py')\n"
        "assert not host.records\n"
        "print(len(ok.records), [r.rule for r in bad.records], bad.records[0].location.line)\n"
        "heavy = ('warp_harness.model.module', 'warp_harness.builtins.table', 'warp_harness.rules')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    command = [sys.executable, "-c", code]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.splitlines() == ["0 ['WH000'] 1", "[]"]


def test_a_warp_import_spelled_in_other_letters_is_still_analysed() -> None:
    """Python reads identifiers NFKC-normalised: ``import ｗarp`` imports warp, so a text that is not ASCII
    is analysed whole (Warp rejects the kernel's missing return annotation all the same)."""
    source = BUGGY.replace("import warp as wp", "import \uff57arp as wp")
    assert "warp" not in source
    rules = [r.rule for r in check_bytes(source.encode(), "k.py").records]
    assert {"WH001", "WH005"} <= set(rules)
