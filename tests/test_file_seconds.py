"""tests/file_seconds.json orders the test files pytest-xdist hands out (tests/conftest.py): the files it
names exist (a renamed file would silently lose its place among the long ones), and come first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
# tests/conftest.py's own path to it (not imported from there: the name `conftest` is whichever
# folder's conftest pytest loaded first, tests/server/'s in a full run)
FILE_SECONDS = Path(__file__).with_name("file_seconds.json")


def test_every_listed_file_exists_and_has_a_time() -> None:
    listed = json.loads(FILE_SECONDS.read_text())
    assert listed
    missing = [name for name in listed if not (ROOT / name).is_file()]
    assert missing == []
    assert all(isinstance(s, int | float) and s > 0 for s in listed.values())


def test_the_longest_listed_files_are_collected_first() -> None:
    listed = json.loads(FILE_SECONDS.read_text())
    longest = sorted(listed, key=lambda name: -listed[name])[:3]
    folders = sorted({str(Path(name).parent) for name in longest})
    collect = ["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *collect, *folders], capture_output=True, text=True, cwd=ROOT
    )
    order = list(dict.fromkeys(line.split("::")[0] for line in done.stdout.splitlines() if "::" in line))
    assert order[:3] == longest, done.stdout[-2000:]
