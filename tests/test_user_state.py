"""warp_harness.user_state: the private folder and the per-user tag that workspace data cannot forge."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from warp_harness import user_state


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(user_state.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_workspace_state_dir_is_private_and_per_workspace(root: Path, tmp_path: Path) -> None:
    a = user_state.workspace_state_dir(tmp_path / "a", "kernels")
    b = user_state.workspace_state_dir(tmp_path / "b", "kernels")
    assert a != b and a.is_relative_to(root) and b.is_relative_to(root)
    for folder in (root, a, a.parent, b):
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    # the same workspace through another spelling of its path: the same folder
    (tmp_path / "a").mkdir()
    assert user_state.workspace_state_dir(tmp_path / "x" / ".." / "a", "kernels") == a


def test_a_link_or_a_shared_folder_is_refused(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root.parent.mkdir(parents=True, exist_ok=True)
    root.symlink_to(elsewhere)
    with pytest.raises(user_state.StateUnusable, match="not a folder"):
        user_state.workspace_state_dir(tmp_path / "w", "results")
    root.unlink()
    root.mkdir(mode=0o700)
    os.chmod(root, 0o777)
    with pytest.raises(user_state.StateUnusable, match="writable by other users"):
        user_state.workspace_state_dir(tmp_path / "w", "results")


def test_sign_and_verify(root: Path) -> None:
    tag = user_state.sign(b"baseline", purpose="capture")
    assert user_state.verify(b"baseline", tag, purpose="capture")
    assert not user_state.verify(b"baseline!", tag, purpose="capture")
    assert not user_state.verify(b"baseline", tag, purpose="result")
    secret = root / user_state.SECRET_NAME
    assert stat.S_IMODE(os.lstat(secret).st_mode) == 0o600
    # another secret (another user, another machine): the old tag no longer verifies
    secret.unlink()
    assert not user_state.verify(b"baseline", tag, purpose="capture")


def test_a_readable_secret_is_refused(root: Path) -> None:
    user_state.sign(b"x", purpose="p")
    os.chmod(root / user_state.SECRET_NAME, 0o644)
    with pytest.raises(user_state.StateUnusable, match="not a private file"):
        user_state.sign(b"x", purpose="p")
