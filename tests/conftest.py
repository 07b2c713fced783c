from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
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
# its own tmp folder), and Warp's own kernel cache for kernels built in the test process (the user's,
# as outside the tests: Warp builds into a folder of its process and renames it into place, so two
# workers building one kernel leave one complete build, and a kernel compiled by one test is loaded,
# not rebuilt, by every later test of the session and by the next run). The daemon's workers build into
# their workspace's own cache (.warp-harness/kernels), as the tests of that cache expect.
_CACHE_HOME = tempfile.mkdtemp(prefix="wh-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
atexit.register(shutil.rmtree, _CACHE_HOME, True)

# CI explores the same examples every run (seeded from each test's name), so a red CI means a
# change broke something, not that this run drew a new input; local runs keep exploring.
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
# No per-example deadline: the suite runs one test per core beside real servers, daemons and compiles
# (pytest-xdist), so an example's time says how busy the machine is, not how fast the code is.
settings.register_profile("suite", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "suite")


@pytest.fixture
def analyse() -> Analyse:
    """``analyse(source, select=["WH003"], target="sm_86")`` -> records of the static tier."""

    def run(source: str, path: str = "kernel.py", **overrides: Any) -> list[Record]:
        return analyse_source(source, path, overrides=overrides or None).records

    return run


# fixture scopes wider than one test
_SHARED_SCOPES = ("session", "package", "module", "class")
_TESTS = Path(__file__).parent


def _shared_fixture_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that uses one of the suite's fixtures wider than a test: the first name
    of its session (or package) fixtures, else its module. Such a fixture is built once per worker that
    runs a test needing it (a module's warm daemon worker, a session's extraction of Warp's builtins);
    its tests on one worker build it once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    session: list[str] = []
    module = False
    for name in item.fixturenames:  # type: ignore[attr-defined]
        defs = info.name2fixturedefs.get(name)
        if not defs:
            continue
        fixture = defs[-1]
        source = getattr(fixture.func, "__code__", None)
        if fixture.scope not in _SHARED_SCOPES or source is None:
            continue
        if not Path(source.co_filename).is_relative_to(_TESTS):
            continue  # a plugin's (pytest-asyncio's event loop, ...): cheap, or per worker anyway
        if fixture.scope in ("session", "package"):
            session.append(name)
        else:
            module = True
    if session:  # by the first name: a fixture and those it depends on are one group
        return "session:" + min(session)
    return item.nodeid.split("::", 1)[0] if module else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` (pyproject.toml's addopts) sends tests to the workers one by one, except the
    tests of one xdist group, which run on one worker: every test sharing a wider fixture is grouped
    (`_shared_fixture_group`), unless it names its group itself (``@pytest.mark.xdist_group``)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        group = _shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
