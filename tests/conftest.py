from __future__ import annotations

import atexit
import os

# every rule runs under the check of the facts it declares (rules/base.py: a read of an undeclared fact
# raises UndeclaredFact); set before warp_harness is imported, inherited by the CLIs the tests start
os.environ["WARP_HARNESS_CHECK_FACTS"] = "1"

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
