"""tests/file_seconds.json orders the test files pytest-xdist hands out (tests/conftest.py): the files it
names exist (a renamed file would silently lose its place among the long ones), and come first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


TOGETHER = "tests/exploits/test_exploits.py"  # names TESTS_TOGETHER_BY (tests/conftest.py)


def _longest() -> list[str]:
    listed = json.loads(FILE_SECONDS.read_text())
    return sorted(listed, key=lambda name: -listed[name])[:3]


@pytest.fixture(scope="module")
def collected() -> tuple[list[str], str]:
    """The test ids of one collection of the three longest files' folders and TOGETHER's (-n 0), and the
    output's tail."""
    folders = sorted({str(Path(name).parent) for name in [*_longest(), TOGETHER]})
    collect = ["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *collect, *folders], capture_output=True, text=True, cwd=ROOT
    )
    return [line for line in done.stdout.splitlines() if "::" in line], done.stdout[-2000:]


def test_the_longest_listed_files_are_collected_first(collected: tuple[list[str], str]) -> None:
    ids, tail = collected
    order = list(dict.fromkeys(line.split("::")[0] for line in ids))
    assert order[:3] == _longest(), tail


def test_a_modules_tests_of_one_parameter_value_are_collected_together(
    collected: tuple[list[str], str],
) -> None:
    """TOGETHER names ``TESTS_TOGETHER_BY = "name"``: each exploit's check built hermetically is followed by
    its check imported (another test function), where the value's first test stood; the file's other tests
    keep their order."""
    ids = [line.split("::", 1)[1] for line in collected[0] if line.startswith(TOGETHER + "::")]
    assert ids, collected[1]
    hermetic = "test_exploit_built_hermetically_gains_nothing[patch_launch]"
    assert ids[ids.index(hermetic) + 1] == "test_exploit_is_caught_with_a_clear_record[patch_launch]"
    assert ids.index("test_exploit_is_caught_with_a_clear_record[inplace_noop]") < ids.index(
        "test_exploit_built_hermetically_gains_nothing[reference_globals]"
    )
    assert ids.index("test_exploit_built_hermetically_gains_nothing[reference_default]") + 1 == ids.index(
        "test_exploits_of_the_text_pass_when_imported[reference_default]"
    )
    plain = [i for i in ids if "[" not in i]
    assert plain[0] == "test_every_example_is_tested" and ids[0] == plain[0]
    assert plain.index("test_the_patch_is_placed_on_its_line") < plain.index(
        "test_patches_do_not_leak_into_the_next_job"
    )
