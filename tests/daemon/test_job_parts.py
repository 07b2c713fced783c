"""A module's check split into one job per (kernel, device) and merged back (daemon/executor.py:
``plan_parts``, ``merge_parts``; worker.select_kernels), as the Ray executor runs it, against the
same check run as one job. Run here through a local Supervisor: the split and the merge are the
executor's, the cluster only carries the jobs (tests/daemon/test_ray_executor.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES

from warp_harness.daemon import findings as F
from warp_harness.daemon.job_parts import JobPart, kernel_names, merge_parts, plan_parts
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.results import WorkerResult
from warp_harness.daemon.supervisor import Supervisor
from warp_harness.record import Record

# private builds: split and whole runs are compared field by field, compile states ("compiled") included
pytestmark = pytest.mark.private_kernel_builds


def test_kernel_names_are_the_decorated_top_level_functions_in_source_order() -> None:
    source = (
        "import warp as wp\nfrom warp import kernel\nimport warp\n"
        "@wp.kernel\ndef a(x: wp.array(dtype=float)):\n    pass\n"
        "def helper():\n    pass\n"
        "@wp.func\ndef f(x: float):\n    return x\n"
        "@warp.kernel(enable_backward=False)\ndef b(x: wp.array(dtype=float)):\n    pass\n"
        "@kernel\ndef c(x: wp.array(dtype=float)):\n    pass\n"
        "def factory():\n    @wp.kernel\n    def inner(x: wp.array(dtype=float)):\n        pass\n"
    )
    assert kernel_names(source) == ["a", "b", "c"]
    assert kernel_names("def broken(:\n") == []


def test_the_plan_is_one_job_per_kernel_and_device_kernel_major(tmp_path: Path) -> None:
    path = shutil.copy(EXAMPLES / "stream_large.py", tmp_path / "stream_large.py")
    opts = RuntimeOptions(devices=("cpu", "cuda"))
    parts = plan_parts(Path(path), DEFAULT_STEPS, opts)
    assert [(p.kernel, p.device) for p in parts] == [
        ("copy_f32", "cpu"),
        ("copy_f32", "cuda"),
        ("copy_vec4", "cpu"),
        ("copy_vec4", "cuda"),
        ("saxpy_large", "cpu"),
        ("saxpy_large", "cuda"),
    ]
    # the first kernel's job owns every kernel no other job owns (kernels made at run time)
    assert parts[0].selection == {"except": ["copy_vec4", "saxpy_large"]} and not parts[0].owns_one
    assert parts[2].selection == {"only": ["copy_vec4"]} and parts[2].owns_one
    assert parts[1].options(opts).devices == ("cuda",)
    # nothing runs (compile only): the module is one job; one kernel and one device: one job
    assert plan_parts(Path(path), (), opts) == [JobPart()]
    single = shutil.copy(EXAMPLES / "saxpy.py", tmp_path / "saxpy.py")
    assert plan_parts(Path(single), DEFAULT_STEPS, RuntimeOptions()) == [JobPart()]


def _comparable(result: WorkerResult) -> str:
    data = result.to_dict()
    kept = ("status", "records", "kernels", "seed", "devices", "crashed_kernels", "failures")
    return json.dumps({k: data[k] for k in kept}, default=str)


OPTIONS = RuntimeOptions(
    bench=False, seed=1234, launch_timeout_s=2.0, timeout_s=120.0, devices=("cpu", "cuda")
)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["oob_crash.py", "stream_large.py"])
def test_split_jobs_merge_into_the_whole_module_result(tmp_path: Path, name: str) -> None:
    """oob_crash: one kernel crashes (restart, skip, debug re-run) beside one that passes;
    stream_large: three kernels. Both on cpu and on cuda (absent here: skipped), so the jobs
    split by device too. Each run in a workspace of its own (a fresh kernel cache each)."""
    whole_ws, split_ws = tmp_path / "whole", tmp_path / "split"
    for ws in (whole_ws, split_ws):
        ws.mkdir()
        for example in EXAMPLES.glob("*.py"):
            shutil.copy(example, ws / example.name)
    with Supervisor(whole_ws, OPTIONS, warmup=False) as sup:
        whole = sup.check(whole_ws / name, display_path=name)
    path = split_ws / name
    parts = plan_parts(path, DEFAULT_STEPS, OPTIONS)
    assert len(parts) == 2 * len(kernel_names(path.read_text())) >= 4
    with Supervisor(split_ws, OPTIONS, warmup=False) as sup:
        results = [
            sup.check(path, display_path=name, options=p.options(OPTIONS), kernels=p.selection, seed=77)
            for p in parts
        ]
    # a job validates only its own kernel: the one-kernel jobs' results say so
    for part, result in zip(parts, results, strict=True):
        validated = {r.location.kernel for r in result.records if r.rule == F.VALIDATED}
        if part.owns_one:
            assert validated <= {part.kernel}
    merged = merge_parts(parts, results, name)
    assert _comparable(merged) == _comparable(whole)
    assert merged.status == whole.status and whole.records


@pytest.mark.slow
def test_a_kernel_selection_validates_only_the_kernels_it_names(tmp_path: Path) -> None:
    path = shutil.copy(EXAMPLES / "stream_large.py", tmp_path / "stream_large.py")
    options = RuntimeOptions(bench=False, seed=5, timeout_s=120.0)
    with Supervisor(tmp_path, options, warmup=False) as sup:
        only = sup.check(Path(path), kernels={"only": ["copy_vec4"]}, steps=(Step.VALIDATE,))
        rest = sup.check(Path(path), kernels={"except": ["copy_vec4"]}, steps=(Step.VALIDATE,))
    assert {n: s["validate"] for n, s in only.kernels.items()} == {
        "copy_f32": {},
        "copy_vec4": {"cpu": "pass"},
        "saxpy_large": {},
    }
    assert {n: s["validate"] for n, s in rest.kernels.items()} == {
        "copy_f32": {"cpu": "pass"},
        "copy_vec4": {},
        "saxpy_large": {"cpu": "pass"},
    }
    # the module is built whole either way
    assert all(s["compile"] for s in only.kernels.values())
    # the verdict worker computed references for the selected kernel only
    assert only.notes["verdict"]["references"] < rest.notes["verdict"]["references"]


def test_a_lost_job_keeps_what_the_other_jobs_found() -> None:
    from warp_harness.daemon.findings import make_record
    from warp_harness.record import Severity, Stage

    def record(rule: str, kernel: str | None, line: int) -> Record:
        return make_record(
            Stage.NUMERIC, rule, Severity.INFO, "m.py", line, f"{rule} {kernel}", kernel=kernel
        )

    parts = [JobPart("a", {"except": ["b"]}), JobPart("b", {"only": ["b"]})]
    module_note = record("WHD001", None, 1)
    ran = WorkerResult(
        status="ok",
        path="m.py",
        records=[module_note, record(F.VALIDATED, "a", 3)],
        kernels={"a": {"compile": {"cpu": "compiled"}, "validate": {"cpu": "pass"}}, "b": {"validate": {}}},
    )
    lost_record = make_record(Stage.INTERNAL, F.INFRASTRUCTURE, Severity.ERROR, "m.py", 1, "lost", kernel="b")
    lost = WorkerResult(status="infrastructure", path="m.py", records=[lost_record], cacheable=False)
    merged = merge_parts(parts, [ran, lost], "m.py")
    assert merged.status == "infrastructure" and not merged.cacheable
    assert sorted(r.message for r in merged.records) == ["WHD001 None", f"{F.VALIDATED} a", "lost"]
    assert merged.kernels["a"]["validate"] == {"cpu": "pass"} and merged.kernels["b"]["validate"] == {}
    # a stale job (the file changed) makes the whole stale: the engine runs the check again
    stale = WorkerResult(status="stale", path="m.py")
    assert merge_parts(parts, [ran, stale], "m.py").status == "stale"


def test_a_build_is_compiled_when_any_job_made_it_and_cached_after_a_crash() -> None:
    """Which job of a module builds it first depends on the cluster; the merged summary does not:
    built during the check is ``compiled`` (as one job reports it), and after a crash ``cached``
    (one job restarts and re-runs whole, finding its build)."""
    parts = [JobPart("a", {"except": ["b"]}), JobPart("b", {"only": ["b"]})]

    def result(state: str, crashed: dict[str, str] | None = None) -> WorkerResult:
        kernels = {k: {"compile": {"cpu": state}, "validate": {"cpu": "pass"}} for k in ("a", "b")}
        return WorkerResult(status="ok", path="m.py", kernels=kernels, crashed_kernels=crashed or {})

    for first, second in (("cached", "compiled"), ("compiled", "cached")):
        merged = merge_parts(parts, [result(first), result(second)], "m.py")
        assert {k: s["compile"] for k, s in merged.kernels.items()} == {
            "a": {"cpu": "compiled"},
            "b": {"cpu": "compiled"},
        }
    merged = merge_parts(parts, [result("compiled"), result("cached", {"b": "crash"})], "m.py")
    assert {k: s["compile"] for k, s in merged.kernels.items()} == {
        "a": {"cpu": "cached"},
        "b": {"cpu": "cached"},
    }
    assert merged.crashed_kernels == {"b": "crash"}
