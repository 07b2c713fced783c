"""The ``ray`` executor on a real local Ray cluster (a head that runs nothing and one worker node
of one CPU, on 127.0.0.1; tests/daemon/ray_cluster.py), shared by the tests of this module.

- ``ci`` over examples/contracts gives the records a local run gives, from one job per kernel;
  ``replay`` of the cases it stored gives the local verdicts in the same order;
- a CUDA job on this CPU-only cluster is not submitted: WHD070 at once, the CPU jobs kept;
- the runners of a node share its kernel cache: a fresh runner finds another's build;
- a worker killed mid-job is retried once; killed again, the job is an infrastructure failure
  (WHD070), never cached, and the job that finished before it keeps its verdict;
- an untrusted workspace executes nothing, on the cluster or anywhere;
- ``bench`` and ``tune`` run their jobs there too.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("ray")

from daemon_helpers import EXAMPLES, driven_ray_cluster, write
from ray_cluster import LocalRayCluster

from warp_harness.config import load_settings
from warp_harness.daemon import findings as F
from warp_harness.daemon import ray_executor, replay_stored, repros
from warp_harness.daemon.benchcmd import run_bench
from warp_harness.daemon.cache import result_key
from warp_harness.daemon.ci import run_ci
from warp_harness.daemon.engine import Engine
from warp_harness.daemon.executor import ExecutorChoice
from warp_harness.daemon.options import load_runtime_options
from warp_harness.daemon.pipeline import DEFAULT_STEPS
from warp_harness.daemon.ray_executor import RayExecutor
from warp_harness.daemon.supervisor import Supervisor
from warp_harness.daemon.tune import run_tune

# private builds: the local run is compared record for record with the cluster's, whose nodes build afresh
pytestmark = [pytest.mark.slow, pytest.mark.private_kernel_builds]

PYPROJECT = (
    "[tool.warp-harness]\n[tool.warp-harness.runtime]\n"
    "bench = false\nseed = 1234\nlaunch_timeout_s = 2.0\ntimeout_s = 120.0\n"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    with driven_ray_cluster() as local:
        yield local


def _records(outcome: Any) -> str:
    """The records as JSON (a NaN `actual` is equal to itself there, not in a dict)."""
    return json.dumps([(r.path, [rec.to_dict() for rec in r.records]) for r in outcome.results])


def _json(records: list[Any]) -> str:
    return json.dumps([r.to_dict() for r in records])


def _files(outcome: Any) -> str:
    drop = ("timings", "elapsed_ms")
    return json.dumps([{k: v for k, v in f.items() if k not in drop} for f in outcome.files])


class _Recorded(RayExecutor):
    """The executor ``run_ci`` makes, kept for its job list."""

    made: ClassVar[list[RayExecutor]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _Recorded.made.append(self)


def test_ci_over_the_example_contracts_gives_the_local_records(
    cluster: LocalRayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for example in EXAMPLES.glob("*.py"):
        shutil.copy(example, tmp_path / example.name)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    local = run_ci([tmp_path], trust=True, workspace=tmp_path)
    shutil.rmtree(tmp_path / ".warp-harness")  # nothing the local run stored helps the remote one
    monkeypatch.setattr(ray_executor, "RayExecutor", _Recorded)
    _Recorded.made.clear()
    remote = run_ci(
        [tmp_path], trust=True, workspace=tmp_path, executor=ExecutorChoice("ray", cluster.address)
    )
    assert _records(remote) == _records(local)
    assert _files(remote) == _files(local)
    assert remote.dynamic_files == local.dynamic_files and len(local.dynamic_files) >= 10
    assert remote.errors == local.errors > 0  # the examples' bugs were found on the cluster too
    assert sorted(remote.repros) == sorted(local.repros) and remote.repros
    assert all((tmp_path / r).is_file() for r in remote.repros)  # stored by the driver, here
    # the jobs were one per kernel: a module of several kernels was several jobs, one kernel each
    [executor] = _Recorded.made
    jobs = [(path, kernel) for path, kind, kernel, _ in executor.jobs if kind == "check"]
    # (None: the job of the first kernel, which also owns any kernel the source does not show)
    assert sorted((k for p, k in jobs if p == "stream_large.py"), key=lambda k: k or "") == [
        None,
        "copy_vec4",
        "saxpy_large",
    ]
    assert sorted((k for p, k in jobs if p == "oob_crash.py"), key=lambda k: k or "") == [None, "copy"]
    assert [k for p, k in jobs if p == "saxpy.py"] == [None]
    assert len(jobs) == len(remote.dynamic_files) + 3
    # replay: the stored cases re-run on the cluster (side by side as slots allow) give the
    # local verdicts, in the same order
    stored = repros.load_cases(tmp_path).cases
    options = load_runtime_options(tmp_path)
    with Supervisor(tmp_path, options, warmup=False) as sup:
        serial = [sup.run_case(c.case) for c in stored]
    with RayExecutor(tmp_path, options, address=cluster.address) as executor:
        replayed = replay_stored.replay(executor, stored)
        assert [(p, k) for p, kind, k, _ in executor.jobs] == [
            (c.case["path"], c.case["kernel"]) for c in stored
        ]
    assert [(s, _json(r)) for s, r in replayed] == [(s, _json(r)) for s, r in serial]
    assert len(stored) >= 3 and any(s != "pass" for s, _ in serial)


def test_a_cuda_job_on_a_cluster_without_gpus_fails_at_once(cluster: LocalRayCluster, tmp_path: Path) -> None:
    """No GPU in the cluster: the CUDA jobs are not submitted (they would wait for a GPU until
    their timeout) and end as one WHD070 for the device; the module's CPU jobs still run."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT + 'devices = ["cpu", "cuda"]\n')
    target = Path(shutil.copy(EXAMPLES / "stream_large.py", tmp_path / "stream_large.py"))
    options = load_runtime_options(tmp_path)
    with RayExecutor(tmp_path, options, address=cluster.address) as executor:
        result = executor.check(target, display_path="stream_large.py")
        cuda_only = executor.check(
            target, display_path="stream_large.py", options=options.merged({"devices": ["cuda"]})
        )
        submitted = list(executor.jobs)
    # only the three kernels' CPU jobs reached the cluster
    expected = [("stream_large.py", "check", k, "cpu") for k in (None, "copy_vec4", "saxpy_large")]
    assert sorted(submitted, key=str) == sorted(expected, key=str)  # in whichever order they started
    assert result.status == cuda_only.status == "infrastructure" and not result.cacheable
    assert {n: s["validate"] for n, s in result.kernels.items()} == {  # the CPU jobs' verdicts are kept
        "copy_f32": {"cpu": "pass"},
        "copy_vec4": {"cpu": "pass"},
        "saxpy_large": {"cpu": "pass"},
    }
    infra = [r for r in result.records if r.rule == F.INFRASTRUCTURE]
    assert len(infra) == 1 and "no GPU" in infra[0].message and "on cuda" in infra[0].message
    assert [r.rule for r in cuda_only.records] == [F.INFRASTRUCTURE]
    assert "no GPU" in cuda_only.records[0].message


