"""The kernel build cache (the user's private cache folder, never the workspace's
.warp-harness/kernels): pruning, the daemon running it at start, and shipped builds ignored."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES, FAST

from warp_harness.daemon import kernel_cache
from warp_harness.daemon import protocol as P
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.server import Daemon, DaemonThread
from warp_harness.daemon.supervisor import Supervisor

DAY = 86400.0
# the tests of where builds go: the workspaces' own caches, not the session's shared one (conftest.py)
pytestmark = pytest.mark.private_kernel_builds


def _build(root: Path, name: str, size: int, age_s: float, now: float) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / f"wp_{name}.o").write_bytes(b"\0" * size)
    (folder / f"wp_{name}.meta").write_text("{}")
    os.utime(folder, (now - age_s, now - age_s))
    return folder


def test_prune_keeps_the_most_recently_used_within_count_and_size(tmp_path: Path) -> None:
    root = kernel_cache.cache_root(tmp_path)
    now = time.time()
    ages = {"a": 1 * DAY, "b": 2 * DAY, "c": 3 * DAY, "d": 4 * DAY, "e": 5 * DAY}
    for name, age in ages.items():
        _build(root, name, 1000, age, now)
    default = root / kernel_cache.WARP_DEFAULT
    default.mkdir()
    os.utime(default, (now - 30 * DAY, now - 30 * DAY))

    report = kernel_cache.prune(tmp_path, keep=3, max_bytes=10**9, now=now)
    assert sorted(p.name for p in root.iterdir()) == ["a", "b", "c", kernel_cache.WARP_DEFAULT]
    assert (report.removed, report.kept) == (2, 3) and report.freed_bytes >= 2000

    # the size limit: the newest that fit
    report = kernel_cache.prune(tmp_path, keep=100, max_bytes=2100, now=now)
    assert sorted(p.name for p in root.iterdir() if p.name != kernel_cache.WARP_DEFAULT) == ["a", "b"]
    assert report.kept_bytes <= 2100


def test_prune_never_removes_a_folder_in_use(tmp_path: Path) -> None:
    root = kernel_cache.cache_root(tmp_path)
    now = time.time()
    _build(root, "old", 10, 10 * DAY, now)
    _build(root, "fresh", 10, 5.0, now)  # another process may be building into it right now
    report = kernel_cache.prune(tmp_path, keep=0, max_bytes=0, now=now)
    assert [p.name for p in root.iterdir()] == ["fresh"] and report.removed == 1


def test_using_a_build_marks_it_recent(tmp_path: Path) -> None:
    root = kernel_cache.cache_root(tmp_path)
    now = time.time()
    old = _build(root, "k" * 64, 10, 10 * DAY, now)
    kernel_cache.folder_for(tmp_path, old.name)  # what the compile stage calls on every lookup
    assert now - old.stat().st_mtime < 60
    assert kernel_cache.prune(tmp_path, keep=0, max_bytes=0).removed == 0


def test_the_limits_are_runtime_options() -> None:
    opts = RuntimeOptions.from_dict({"kernel_cache_keep": 7, "kernel_cache_max_mb": 64, "debounce_ms": 0})
    assert (opts.kernel_cache_keep, opts.kernel_cache_max_mb, opts.debounce_ms) == (7, 64, 0)


def test_the_daemon_prunes_at_start(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    root = kernel_cache.cache_root(ws)
    now = time.time()
    for i in range(6):
        _build(root, f"build{i}", 100, (i + 1) * DAY, now)
    daemon = Daemon(
        ws,
        trust=True,
        runtime_overrides=FAST.merged({"kernel_cache_keep": 2}).to_dict(),
        socket_path=tmp_path / "run" / "d.sock",
        watch=False,
        warmup=False,
        log=lambda s: None,
    )
    with DaemonThread(daemon) as t, P.Client(t.daemon.socket_path, timeout=60) as c:
        deadline = time.monotonic() + 60
        status = c.request("status")
        while status["kernel_cache"] is None and time.monotonic() < deadline:
            time.sleep(0.05)
            status = c.request("status")
        assert status["kernel_cache"]["removed"] == 4 and status["kernel_cache"]["kept"] == 2
    kept = sorted(p.name for p in root.iterdir() if p.name != kernel_cache.WARP_DEFAULT)
    assert kept == ["build0", "build1"]


def test_a_node_cache_is_used_only_when_it_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "node"
    assert kernel_cache.private_folder(mine) == mine and (mine.stat().st_mode & 0o777) == 0o700
    open_to_all = tmp_path / "shared"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert kernel_cache.private_folder(open_to_all) is None
    assert kernel_cache.private_folder(link) is None
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for value, expected in (
        (str(mine), mine / "k"),
        (str(open_to_all), kernel_cache.cache_root(workspace) / "k"),  # refused: the workspace's
        ("relative/path", kernel_cache.cache_root(workspace) / "k"),
    ):
        monkeypatch.setenv(kernel_cache.NODE_CACHE_ENV, value)
        assert kernel_cache.usable_folder(workspace, "k") == expected


SAXPY_SOURCE = (EXAMPLES / "saxpy.py").read_text()


@pytest.mark.slow
def test_a_second_workspace_copy_hits_the_node_cache_the_first_filled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What two Ray runners on one node do: each checks its own copy of the workspace, and the
    second finds the first's build in the node's cache (daemon/ray_executor.py)."""
    node = tmp_path / "node-cache"
    monkeypatch.setenv(kernel_cache.NODE_CACHE_ENV, str(node))  # inherited by the workers
    options = RuntimeOptions(bench=False, seed=3, timeout_s=120.0, verdict_worker=False)
    states = []
    for copy in ("runner-1", "runner-2"):
        workspace = tmp_path / copy
        workspace.mkdir()
        path = workspace / "saxpy.py"  # the node's cache is this test's own: the first build is a miss
        path.write_text(SAXPY_SOURCE)
        with Supervisor(workspace, options, warmup=False) as sup:
            result = sup.check(path)
        states.append(result.kernels["saxpy"]["compile"])
        assert result.kernels["saxpy"]["validate"] == {"cpu": "pass"}
        builds = kernel_cache.cache_root(workspace)
        assert not builds.exists() or not any(builds.iterdir())  # nothing in the copy's own cache
    assert states == [{"cpu": "compiled"}, {"cpu": "cached"}]
    assert any(kernel_cache.has_binary(p) for p in node.iterdir())


