"""daemon/results.py: the typed job results survive the pipe and the cache unchanged."""

from __future__ import annotations

from warp_harness.daemon import findings as F
from warp_harness.daemon.results import CheckReport, FailingCase, ReportedRecord, WorkerResult
from warp_harness.record import Record, Severity, Stage


def _record(rule: str = F.MISMATCH) -> Record:
    return F.make_record(Stage.NUMERIC, rule, Severity.ERROR, "k.py", 3, "wrong values")


def test_worker_result_round_trips_through_its_wire_form_with_unknown_keys_kept() -> None:
    wire = {
        "status": "fail",
        "path": "k.py",
        "records": [_record().to_dict()],
        "kernels": {"k": {"contract": "k", "validate": {"cpu": "fail"}}},
        "failures": [{"kind": "numeric", "kernel": "k", "size": 7, "seed": 3, "evidence": {"n_bad": 2}}],
        "deps": [["/w/k.py", "abc"]],
        "seed": 3,
        "build_keys": {"k@cpu": "x"},  # not a typed field: kept as is
    }
    result = WorkerResult.from_dict(wire)
    assert result.records[0].rule == F.MISMATCH and result.failures[0].size == 7
    assert result.failures[0].evidence == {"n_bad": 2}
    again = WorkerResult.from_dict(result.to_dict())
    assert again == result
    assert again.to_dict()["build_keys"] == {"k@cpu": "x"}


def test_failing_case_keeps_keys_it_does_not_know() -> None:
    case = FailingCase.from_dict({"kernel": "k", "kind": "crash", "future_field": 1})
    assert case.to_dict()["future_field"] == 1 and case.kind == "crash"


def test_check_report_sends_dynamic_fields_only_when_trusted() -> None:
    record = _record()
    trusted = CheckReport("k.py", True, status="fail", records=[ReportedRecord(record, "dynamic", 2)], seed=5)
    sent = trusted.to_dict()
    assert sent["seed"] == 5 and sent["records"][0]["streak"] == 2 and sent["records"][0]["tier"] == "dynamic"
    assert trusted.dynamic() == [record]
    untrusted = CheckReport("k.py", False, status="untrusted").to_dict()
    assert "seed" not in untrusted and "module_hash" not in untrusted
