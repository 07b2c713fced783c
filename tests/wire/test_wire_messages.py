"""The typed socket schema (warp_harness/wire/): what each side builds is what the other reads, a
field of the wrong type is a clear protocol error naming it, and the enums are their wire strings."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from warp_harness.daemon.pipeline import Step
from warp_harness.record import Location, Record, Severity, Stage
from warp_harness.wire import framing
from warp_harness.wire.messages import (
    REQUESTS,
    Check,
    Error,
    Hello,
    MalformedMessage,
    Progress,
    Removed,
    Report,
    ReportedRecord,
    Result,
    Results,
    ResultsRequest,
    StateChange,
    Subscribe,
    Unknown,
    Welcome,
    parse_daemon_message,
    parse_request,
)
from warp_harness.wire.statuses import STEP_ACTIVITY, Activity, JobState, RecordSet, Status, Tier

REPO = Path(__file__).resolve().parents[2]


def _record(rule: str, line: int = 3) -> Record:
    where = Location("k.py", line, 4, end_line=line, end_col=9, kernel="k")
    return Record(Stage.NUMERIC, rule, Severity.ERROR, where, "wrong values")


def _report() -> Report:
    return Report(
        path="k.py",
        trusted=True,
        status=Status.FAIL,
        records=[
            ReportedRecord(_record("WH003", 2), Tier.STATIC),
            ReportedRecord(_record("WHD020"), Tier.DYNAMIC, streak=2),
        ],
        kernels={
            "k": {"line": 3, "codegen": "ok", "compile": {"cpu": "compiled"}, "validate": {"cpu": "fail"}}
        },
        timings={"worker_ms": 12.5, "queue_ms": None},
        seed=7,
        module_hash="abc",
        devices=["cpu"],
        source_sha256="00" * 32,
        elapsed_ms=30.0,
    )


def _over_the_wire(msg: dict[str, Any]) -> dict[str, Any]:
    """``msg`` as the peer decodes it from a frame."""
    frame = framing.encode_frame(msg)
    decoded: dict[str, Any] = framing.decode_payload(frame[framing.HEADER_SIZE :])
    return decoded


def test_statuses_are_their_wire_strings_everywhere() -> None:
    assert framing.packb({"status": Status.IMPORT_ERROR, "tier": Tier.DYNAMIC}) == framing.packb(
        {"status": "import-error", "tier": "dynamic"}
    )
    assert json.dumps([Status.OK, JobState.DONE]) == '["ok", "done"]'
    assert f"{Status.TIMEOUT}|{Status.TIMEOUT:>8}" == "timeout| timeout" and str(Status.STALE) == "stale"
    assert (
        Status.parse("crash") is Status.CRASH and Status.parse("nonsense") is None and Status.parse(3) is None
    )


def test_every_pipeline_step_shows_an_activity() -> None:
    assert set(STEP_ACTIVITY) == {step.value for step in Step}
    assert Step.BENCH.job_state is Activity.BENCHMARKING and Step.IMPORT.job_state is Activity.COMPILING
    assert Progress("validate").activity is Activity.VALIDATING and Progress("validate-done").activity is None


def test_a_result_reads_back_as_it_was_sent() -> None:
    report = _report()
    sent = _over_the_wire(Result(report, push=True).to_wire())
    assert sent["status"] == "fail" and [r["tier"] for r in sent["records"]] == ["static", "dynamic"]
    got = parse_daemon_message(sent)
    assert isinstance(got, Result) and got.push
    assert got.report == report and got.report.status is Status.FAIL
    assert [r.tier for r in got.report.records] == [Tier.STATIC, Tier.DYNAMIC]
    assert got.report.dynamic() == [_record("WHD020")]


def test_the_dynamic_record_set_leaves_the_static_records_out() -> None:
    report = _report()
    everything = report.to_dict()
    dynamic = report.to_dict(RecordSet.DYNAMIC)
    assert [r["rule"] for r in everything["records"]] == ["WH003", "WHD020"]
    assert [r["rule"] for r in dynamic["records"]] == ["WHD020"]
    assert {k: v for k, v in dynamic.items() if k != "records"} == {
        k: v for k, v in everything.items() if k != "records"
    }


def test_the_result_map_is_the_one_before_the_schema() -> None:
    """The keys and their order as `CheckReport.to_dict` wrote them before the typed schema (the
    VS Code client reads diagnostics only; scripts and `results --json` read these)."""
    sent = Result(_report(), push=True).to_wire()
    assert list(sent) == [
        "v", "type", "push", "path", "trusted", "cached", "repros", "status", "kernels", "timings",
        "records", "elapsed_ms", "seed", "module_hash", "devices", "source_sha256",
    ]  # fmt: skip
    assert list(sent["records"][1])[-2:] == ["streak", "tier"]
    untrusted = Report(path="k.py", trusted=False, status=Status.UNTRUSTED).to_dict()
    assert "seed" not in untrusted and "devices" not in untrusted


def test_pushes_read_back_typed() -> None:
    state = parse_daemon_message(_over_the_wire(StateChange("k.py", JobState.RUNNING).to_wire()))
    assert state == StateChange("k.py", JobState.RUNNING) and state.state is JobState.RUNNING
    assert parse_daemon_message(_over_the_wire(Removed("k.py").to_wire())) == Removed("k.py")
    progress = Progress.from_wire({"stage": "compile", "kernel": "k", "device": "cpu", "budget_s": 9})
    assert progress.detail() == "compile k cpu"
    # a push repeats the fields the worker sent, exactly those
    assert progress.to_wire() == {
        "v": 1, "type": "progress", "push": True, "stage": "compile", "kernel": "k", "device": "cpu"
    }  # fmt: skip
    assert parse_daemon_message(_over_the_wire(progress.to_wire())) == progress


def test_a_newer_daemons_push_is_unknown_not_an_error() -> None:
    got = parse_daemon_message({"v": 1, "type": "forecast", "push": True, "rain": 0.3})
    assert isinstance(got, Unknown) and got.type == "forecast"
    # unknown fields of a known message are ignored
    assert parse_daemon_message({"v": 1, "type": "removed", "path": "a.py", "why": "x"}) == Removed("a.py")


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ({"type": "result", "path": 3, "trusted": True}, "path"),
        ({"type": "result", "path": "a.py", "records": {"not": "a list"}}, "records"),
        ({"type": "result", "path": "a.py", "status": "exploded"}, "status"),
        ({"type": "result", "path": "a.py", "kernels": {"k": ["no"]}}, "kernels"),
        ({"type": "result", "path": "a.py", "kernels": {"k": {"validate": "pass"}}}, "kernels"),
        ({"type": "result", "path": "a.py", "timings": {"a_ms": "fast"}}, "timings"),
        ({"type": "result", "path": "a.py", "seed": "7"}, "seed"),
        ({"type": "state", "path": "a.py", "state": "sleeping"}, "state"),
        ({"type": "removed"}, "path"),
        ({"type": "welcome", "trusted": "yes"}, "trusted"),
        ({"type": "results", "results": [1]}, "results"),
    ],
)
def test_a_malformed_daemon_message_is_a_clear_error(message: dict[str, Any], field: str) -> None:
    with pytest.raises(MalformedMessage) as caught:
        parse_daemon_message({"v": 1, **message})
    assert caught.value.code == framing.E_MALFORMED and f"`{field}`" in caught.value.message


def test_an_unreadable_record_is_left_out_and_counted() -> None:
    good = ReportedRecord(_record("WHD020"), Tier.DYNAMIC).to_dict()
    bad = [{"rule": "WHD020"}, "text", {**good, "tier": "cosmic"}, {**good, "severity": "dire"}]
    got = parse_daemon_message({"v": 1, "type": "result", "path": "a.py", "records": [*bad, good]})
    assert isinstance(got, Result) and got.report.unreadable == 4
    assert [r.record for r in got.report.records] == [_record("WHD020")]
    assert got.report.records[0].wire == good  # the map it came as, for the diagnostic's data


def test_welcome_error_and_results_read_back() -> None:
    welcome = Welcome("d", "1.0", 1, [1], "/ws", True, 1 << 24, ["check", "records:dynamic"])
    assert parse_daemon_message(_over_the_wire(welcome.to_wire())) == welcome
    error = framing.error_message(framing.E_BAD_REQUEST, "no", 4)
    assert parse_daemon_message(error) == Error(framing.E_BAD_REQUEST, "no", 4)
    results = parse_daemon_message(framing.message("results", results=[_report().to_dict()]))
    assert isinstance(results, Results) and results.reports == [_report()]


def test_requests_read_back_and_bad_fields_are_bad_requests() -> None:
    for request in (
        Hello("lsp", subscribe=False, records=RecordSet.DYNAMIC),
        Check("a.py", force=True, wait=False),
        ResultsRequest("a.py"),
        ResultsRequest(),
        Subscribe(False),
    ):
        assert parse_request(_over_the_wire(request.to_wire())) == request
    assert Hello("x").to_wire() == {"v": 1, "type": "hello", "client": "x", "subscribe": True}
    assert set(REQUESTS) == {"hello", "ping", "check", "results", "status", "subscribe", "shutdown"}
    assert parse_request({"type": "accept"}) is None  # a request this schema does not know (yet)
    for bad, field in (
        ({"type": "check"}, "path"),
        ({"type": "check", "path": ""}, "path"),
        ({"type": "results", "path": 5}, "path"),
        ({"type": "subscribe", "enabled": "yes"}, "enabled"),
        ({"type": "hello", "records": "some"}, "records"),
    ):
        with pytest.raises(MalformedMessage) as caught:
            parse_request(bad)
        assert caught.value.code == framing.E_BAD_REQUEST and f"`{field}`" in caught.value.message


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_neither_side_owns_the_schema() -> None:
    """The schema imports neither the daemon nor the server; the server's link to the daemon and its
    handling of daemon messages import the schema, not the daemon's modules."""
    for path in sorted((REPO / "warp_harness" / "wire").glob("*.py")):
        imported = _imports(path)
        assert not {m for m in imported if m.startswith(("warp_harness.daemon", "warp_harness.server"))}, path
    for name in ("daemon_link.py", "app.py"):
        imported = _imports(REPO / "server" / name)
        assert not {m for m in imported if m.startswith("warp_harness.daemon")}, name
    protocol = ("warp_harness.daemon.protocol", "warp_harness.daemon.pipeline", "warp_harness.daemon.results")
    for path in sorted((REPO / "server").glob("*.py")):
        assert not {m for m in _imports(path) if m.startswith(protocol)}, path
