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
# a fresh one, so a test that changes a rule in-process never reads a result cached by another
_CACHE_HOME = tempfile.mkdtemp(prefix="wh-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
atexit.register(shutil.rmtree, _CACHE_HOME, True)

# CI explores the same examples every run (seeded from each test's name), so a red CI means a
# change broke something, not that this run drew a new input; local runs keep exploring.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")


@pytest.fixture
def analyse() -> Analyse:
    """``analyse(source, select=["WH003"], target="sm_86")`` -> records of the static tier."""

    def run(source: str, path: str = "kernel.py", **overrides: Any) -> list[Record]:
        return analyse_source(source, path, overrides=overrides or None).records

    return run
