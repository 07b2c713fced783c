"""Folders under a shared temporary folder (issue #30, items 4 and 10): created private, checked,
and replaced by a fresh unpredictable folder, recorded in the user's private cache folder, when
another user (uid 65534, as root: ``chown``) or a link holds the predictable name."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from warp_harness.daemon import private_temp
from warp_harness.daemon.private_temp import FolderUnusable, check_private, private_temp_dir

NOBODY = 65534
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shared temporary folder (sticky, world-writable: like /tmp) and a fresh private cache."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("WARP_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    return shared


def _squat(folder: Path, mode: int = 0o777) -> Path:
    folder.mkdir()
    folder.chmod(mode)
    os.chown(folder, NOBODY, NOBODY)
    return folder


def _private(path: Path) -> bool:
    st = os.lstat(path)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def test_a_free_name_is_created_private(base: Path) -> None:
    made = private_temp_dir("wh-x", base)
    assert made == base / "wh-x" and _private(made)
    assert private_temp_dir("wh-x", base) == made
    # a folder of ours others could read is closed; one they could write is not taken
    made.chmod(0o755)
    assert private_temp_dir("wh-x", base) == made and _private(made)
    made.chmod(0o777)
    other = private_temp_dir("wh-x", base)
    assert other != made and _private(other)


@needs_root
def test_a_name_another_user_took_is_replaced_and_the_replacement_recorded(base: Path) -> None:
    squat = _squat(base / "wh-x")
    made = private_temp_dir("wh-x", base)
    assert made.parent == base and made.name.startswith("wh-x-") and _private(made)
    assert list(squat.iterdir()) == []  # nothing of ours goes into their folder
    assert private_temp_dir("wh-x", base) == made  # every later caller finds the same one
    # the replacement went (a reboot cleans /tmp): a new one, recorded again
    made.rmdir()
    again = private_temp_dir("wh-x", base)
    assert again != made and _private(again) and private_temp_dir("wh-x", base) == again
    # the recorded name taken by the other user meanwhile: not used
    again.rmdir()
    _squat(again, 0o700)
    third = private_temp_dir("wh-x", base)
    assert third not in (again, squat) and _private(third)


@needs_root
def test_a_link_or_a_file_at_the_name_is_not_followed(base: Path, tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o700)
    (base / "wh-link").symlink_to(ours)
    made = private_temp_dir("wh-link", base)
    assert made != base / "wh-link" and made.name.startswith("wh-link-") and _private(made)
    (base / "wh-file").write_text("")
    assert private_temp_dir("wh-file", base).name.startswith("wh-file-")
    with pytest.raises(FolderUnusable, match="not a folder"):
        check_private(base / "wh-link")


@needs_root
def test_without_a_private_cache_folder_the_reason_is_given(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _squat(base / "wh-x")
    theirs = _squat(tmp_path / "their-cache", 0o755)
    monkeypatch.setenv("WARP_HARNESS_CACHE_DIR", str(theirs))
    with pytest.raises(FolderUnusable, match=r"belongs to uid 65534.*no replacement can be recorded"):
        private_temp_dir("wh-x", base)
    assert isinstance(FolderUnusable("x"), PermissionError)  # callers' `except PermissionError`


@needs_root
def test_processes_started_at_once_agree_on_one_replacement(base: Path, tmp_path: Path) -> None:
    _squat(base / "wh-race")
    code = (
        "import sys; from pathlib import Path; from warp_harness.daemon import private_temp; "
        "print(private_temp.private_temp_dir('wh-race', Path(sys.argv[1])))"
    )
    env = {**os.environ, "WARP_HARNESS_CACHE_DIR": str(tmp_path / "cache")}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(base)], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(8)
    ]
    answers = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(answers) == 1, answers
    made = Path(answers.pop())
    assert _private(made) and sorted(p.name for p in base.iterdir()) == ["wh-race", made.name]
    assert private_temp.private_temp_dir("wh-race", base) == made
