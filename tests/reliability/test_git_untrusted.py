"""`ci --changed-files` in an untrusted workspace runs git, and git reads the workspace's own
.git/config: nothing configured there may run (issue 12, item 5).

The real CLI (`python -m warp_harness ci WS --changed-files`, no --trust) on a real repository whose
config names commands that leave a marker file when git runs them: the fsmonitor hook, a clean
filter (a `.gitattributes` in the workspace selects it), a hook (`post-index-change`, run when git
rewrites the index), an external diff and a textconv driver; and a partial clone whose remote's
`uploadpack` command would run to fetch missing objects. git still reports the changed files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

# WH001 (a parameter without annotation): every file checked shows up in the report
KERNEL = """import warp as wp


@wp.kernel
def scale(x, a: float):
    i = wp.tid()
    x[i] = x[i] * a
"""


# for the test's own git commands once the hostile config is in place
QUIET = ("-c", "core.fsmonitor=", "-c", "filter.evil.clean=cat", "-c", "core.hooksPath=/dev/null")


def git(ws: Path, *args: str) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(ws.parent))  # no user config of ours
    done = subprocess.run(["git", *args], cwd=ws, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def marker_command(markers: Path, name: str, then: str = "") -> str:
    """A shell command that leaves ``markers/name`` (and then runs ``then``)."""
    return f"touch {markers / name}; {then}".strip()


def hostile_repository(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, markers): a committed repository, then a config that names marker commands,
    a modified file, a touched-but-unchanged file (its content must be compared: clean filter)
    and an untracked one."""
    ws, markers = tmp_path / "ws", tmp_path / "markers"
    ws.mkdir()
    markers.mkdir()
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "t")
    (ws / "modified.py").write_text(KERNEL)
    (ws / "touched.py").write_text(KERNEL)
    (ws / "gone.py").write_text(KERNEL)
    (ws / "same.py").write_text(KERNEL)
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "one")
    # what a hostile workspace ships: its .git/config, attributes, hooks
    hook = ws / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\n{marker_command(markers, 'hook')}\n")
    hook.chmod(0o755)
    fsmonitor = ws / ".git" / "fsmonitor.sh"
    fsmonitor.write_text(f"#!/bin/sh\n{marker_command(markers, 'fsmonitor')}\nexit 1\n")
    fsmonitor.chmod(0o755)
    (ws / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    for key, value in (
        ("core.fsmonitor", str(fsmonitor)),
        ("filter.evil.clean", marker_command(markers, "clean", "cat")),
        ("filter.evil.smudge", marker_command(markers, "smudge", "cat")),
        ("filter.evil.required", "true"),
        ("diff.evil.textconv", marker_command(markers, "textconv", "cat")),
        ("diff.external", str(fsmonitor)),
        ("core.pager", marker_command(markers, "pager", "cat")),
    ):
        git(ws, "config", key, value)
    (ws / "modified.py").write_text(KERNEL + "\n# changed\n")
    (ws / "gone.py").unlink()
    (ws / "untracked.py").write_text(KERNEL)
    make_stale(ws)
    return ws, markers


def make_stale(ws: Path) -> None:
    """touched.py stat-dirty with the same content; every entry "racily clean" (the index older
    than the files it records): git compares such files by content, through the clean filter."""
    os.utime(ws / "touched.py", (1_000_000_000, 1_000_000_000))
    os.utime(ws / ".git" / "index", (1_000_000, 1_000_000))


def run_ci(ws: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", "ci", str(ws), "--changed-files", "--format", "json", *extra],
        cwd=ws.parent,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def reported(done: subprocess.CompletedProcess[str]) -> set[str]:
    return {Path(entry["path"]).name for entry in json.loads(done.stdout)["results"]}


def test_changed_files_in_an_untrusted_repository_runs_nothing_from_its_config(tmp_path: Path) -> None:
    ws, markers = hostile_repository(tmp_path)
    # the set-up is live: plain git in this repository runs what its config names
    git(ws, "diff", "--name-only", "HEAD")
    assert {"fsmonitor", "clean"} <= {p.name for p in markers.iterdir()}, "the hostile config is not live"
    for p in markers.iterdir():
        p.unlink()
    make_stale(ws)
    git_index = ws / ".git" / "index"
    index_before = git_index.read_bytes()

    done = run_ci(ws)
    assert done.returncode == 1, done.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    # the changed files are still found (a touched file with the same content may count too)
    assert {"modified.py", "untracked.py"} <= reported(done) <= {"modified.py", "untracked.py", "touched.py"}
    # nor does it rewrite the untrusted repository's index
    assert git_index.read_bytes() == index_before


def test_changed_files_against_a_base_runs_nothing_from_the_config(tmp_path: Path) -> None:
    ws, markers = hostile_repository(tmp_path)
    git(ws, *QUIET, "checkout", "-q", "-b", "topic")
    (ws / "committed.py").write_text(KERNEL)
    git(ws, *QUIET, "add", "committed.py")
    git(ws, *QUIET, "commit", "-q", "-m", "two")
    make_stale(ws)
    for p in markers.iterdir():
        p.unlink()
    done = run_ci(ws, "--base", "main")
    assert done.returncode == 1, done.stderr
    assert sorted(p.name for p in markers.iterdir()) == []
    assert {"committed.py", "modified.py", "untracked.py"} <= reported(done)


def test_a_file_name_git_would_quote_is_still_reported(tmp_path: Path) -> None:
    ws, _ = hostile_repository(tmp_path)
    (ws / "café kernels.py").write_text(KERNEL)
    done = run_ci(ws)
    assert done.returncode == 1, done.stderr
    assert "café kernels.py" in reported(done)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the repository to another user")
def test_a_repository_of_another_user_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    """git's own safe.directory check stays on: another user's repository (its config) is not read."""
    ws, markers = hostile_repository(tmp_path)
    for p in [ws, *ws.rglob("*")]:
        os.lchown(p, 65534, 65534)
    done = run_ci(ws)
    assert done.returncode == 2
    assert "dubious ownership" in done.stderr and done.stderr.count("\n") <= 2, done.stderr
    assert sorted(p.name for p in markers.iterdir()) == []


def test_a_trusted_repository_is_listed_with_its_own_config(tmp_path: Path) -> None:
    """`trusted=True` (the caller vouches for the workspace): git runs as configured (porcelain
    `git diff`, its filters), and lists the same changes."""
    from warp_harness.daemon.ci import changed_files

    ws, markers = hostile_repository(tmp_path)
    names = {p.name for p in changed_files(ws, trusted=True)}
    assert names == {"modified.py", "untracked.py"}
    assert "fsmonitor" in {p.name for p in markers.iterdir()}
    untrusted = {p.name for p in changed_files(ws)}
    assert {"modified.py", "untracked.py"} <= untrusted <= {"modified.py", "untracked.py", "touched.py"}


def test_a_partial_clone_fetches_nothing_through_its_configured_upload_pack(tmp_path: Path) -> None:
    """A partial clone fetches missing objects on demand, through the remote its config names and
    the command `remote.*.uploadpack` names: untrusted, git may not fetch; the missing trees end
    in a one-line error instead."""
    src, markers = tmp_path / "src", tmp_path / "markers"
    src.mkdir()
    markers.mkdir()
    git(src, "init", "-q", "-b", "main")
    git(src, "config", "uploadpack.allowFilter", "true")
    for name, branch in (("one.py", None), ("two.py", "topic")):
        if branch:
            git(src, "checkout", "-q", "-b", branch)
        (src / name).write_text(KERNEL)
        git(src, "add", name)
        git(src, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", name)
    # the clone has the trees of what it checked out (topic) only
    git(tmp_path, "clone", "-q", "--filter=tree:0", "--no-local", src.as_uri(), "ws")
    ws = tmp_path / "ws"
    git(ws, "config", "remote.origin.uploadpack", f"{marker_command(markers, 'upload-pack')} git-upload-pack")
    done = run_ci(ws, "--base", "origin/main")
    assert sorted(p.name for p in markers.iterdir()) == []
    assert done.returncode == 2
    # GIT_NO_LAZY_FETCH (git 2.39.4+) says "could not fetch"; GIT_ALLOW_PROTOCOL alone, "not allowed"
    assert re.search("could not fetch|transport .* not allowed", done.stderr), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