def test_the_cache_root_is_probed_once_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe file per build folder cost ~1 ms a miss: the root is probed once, and again when
    it is replaced; a root that cannot be written sends builds to the private folder."""
    monkeypatch.delenv(kernel_cache.NODE_CACHE_ENV, raising=False)
    monkeypatch.setattr(kernel_cache, "_writable_roots", {})
    probed: list[Path] = []
    real = kernel_cache._writable

    def counting(folder: Path) -> bool:
        probed.append(folder)
        return real(folder)

    monkeypatch.setattr(kernel_cache, "_writable", counting)
    root = kernel_cache.cache_root(tmp_path)
    for key in ("a" * 64, "b" * 64, "c" * 64):
        assert kernel_cache.usable_folder(tmp_path, key) == root / key
        assert (root / key).is_dir()
    assert probed == [root]
    # replaced by a file: not a private folder any more, nothing is built under it
    root.rename(root.with_name("kernels-old"))
    root.write_text("not a folder")
    assert kernel_cache.usable_folder(tmp_path, "d" * 64) == kernel_cache.private_root() / ("d" * 64)
    root.unlink()
    # made again (another folder): probed again
    assert kernel_cache.usable_folder(tmp_path, "e" * 64) == root / ("e" * 64)
    assert probed == [root, root]


def _ci(workspace: Path, cache_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    env.pop(kernel_cache.NODE_CACHE_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", "ci", ".", "--trust", "--no-bench"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _the_build(workspace: Path, cache_home: Path) -> Path:
    """The one build folder a `ci` run of ``workspace`` left, wherever the harness keeps it."""
    roots = [workspace / ".warp-harness" / "kernels", *cache_home.glob("warp-harness/workspaces/*/kernels")]
    builds = [p for root in roots if root.is_dir() for p in root.iterdir() if kernel_cache.has_binary(p)]
    assert len(builds) == 1, builds
    return builds[0]


def _names(build: Path) -> tuple[str, str]:
    """(module id ``wp_k_<hash>``, the kernel's mangled name ``saxpy_<hash>``) of a build."""
    (module,) = [p.name for p in build.iterdir() if p.is_dir()]
    source = (build / module / f"{module}.cpp").read_text()
    mangled = re.search(r"saxpy_[0-9a-f]{8}(?=_cpu_kernel_forward)", source)
    assert mangled is not None
    return module, mangled.group(0)


@pytest.mark.slow
def test_a_build_the_repository_ships_is_never_loaded(tmp_path: Path) -> None:
    """Security round 2, finding 1: the build key is computable from public facts, so a
    repository could ship ``.warp-harness/kernels/<key>/`` holding a build of another kernel (any
    native code) under the key of its own source; the worker loaded it instead of compiling, and
    a wrong kernel's ``ci --trust`` passed (exit 0). The shipped folder is ignored now: the source
    is compiled and the wrong kernel caught (exit 1)."""
    right = SAXPY_SOURCE
    wrong = SAXPY_SOURCE.replace("y[i] = a * x[i] + y[i]", "y[i] = a * x[i] - y[i]")
    assert wrong != right
    builds: dict[str, tuple[Path, str, str]] = {}
    for name, source, code in (("right", right, 0), ("wrong", wrong, 1)):
        scratch = tmp_path / name  # the attacker's own machine: the builds and their names
        scratch.mkdir()
        (scratch / "k.py").write_text(source)
        done = _ci(scratch, tmp_path / f"cache-{name}")
        assert done.returncode == code, done.stdout + done.stderr
        build = _the_build(scratch, tmp_path / f"cache-{name}")
        builds[name] = (build, *_names(build))
    good, good_module, good_mangled = builds["right"]
    key, wrong_module, wrong_mangled = builds["wrong"][0].name, *builds["wrong"][1:]
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "k.py").write_text(wrong)
    planted = victim / ".warp-harness" / "kernels" / key / wrong_module
    planted.mkdir(parents=True)
    for file in (good / good_module).iterdir():  # the right kernel's code, renamed to the wrong one's
        data = file.read_bytes().replace(good_mangled.encode(), wrong_mangled.encode())
        data = data.replace(good_module.encode(), wrong_module.encode())
        (planted / file.name.replace(good_module, wrong_module)).write_bytes(data)
    assert kernel_cache.has_binary(planted.parent)

    done = _ci(victim, tmp_path / "cache-victim")
    assert done.returncode == 1, done.stdout + done.stderr  # compiled from the source: caught
    assert "saxpy" in done.stdout and "fail" in done.stdout, done.stdout


def test_a_shipped_kernel_folder_is_neither_used_nor_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The workspace's own ``.warp-harness/kernels`` is never a build folder: builds go to the
    user's private cache; pruning says in one line that the shipped one is ignored, and leaves it."""
    monkeypatch.delenv(kernel_cache.NODE_CACHE_ENV, raising=False)
    shipped = tmp_path / ".warp-harness" / "kernels"
    now = time.time()
    _build(shipped, "a" * 64, 10, 10 * DAY, now)
    assert kernel_cache.usable_folder(tmp_path, "a" * 64) == kernel_cache.cache_root(tmp_path) / ("a" * 64)
    assert not kernel_cache.cache_root(tmp_path).is_relative_to(tmp_path)
    kernel_cache.prune(tmp_path, keep=0, max_bytes=0, now=now)
    assert kernel_cache.has_binary(shipped / ("a" * 64))
    (note,) = [r.getMessage() for r in caplog.records if "kernels is ignored" in r.getMessage()]
    assert str(shipped) in note and "\n" not in note