def test_runners_on_one_node_share_its_kernel_cache(cluster: LocalRayCluster, tmp_path: Path) -> None:
    """A runner that never saw the module finds the build another runner of the node made."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    # a kernel no other test builds (Warp hashes the kernel's own text, comments included)
    unique = SAXPY.replace("    i = wp.tid()\n", f"    i = wp.tid()  # {tmp_path.name} {time.time()}\n")
    assert unique != SAXPY
    target = write(tmp_path, "shared_build.py", unique)
    options = load_runtime_options(tmp_path)
    states = []
    for _ in range(2):  # a fresh executor: fresh runner processes
        with RayExecutor(tmp_path, options, address=cluster.address) as executor:
            result = executor.check(target, display_path="shared_build.py")
        assert result.kernels["saxpy"]["validate"] == {"cpu": "pass"}
        states.append(result.kernels["saxpy"]["compile"])
    assert states == [{"cpu": "compiled"}, {"cpu": "cached"}]
    node_cache = cluster.tmp / f"warp-harness-ray-{os.getuid()}" / "kernels"
    assert (node_cache.stat().st_mode & 0o777) == 0o700 and any(node_cache.iterdir())


# imports `import_count` times and sleeps in the imports up to `sleeps`, after writing its
# process id and its parent's (the Ray worker that hosts the job's Supervisor)
KILLABLE = """
import os, pathlib, time

