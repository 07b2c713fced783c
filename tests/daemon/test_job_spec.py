"""A worker job's spec is frozen (no step can change what the supervisor asked for), and the steps'
per-kernel findings come out typed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.steps import Job, JobSpec, KernelInfo
from warp_harness.daemon.worker import _make_job
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
    job = _make_job(_message(tmp_path, source_sha256="ab" * 32), lambda **_: None)
    assert isinstance(job, Job) and job.path == (tmp_path / "k.py").resolve() and job.seed == 11
    with pytest.raises(AttributeError):
        job.path = tmp_path / "elsewhere.py"
    with pytest.raises(AttributeError):
        job.options = RuntimeOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.spec.seed = 12  # type: ignore[misc]
    # what the steps find is the job's: the hash of the text imported replaces the one expected
    assert job.source_sha256 == job.spec.expected_sha256 == "ab" * 32
    job.source_sha256 = "cd" * 32
    assert job.spec.expected_sha256 == "ab" * 32
    job.skip["k"] = "not-selected"
    assert job.skip == {"other": "crash", "k": "not-selected"}


def test_the_spec_holds_everything_the_message_asked_for(tmp_path: Path) -> None:
    positions = {"sha256": "ef" * 32, "kernels": {"k": [4, 0, 5]}}
    check = _make_job(_message(tmp_path, verdict=True, sample_seed=9, positions=positions), None).spec
    assert (check.verdict, check.sample_seed) == (True, 9)
    assert check.known_positions == {"k": (4, 0, 5)} and check.known_positions_sha256 == "ef" * 32
    case = _make_job(_message(tmp_path, kind="case", device="cuda:1"), None, devices=["cuda:1"]).spec
    assert tuple(case.options.devices) == ("cuda:1",) and not case.verdict and case.sample_seed is None
    assert isinstance(case, JobSpec)


def test_a_kernels_summary_is_typed() -> None:
    info = KernelInfo("k", 3, 4, 5, kernel=None)
    info.codegen = "ok"
    info.compile["cpu"] = "cached"
    info.validate["cpu"] = "pass"
    summary = info.summary()
    assert summary["codegen"] is Codegen.OK and summary["compile"] == {"cpu": Build.CACHED}
    assert summary["validate"]["cpu"] is Verdict.PASS
    assert KernelInfo("k", 3, 4, 5, kernel=None).summary()["codegen"] is Codegen.PENDING
    info.validate["cpu"] = "passed"  # a step's misspelt verdict fails in the worker, not in a reader
    with pytest.raises(ValueError, match="passed"):
        info.summary()
