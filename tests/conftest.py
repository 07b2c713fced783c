from __future__ import annotations

import atexit
import json
import os

# every rule runs under the check of the facts it declares (rules/base.py: a read of an undeclared fact
# raises UndeclaredFact); set before warp_harness is imported, inherited by the CLIs the tests start
os.environ["WARP_HARNESS_CHECK_FACTS"] = "1"
# every worker the suite starts (supervisors, daemons, `ci` subprocesses) skips the warm-up compile:
# most of their modules come from the shared build cache (-24% to -37% CPU on the daemon test files)
os.environ["WARP_HARNESS_WORKER_WARMUP"] = "0"
# and compiles without Warp's precompiled header: a short-lived worker pays more to build it than it saves
# (daemon test files -17% CPU; daemon/worker_process.py PRECOMPILED_HEADERS_ENV)
os.environ["WARP_HARNESS_WORKER_PRECOMPILED_HEADERS"] = "0"

import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

from checker_helpers import Analyse, rules_of

from warp_harness.engine import analyse_source
from warp_harness.record import Record

__all__ = ["Analyse", "rules_of"]

# `check`'s result cache lives in the user's cache folder: the tests (and every CLI they start) get
# a fresh one, so a test that changes a rule in-process never reads a result cached by another. This
# module is imported by every pytest-xdist worker: each worker has a folder of its own.
#
# What the workers share, and why that is safe: tmp_path (pytest gives each worker its own base
# folder), the daemons' sockets (one per workspace, named by its resolved path: a test's workspace is
# its own tmp folder), and the kernel builds (below).
_CACHE_HOME = tempfile.mkdtemp(prefix="wh-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
atexit.register(shutil.rmtree, _CACHE_HOME, True)

# Kernel builds, though, are shared by the whole session: the daemons, `ci` runs and workers the tests
# start compile the same modules (examples/contracts alone, in dozens of daemon, ci and docs tests), each
# in a workspace of its own, whose builds the harness keeps apart (daemon/kernel_cache.py). The session
# names one private folder as the node's build cache (WARP_HARNESS_KERNEL_CACHE, made for the Ray
# runners that share a node), and Warp's own cache of the kernels built in the test processes
# (WARP_CACHE_PATH) beside it. Safe to share: a build folder is named by a hash of everything that makes
# the build (Warp's module hash, options, versions, device), and Warp builds into a temporary folder of
# its process and renames it into place, so processes building one kernel at once leave one complete
# build. The first process of the run (the pytest-xdist controller, or a run with `-n 0`) makes the
# folder and removes it at its exit; the workers, started after this module ran there, inherit it.
# A test about where builds go, or that a first build compiles, takes `private_kernel_builds`.
SHARED_BUILDS_ENV = "WARP_HARNESS_TEST_BUILDS"
_shared = os.environ.get(SHARED_BUILDS_ENV, "")
if not (os.path.isabs(_shared) and os.path.isdir(_shared) and os.stat(_shared).st_uid == os.getuid()):
    _shared = tempfile.mkdtemp(prefix="wh-test-builds-")  # 0700
    os.environ[SHARED_BUILDS_ENV] = _shared
    atexit.register(shutil.rmtree, _shared, True)
for _name, _sub in (("WARP_HARNESS_KERNEL_CACHE", "kernels"), ("WARP_CACHE_PATH", "warp")):
    os.makedirs(os.path.join(_shared, _sub), mode=0o700, exist_ok=True)
    os.environ[_name] = os.path.join(_shared, _sub)
NODE_CACHE_ENV = "WARP_HARNESS_KERNEL_CACHE"


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path factory reads the option
def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker's tmp_path under a short folder of its own: under pytest's default
    (/tmp/pytest-of-USER/pytest-N/popen-gwN/) a test's daemon socket path passed the 108 bytes a Unix
    socket's name may have (tests/reliability/test_launchers.py, its runtime folder in tmp_path)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and getattr(config.option, "basetemp", None):
        short = tempfile.mkdtemp(prefix=f"wh-{worker}-")
        config.option.basetemp = short
        atexit.register(shutil.rmtree, short, True)


# the seconds each test file took on one pytest-xdist worker (tests/file_seconds.json: the README's
# command on 2 cores, `--junitxml`, the times of a file's tests added up); a file not listed is given
# UNLISTED_SLOW_TEST_S for each of its slow tests
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")
UNLISTED_SLOW_TEST_S = 5.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (`FILE_SECONDS`), each file's tests in their order (but for a module's
    `TESTS_TOGETHER_BY`, below): pytest-xdist hands whole files (`--dist loadfile`) to idle workers in this
    order, and a long file handed out last kept one worker busy for minutes while the other had nothing
    left to do. `--no-loadscope-reorder` (pyproject.toml)
    keeps this order: xdist's own, the files with the most tests first, started the sm_90 builds of
    test_shared_memory_aot.py (12 tests, the longest file) 19 minutes into a 37-minute run."""
    try:
        listed: dict[str, float] = json.loads(FILE_SECONDS.read_text())
    except (OSError, ValueError):
        listed = {}
    root = Path(__file__).parent.parent
    slow = Counter(item.path for item in items if item.get_closest_marker("slow") is not None)
    first_seen = {path: n for n, path in enumerate(dict.fromkeys(item.path for item in items))}

    def seconds(path: Path) -> float:
        known = listed.get(path.relative_to(root).as_posix()) if path.is_relative_to(root) else None
        return known if known is not None else slow[path] * UNLISTED_SLOW_TEST_S

    expected = {path: seconds(path) for path in first_seen}
    together = _together_ranks(items)
    order = sorted(
        range(len(items)), key=lambda n: (-expected[items[n].path], first_seen[items[n].path], together[n])
    )
    items[:] = [items[n] for n in order]


# A module may name one of its parameters in ``TESTS_TOGETHER_BY``: its tests of one value of that parameter
# then run one after the other (where the value's first test stood), whatever test function they belong
# to. For tests that check one file in a module-scoped daemon or supervisor in several ways: a worker is
# started afresh for each module it checks, and the checks of one file in a row share it.
TOGETHER_BY = "TESTS_TOGETHER_BY"


def _together_ranks(items: list[pytest.Item]) -> list[int]:
    """Each item's place within its file: its own index, or that of the first test of its group."""
    first: dict[tuple[Path, object], int] = {}
    ranks = []
    for n, item in enumerate(items):
        by = getattr(getattr(item, "module", None), TOGETHER_BY, None)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if isinstance(by, str) and by in params:
            ranks.append(first.setdefault((item.path, params[by]), n))
        else:
            ranks.append(n)
    return ranks