_marks = pathlib.Path({marks!r})
_marks.mkdir(exist_ok=True)
(_marks / f"{{os.getpid()}}.tmp").write_text(str(os.getppid()))
os.replace(_marks / f"{{os.getpid()}}.tmp", _marks / f"{{os.getpid()}}.pid")
if len(list(_marks.glob("*.pid"))) <= {sleeps}:
    time.sleep(90)

import warp as wp

wp.config.verbose = False  # a top-level Warp setting: the module is imported (not built from its text)
"""
SAXPY = (EXAMPLES / "saxpy.py").read_text().split('"""', 2)[2]  # without its docstring


def _kill_next_job(marks: Path, seen: set[str], timeout_s: float = 60.0) -> None:
    """Wait for the next import to announce itself; SIGKILL the Ray worker hosting it (and the
    orphaned worker subprocess)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        new = [p for p in marks.glob("*.pid") if p.name not in seen]
        if new:
            pid = int(new[0].stem)
            ray_worker = int(new[0].read_text())
            seen.add(new[0].name)
            cmdline = Path(f"/proc/{ray_worker}/cmdline").read_bytes()
            assert b"ray::" in cmdline or b"default_worker" in cmdline, cmdline
            os.kill(ray_worker, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.05)
    raise AssertionError("the job never started")


def _engine(workspace: Path, executor: RayExecutor) -> Engine:
    options = load_runtime_options(workspace)
    return Engine(
        workspace,
        load_settings(workspace),
        options,
        True,
        warmup=False,
        record_history=False,
        supervisor=executor,
    )


def test_a_worker_killed_mid_job_is_retried_once(cluster: LocalRayCluster, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    marks = tmp_path.parent / f"{tmp_path.name}-marks"
    target = write(tmp_path, "killed_once.py", KILLABLE.format(marks=str(marks), sleeps=1) + SAXPY)
    executor = RayExecutor(tmp_path, load_runtime_options(tmp_path), address=cluster.address)
    engine = _engine(tmp_path, executor)
    killer = threading.Thread(target=_kill_next_job, args=(marks, set()))
    killer.start()
    try:
        report = engine.check(target, force=True)
    finally:
        killer.join()
        engine.close()
    assert executor.retries == 1 and executor.failures == 0
    assert report.status == "ok"
    assert report.kernels["saxpy"]["validate"] == {"cpu": "pass"}
    assert not [r for r in report.dynamic() if r.rule == F.INFRASTRUCTURE]
    key = result_key(load_runtime_options(tmp_path).to_dict(), DEFAULT_STEPS)
    assert engine.cache.lookup(target, key) is not None  # the retry's verdict is the code's


def test_a_job_lost_twice_is_an_infrastructure_failure_and_the_rest_is_kept(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    marks = tmp_path.parent / f"{tmp_path.name}-marks"
    lost = write(tmp_path, "a_lost.py", KILLABLE.format(marks=str(marks), sleeps=2) + SAXPY)
    shutil.copy(EXAMPLES / "saxpy.py", tmp_path / "b_saxpy.py")
    seen: set[str] = set()

    def kill_twice() -> None:
        _kill_next_job(marks, seen)
        _kill_next_job(marks, seen)

    killer = threading.Thread(target=kill_twice)
    killer.start()
    try:
        outcome = run_ci(
            [tmp_path], trust=True, workspace=tmp_path, executor=ExecutorChoice("ray", cluster.address)
        )
    finally:
        killer.join()
    by_path = {f["path"].rsplit("/", 1)[-1]: f for f in outcome.files}
    assert by_path["a_lost.py"]["status"] == "infrastructure"
    records = {r.path.rsplit("/", 1)[-1]: r.records for r in outcome.results}
    infra = [r for r in records["a_lost.py"] if r.rule == F.INFRASTRUCTURE]
    assert len(infra) == 1 and "tried twice" in infra[0].message
    assert not any(r.rule in (F.MISMATCH, F.CRASH, F.VALIDATED) for r in records["a_lost.py"])  # no verdict
    assert by_path["b_saxpy.py"]["status"] == "ok"  # the job after it still ran, on a fresh worker
    assert by_path["b_saxpy.py"]["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}
    engine = Engine(tmp_path, load_settings(tmp_path), load_runtime_options(tmp_path), False)
    key = result_key(load_runtime_options(tmp_path).to_dict(), DEFAULT_STEPS)
    assert engine.cache.lookup(lost, key) is None  # never cached: the next run tries again
    assert engine.cache.lookup(tmp_path / "b_saxpy.py", key) is not None
    engine.close()


def test_an_untrusted_workspace_executes_nothing_on_the_cluster(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    marker = tmp_path.parent / f"{tmp_path.name}-imported"
    write(
        tmp_path,
        "loud.py",
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n" + SAXPY,
    )
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    remote = run_ci(
        [tmp_path], trust=False, workspace=tmp_path, executor=ExecutorChoice("ray", cluster.address)
    )
    local = run_ci([tmp_path], trust=False, workspace=tmp_path)
    assert not marker.exists()
    assert _records(remote) == _records(local) and _files(remote) == _files(local)
    assert remote.files[0]["status"] == "untrusted" and not remote.dynamic_files


def test_bench_and_tune_run_their_jobs_on_the_cluster(cluster: LocalRayCluster, tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "tune_chunks.py", tmp_path / "tune_chunks.py")
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\n")
    quick = {"bench_repeats": 5, "bench_max_time_s": 0.05, "seed": 1234}
    choice = ExecutorChoice("ray", cluster.address)
    kernel, rows = run_tune(tmp_path / "tune_chunks.py", trust=True, runtime_overrides=quick, executor=choice)
    assert kernel == "scale_chunks" and [r.config["ITEMS"] for r in rows] == [1, 2, 4, 8]
    assert all(r.status == "timed" and (r.median_s or 0) > 0 for r in rows), rows
    assert not list(tmp_path.glob("_wh_tune_*"))  # the candidates' files are gone again
    outcome = run_bench([tmp_path], trust=True, runtime_overrides=quick, executor=choice)
    assert [(r.kernel, r.device, r.status) for r in outcome.rows] == [("scale_chunks", "cpu", "timed")]
    assert outcome.ok and not outcome.problems


# ---------------------------------------------------------------- issue #30, items 4 and 12
NOBODY = 65534
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")


def _swap_as_nobody(root: Path, module: str, text: str) -> int:
    """As uid 65534 (a forked child, which opens ``root`` before it drops its privileges): every
    runner folder in ``root`` moved aside and replaced by one whose workspace holds ``text`` as
    ``module``. How many were swapped (the child's exit status; 100+: it failed)."""
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    pid = os.fork()
    if pid == 0:
        code = 100
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = 0
            for name in os.listdir(dir_fd):
                if not name.split("-", 1)[0].isdigit():
                    continue
                os.rename(name, name + ".old", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                os.mkdir(name, dir_fd=dir_fd)
                runner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=dir_fd)
                os.mkdir("workspace", dir_fd=runner)
                workspace = os.open("workspace", os.O_RDONLY | os.O_DIRECTORY, dir_fd=runner)
                fd = os.open(module, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=workspace)
                os.write(fd, text.encode())
                os.close(fd)
                code += 1
        except BaseException:
            code = 101
        finally:
            os._exit(code)
    os.close(dir_fd)
    _, status = os.waitpid(pid, 0)
    swapped = os.waitstatus_to_exitcode(status)
    assert swapped < 100, f"the child running as uid {NOBODY} failed ({swapped})"
    return swapped


def _victim(tmp_path: Path) -> tuple[Path, Path, str]:
    """A trusted workspace with a secret beside its module, and the attacker's module: the
    victim's with a marker written at import."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    target = write(tmp_path, "victim.py", SAXPY)
    (tmp_path / ".env").write_text("API_TOKEN=do-not-send\n")
    (tmp_path / ".gitignore").write_text("private/\n")
    write(tmp_path / "private", "notes.py", "# ignored: stays home\n")
    marker = tmp_path.parent / f"{tmp_path.name}-attacker-ran"
    evil = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran as the victim')\n" + SAXPY
    return target, marker, evil


def _unpacked(root: Path) -> list[Path]:
    """The runners' unpacked workspaces under ``root`` (a runner folder: ``<pid>-*``)."""
    return [p / "workspace" for p in root.glob("[0-9]*-*") if (p / "workspace").is_dir()]


@needs_root
def test_another_user_squatting_the_runners_folder_cannot_swap_the_workspace(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    """Before: the runner unpacked into the other user's ``warp-harness-ray-<uid>`` and, warm,
    ran the next job from whatever that user had put at its folder's name: their module ran as
    the victim. Now the runner works in a private replacement folder the other user cannot see."""
    root = cluster.tmp / f"warp-harness-ray-{os.getuid()}"
    aside = cluster.tmp / "ours-aside"
    if root.exists():
        root.rename(aside)
    root.mkdir()
    root.chmod(0o777)
    os.chown(root, NOBODY, NOBODY)
    try:
        target, marker, evil = _victim(tmp_path)
        options = load_runtime_options(tmp_path)
        with RayExecutor(tmp_path, options, address=cluster.address) as executor:
            first = executor.check(target, display_path="victim.py")
            swapped = _swap_as_nobody(root, "victim.py", evil)
            second = executor.check(target, display_path="victim.py")
            replacements = list(cluster.tmp.glob(f"warp-harness-ray-{os.getuid()}-*"))
            unpacked = [w for r in replacements for w in _unpacked(r)]
            shipped = sorted(
                p.relative_to(w).as_posix() for w in unpacked for p in w.rglob("*") if p.is_file()
            )
        assert not marker.exists(), "the other user's module ran as the victim"
        assert swapped == 0 and list(root.iterdir()) == []  # nothing of ours in their folder
        [replacement] = replacements
        assert len(unpacked) == 1
        assert first.kernels["saxpy"]["validate"] == second.kernels["saxpy"]["validate"] == {"cpu": "pass"}
        st = os.lstat(replacement)
        assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
        # item 12 on the node: the secret and what .gitignore names did not travel
        assert "victim.py" in shipped and "pyproject.toml" in shipped
        assert not [n for n in shipped if n.startswith((".", "private/"))], shipped
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if aside.exists():
            aside.rename(root)


def test_a_warm_runner_runs_no_snapshot_changed_since_it_was_unpacked(
    cluster: LocalRayCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before every job the runner checks the unpacked snapshot against the digests it was
    unpacked with (and its folders: private, no link); a changed file means a fresh unpack, so
    a warm runner never runs code the driver did not send."""
    target, marker, evil = _victim(tmp_path)
    root = ray_executor.private_temp_dir(f"warp-harness-ray-{os.getuid()}", cluster.tmp)
    options = load_runtime_options(tmp_path)
    with RayExecutor(tmp_path, options, address=cluster.address) as executor:
        first = executor.check(target, display_path="victim.py")
        [unpacked] = [w for w in _unpacked(root) if (w / "victim.py").read_text() == target.read_text()]
        (unpacked / "victim.py").write_text(evil)  # changed behind the runner's back
        second = executor.check(target, display_path="victim.py")
        after = _unpacked(root)
    assert not marker.exists(), "the warm runner ran a changed file"
    assert first.kernels["saxpy"]["validate"] == second.kernels["saxpy"]["validate"] == {"cpu": "pass"}
    assert unpacked not in after  # unpacked afresh; the tampered folder is gone
    # the driver said what it sent, once (one snapshot): victim.py and pyproject.toml
    sent = [
        line for line in capsys.readouterr().err.splitlines() if "snapshot sent to the Ray cluster" in line
    ]
    assert len(sent) == 1 and ": 2 files, " in sent[0], sent
    assert "left out: 2 hidden, 1 ignored" in sent[0], sent  # .env, .gitignore; private/
