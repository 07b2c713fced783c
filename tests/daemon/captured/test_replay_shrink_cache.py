"""Captured launches replayed on real processes (a real capture, the sandboxed worker, real Warp on
the CPU): the CUDA oracle's note on a machine without CUDA, configurable tolerances, failing cases
shrunk to a minimal launch, and the per-user cache that spares a save an unchanged replay.

Motivating bugs: an out-of-bounds read silent in release builds
(https://github.com/NVIDIA/warp/issues/667, `a[i] += b[i+2]`), a wrong row stride that silently
changes results (https://github.com/NVIDIA/warp/pull/1068), and races a CPU run cannot show
(https://github.com/newton-physics/newton/pull/2477).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import FAST, CountingCall, captured_script

from warp_harness import user_state
from warp_harness.daemon import findings as F
from warp_harness.daemon import repros
from warp_harness.daemon.captured import replay_cache
from warp_harness.daemon.captured.replay import ReplayOutcome, replay_module
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.supervisor import Supervisor
from warp_harness.daemon.worker_process import CallOutcome

pytestmark = pytest.mark.slow

SOURCE = """import numpy as np
import warp as wp


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def total(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(s, 0, x[i])


if __name__ == "__main__":
    for n in (64, 8):
        x = wp.array(np.arange(n, dtype=np.float32) + 1.0)
        y = wp.zeros(n, dtype=float)
        wp.launch(double, dim=n, inputs=[x, y])
    s = wp.zeros(1, dtype=float)
    wp.launch(total, dim=8, inputs=[x, s])
"""


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    expect = "captured 3 launch(es) of 2 kernel(s)"
    return captured_script(tmp_path_factory.mktemp("shrinkws"), SOURCE, expect)


@pytest.fixture(scope="module")
def sup(captured: Path) -> Iterator[Supervisor]:
    s = Supervisor(captured, FAST, warmup=False)
    yield s
    s.close()


@pytest.fixture
def edit(captured: Path) -> Iterator[Any]:
    path = captured / "kernels.py"

    def apply(old: str, new: str) -> None:
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new), encoding="utf-8")

    yield apply
    path.write_text(SOURCE, encoding="utf-8")
    (captured / "pyproject.toml").unlink(missing_ok=True)
    shutil.rmtree(user_state.workspace_state_dir(captured, replay_cache.KIND), ignore_errors=True)


def _replay(
    ws: Path, sup: Supervisor, options: RuntimeOptions = FAST, **kw: Any
) -> tuple[ReplayOutcome, CountingCall]:
    call = CountingCall(sup)
    kw.setdefault("only_changed", False)
    return replay_module(ws, ws / "kernels.py", "kernels.py", options, call, **kw), call


def test_without_cuda_the_summary_says_the_race_oracle_did_not_run(captured: Path, sup: Supervisor) -> None:
    import warp as wp

    if wp.get_cuda_device_count() > 0:
        pytest.skip("a CUDA device is present: tests/daemon/captured/test_replay_cuda_oracle.py")
    out, _ = _replay(captured, sup, FAST.merged({"devices": ["cpu", "cuda"]}))
    summaries = [r.message for r in out.records if r.rule == F.REPLAYED]
    assert len(summaries) == 2 and all(
        "CUDA race oracle not run: no CUDA device on this machine" in m for m in summaries
    ), summaries
    assert not [r for r in out.records if r.rule == F.REPLAY_RACE]


def test_a_workspace_tolerance_looser_than_the_default_is_said(
    captured: Path, sup: Supervisor, edit: Any
) -> None:
    edit("y[i] = x[i] * 2.0", "y[i] = x[i] * 2.02")  # 1% off
    out, _ = _replay(captured, sup, kernels={"double"})
    assert [r.rule for r in out.records] == [F.BEHAVIOUR_CHANGED, F.BEHAVIOUR_CHANGED]  # both launches
    (captured / "pyproject.toml").write_text(
        "[tool.warp-harness]\n\n[tool.warp-harness.runtime.tolerances]\nfloat32 = [0.05, 0.0]\n",
        encoding="utf-8",
    )
    out, _ = _replay(captured, sup, kernels={"double"})
    (clean,) = out.records
    assert clean.rule == F.REPLAYED and "looser than the default rtol 0.0001" in clean.message
    assert "set by the workspace's pyproject.toml (`float32`)" in clean.message
    # the user's tolerance for this kernel beats the workspace's dtype-wide one
    strict = FAST.merged({"replay_tolerances": ["double.float32=1e-4,1e-5"]})
    out, _ = _replay(captured, sup, strict, kernels={"double"})
    assert [r.rule for r in out.records] == [F.BEHAVIOUR_CHANGED, F.BEHAVIOUR_CHANGED]
    assert "looser" not in out.records[0].message
    # a workspace tolerance a diff still exceeds: the record says which tolerance judged it
    (captured / "pyproject.toml").write_text(
        "[tool.warp-harness]\n\n[tool.warp-harness.runtime.tolerances]\n"
        '"double.float32" = { rtol = 1e-3, atol = 1e-3 }\n',
        encoding="utf-8",
    )
    out, _ = _replay(captured, sup, kernels={"double"})
    assert out.records[0].rule == F.BEHAVIOUR_CHANGED
    assert "`double.float32`), looser than the default" in out.records[0].message


def test_a_changed_result_is_stored_as_the_smallest_launch_with_fewer_threads(
    captured: Path, sup: Supervisor, edit: Any
) -> None:
    """Elements from 5 on change: of the two failing launches (dim 64 and 8) the case is the smaller,
    shrunk to the 6 threads that still fail."""
    edit("y[i] = x[i] * 2.0", "y[i] = x[i] * 2.0 + wp.where(i >= 5, 1.0, 0.0)")
    out, call = _replay(captured, sup, kernels={"double"}, shrink_failures=True)
    assert [r.rule for r in out.records] == [F.BEHAVIOUR_CHANGED, F.BEHAVIOUR_CHANGED]
    (case,) = out.failures
    assert (case.rule, case.size, case.original_size) == (F.BEHAVIOUR_CHANGED, 6, 8)
    assert "[minimal case: dim [6] of [8]]" in str(case.message)
    assert call.calls <= 1 + 3  # the replay, then a bisection of 8 threads
    # a kernel whose threads share an output (s[0]) is not shrunk, but still stored
    edit("wp.atomic_add(s, 0, x[i])", "wp.atomic_add(s, 0, x[i] * 2.0)")
    out, _ = _replay(captured, sup, kernels={"total"}, shrink_failures=True)
    (case,) = out.failures
    assert case.rule == F.BEHAVIOUR_CHANGED and case.size is None


def test_an_out_of_bounds_read_shrinks_and_replay_reruns_the_minimal_case(
    captured: Path, sup: Supervisor, edit: Any
) -> None:
    """warp#667's read two past the end: thread 6 is the first to read outside `x` of the dim-8
    launch, so 7 threads are the minimal case; `warp-harness replay` re-runs exactly that."""
    edit("y[i] = x[i] * 2.0", "y[i] = x[i + 2] * 2.0")
    out, _ = _replay(captured, sup, kernels={"double"}, shrink_failures=True)
    (case,) = out.failures
    assert (case.rule, case.size, case.original_size) == (F.REPLAY_BOUNDS, 7, 8)
    file = repros.store(captured, captured / "kernels.py", case, FAST.compile_options())
    try:
        p = subprocess.run(
            [sys.executable, "-m", "warp_harness", "replay", ".", "--trust", "--format", "json"],
            cwd=captured,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 1 and '"WHD080"' in p.stdout, p.stdout + p.stderr
        assert "dim [7] shrunk from [8], cpu" in p.stdout  # the minimal launch was the one re-run
    finally:
        file.unlink()


def test_a_save_whose_replay_inputs_did_not_change_is_not_replayed_again(
    captured: Path, sup: Supervisor, edit: Any
) -> None:
    edit("y[i] = x[i] * 2.0", "y[i] = x[i] * 3.0")
    first, call = _replay(captured, sup, only_changed=True, cache=True)
    assert call.calls == 1 and [r.rule for r in first.records] == [F.BEHAVIOUR_CHANGED] * 2
    again, call = _replay(captured, sup, only_changed=True, cache=True)
    assert call.calls == 0 and again.cached == 1  # nothing launched
    assert [r.to_dict() for r in again.records] == [r.to_dict() for r in first.records]
    assert [c.to_dict() for c in again.failures] == [c.to_dict() for c in first.failures]
    edit("y[i] = x[i] * 3.0", "y[i] = x[i] * 4.0")  # an edit: replayed
    edited, call = _replay(captured, sup, only_changed=True, cache=True)
    assert call.calls == 1 and "now 4.0" in edited.records[0].message
    # a planted entry (altered, or another's signature) is ignored: the replay runs
    folder = user_state.workspace_state_dir(captured, replay_cache.KIND)
    (entry,) = [
        f
        for f in folder.glob("*.json")
        if json.loads(f.read_text())["records"][0]["message"].find("now 4.0") >= 0
    ]
    data = json.loads(entry.read_text())
    data["records"] = []
    entry.write_text(json.dumps(data))
    planted, call = _replay(captured, sup, only_changed=True, cache=True)
    assert call.calls == 1 and planted.records and planted.cached == 0
    data = json.loads(entry.read_text())
    data["tag"] = "0" * 64
    entry.write_text(json.dumps(data))
    _, call = _replay(captured, sup, only_changed=True, cache=True)
    assert call.calls == 1
    # nothing the workspace ships is a cache: a copy under .warp-harness/ is never read
    shipped = captured / ".warp-harness" / "replay"
    shipped.mkdir(parents=True, exist_ok=True)
    shutil.copy(entry, shipped / entry.name)
    shutil.rmtree(folder)
    _, call = _replay(captured, sup, only_changed=True, cache=True)
    assert call.calls == 1
    shutil.rmtree(shipped)


def test_the_daemon_saves_use_the_cache(
    captured: Path, sup: Supervisor, edit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the engine (a save): the second check of the same text sends the worker no replay
    job, and still reports the replay's records and its stored case."""
    from warp_harness.config import Settings
    from warp_harness.daemon.engine import Engine

    kinds: list[str] = []
    real = sup._call

    def counting(msg: dict[str, Any], progress: Any) -> CallOutcome:
        kinds.append(str(msg.get("kind")))
        return real(msg, progress)

    monkeypatch.setattr(sup, "_call", counting)
    engine = Engine(captured, Settings(), FAST, True, supervisor=sup, warmup=False, record_history=False)
    edit("y[i] = x[i] * 2.0", "y[i] = x[i] * 2.5")
    first = engine.check(captured / "kernels.py")
    assert kinds.count("replay") >= 1  # the replay, then the shrinker's bisection
    kinds.clear()
    second = engine.check(captured / "kernels.py")
    assert kinds.count("replay") == 0, kinds
    rules = [r.record.rule for r in second.records if r.record.rule.startswith("WHD08")]
    assert rules == [r.record.rule for r in first.records if r.record.rule.startswith("WHD08")]
    assert rules == [F.BEHAVIOUR_CHANGED, F.BEHAVIOUR_CHANGED]
    assert second.repros == first.repros and len(first.repros) == 1  # one minimal case
    for case in first.repros:
        (captured / case).unlink()
