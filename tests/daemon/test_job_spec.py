"""A worker job's spec is frozen (no step can change what the supervisor asked for); each step gets a
context of its own and returns a frozen outcome, which only the worker folds into the job's result;
the steps' per-kernel findings come out typed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from warp_harness.daemon.job_fold import JobFold, merge_notes
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.steps import Built, JobSpec, KernelInfo, KernelVerdicts, StepOutcome
from warp_harness.daemon.worker import _make_fold
from warp_harness.record import Location, Record, Severity, Stage
from warp_harness.wire.statuses import Build, Codegen, Verdict


def _message(tmp_path: Path, **extra: object) -> dict[str, object]:
    (tmp_path / "k.py").write_text("x = 1\n")
    return {
        "kind": "check",
        "id": 3,
        "path": str(tmp_path / "k.py"),
        "display_path": "k.py",
        "workspace": str(tmp_path),
        "options": RuntimeOptions(devices=("cpu",)).to_dict(),
        "seed": 11,
        "skip": {"other": "crash"},
        **extra,
    }


def test_a_step_cannot_change_the_jobs_spec(tmp_path: Path) -> None:
    fold = _make_fold(_message(tmp_path, source_sha256="ab" * 32), lambda **_: None)
    assert isinstance(fold, JobFold) and fold.spec.seed == 11
    ctx = fold.context()
    assert ctx.path == (tmp_path / "k.py").resolve() and ctx.seed == 11
    with pytest.raises(AttributeError):
        ctx.path = tmp_path / "elsewhere.py"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ctx.options = RuntimeOptions()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.spec.seed = 12  # type: ignore[misc]
    # what the steps find is the job's: the hash of the text imported replaces the one expected
    assert fold.source_sha256 == fold.spec.expected_sha256 == "ab" * 32
    fold.source_sha256 = "cd" * 32
    assert fold.spec.expected_sha256 == "ab" * 32
    ctx.skip["k"] = "not-selected"  # type: ignore[index]
    assert fold.skip == {"other": "crash"}  # a step's context is its own


def _record(message: str) -> Record:
    return Record(Stage.NUMERIC, "WHD001", Severity.INFO, Location("k.py", 1, 0), message)


def test_a_step_sees_only_the_outcomes_folded_before_it(tmp_path: Path) -> None:
    fold = _make_fold(_message(tmp_path), lambda **_: None)
    fold.kernels = {"k": KernelInfo("k", 3, 4, 5, kernel=None)}
    first = fold.context()
    first.set_codegen("k", "ok")
    first.add(_record("one"))
    first.notes.setdefault("drawn_skipped", []).append("k:7")
    first.timings["ship_ms"] = 1.0
    second = fold.context()  # made before the first step's outcome was folded: sees none of it
    assert second.verdicts_of("k").codegen == "pending" and second.records == [] and second.notes == {}
    outcome = first.outcome()
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.records = ()  # type: ignore[misc]
    fold.take(outcome)
    third = fold.context()
    assert third.verdicts_of("k").codegen == "ok" and third.records == []  # verdicts, not records
    third.set_build("k", "cpu", "cached")
    third.notes.setdefault("drawn_skipped", []).append("k:9")
    third.timings["ship_ms"] = 2.0
    fold.take(third.outcome(Built((("cpu", None),), {"k@cpu": "key"}, "hash", fold.kernels)))
    assert fold.notes == {"drawn_skipped": ["k:7", "k:9"]} and fold.timings == {"ship_ms": 3.0}
    assert [r.message for r in fold.records] == ["one"]
    assert (fold.devices, fold.build_keys, fold.module_hash) == ((("cpu", None),), {"k@cpu": "key"}, "hash")
    result = fold.result("ok")
    assert result["kernels"]["k"]["codegen"] == "ok" and result["kernels"]["k"]["compile"] == {
        "cpu": "cached"
    }


def test_notes_fold_as_one_shared_dict_did() -> None:
    notes: dict[str, object] = {"patched": ["a"], "recheck_sizes": {"k@cpu": 1}, "verdict_not_sent": 1}
    merge_notes(
        notes, {"patched": ["b"], "recheck_sizes": {"j@cpu": 2}, "verdict_not_sent": 2, "transient": "x"}
    )
    assert notes == {
        "patched": ["a", "b"],
        "recheck_sizes": {"k@cpu": 1, "j@cpu": 2},
        "verdict_not_sent": 3,
        "transient": "x",
    }
    assert StepOutcome().verdict_bytes == 0


def test_the_spec_holds_everything_the_message_asked_for(tmp_path: Path) -> None:
    positions = {"sha256": "ef" * 32, "kernels": {"k": [4, 0, 5]}}
    check = _make_fold(_message(tmp_path, verdict=True, sample_seed=9, positions=positions), None).spec
    assert (check.verdict, check.sample_seed) == (True, 9)
    assert check.known_positions == {"k": (4, 0, 5)} and check.known_positions_sha256 == "ef" * 32
    case = _make_fold(_message(tmp_path, kind="case", device="cuda:1"), None, devices=["cuda:1"]).spec
    assert tuple(case.options.devices) == ("cuda:1",) and not case.verdict and case.sample_seed is None
    assert isinstance(case, JobSpec)


def test_a_kernels_summary_is_typed() -> None:
    info = KernelInfo("k", 3, 4, 5, kernel=None)
    verdicts = KernelVerdicts(codegen="ok", compile={"cpu": "cached"}, validate={"cpu": "pass"})
    summary = verdicts.summary(info)
    assert summary["codegen"] is Codegen.OK and summary["compile"] == {"cpu": Build.CACHED}
    assert summary["validate"]["cpu"] is Verdict.PASS
    assert KernelVerdicts().summary(info)["codegen"] is Codegen.PENDING
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.runnable = object()  # type: ignore[misc]
    misspelt = KernelVerdicts(validate={"cpu": "passed"})  # fails in the worker, not in a reader
    with pytest.raises(ValueError, match="passed"):
        misspelt.summary(info)