# CI explores the same examples every run (seeded from each test's name), so a red CI means a
# change broke something, not that this run drew a new input; local runs keep exploring.
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
# No per-example deadline: the suite runs one test per core beside real servers, daemons and compiles
# (pytest-xdist), so an example's time says how busy the machine is, not how fast the code is.
settings.register_profile("suite", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "suite")


@pytest.fixture(autouse=True, scope="module")
def _private_builds_of_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module marked `private_kernel_builds` (``pytestmark``) runs without the session's shared build
    cache, its module-scoped daemons and workers included (autouse: set up before them)."""
    with _without_shared_builds(request.node.get_closest_marker("private_kernel_builds") is not None):
        yield


@pytest.fixture
def private_kernel_builds() -> Iterator[None]:
    """This test's daemons, `ci` runs and workers build into their workspace's own cache (the user's
    private folder), as outside the tests: for a test of where builds go, or that a first build compiles."""
    with _without_shared_builds(True):
        yield


@contextmanager
def _without_shared_builds(active: bool) -> Iterator[None]:
    saved = os.environ.get(NODE_CACHE_ENV)
    if active:
        os.environ.pop(NODE_CACHE_ENV, None)
    try:
        yield
    finally:
        if active and saved is not None:
            os.environ[NODE_CACHE_ENV] = saved


@pytest.fixture
def analyse() -> Analyse:
    """``analyse(source, select=["WH003"], target="sm_86")`` -> records of the static tier."""

    def run(source: str, path: str = "kernel.py", **overrides: Any) -> list[Record]:
        return analyse_source(source, path, overrides=overrides or None).records

    return run
