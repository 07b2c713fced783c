"""What travels to a Ray cluster (issue #30, item 12): before, the snapshot sent hidden files
(``.env``, ``.netrc``, ``.pypirc``) and everything ``.gitignore`` names. Now neither travels, in a
git work tree (git's own answer) and outside one (the ``.gitignore`` files, read with git's
rules); and the executor says what it sends (files, bytes) in one line."""

from __future__ import annotations

import io
import subprocess
import zipfile
from pathlib import Path

import pytest

from warp_harness.daemon.ray_executor import _build, build_snapshot, snapshot_line
from warp_harness.daemon.snapshot_files import _GitignoreFiles, select_files

SECRETS = {
    ".env": "AWS_SECRET_ACCESS_KEY=x\n",
    ".netrc": "machine h login u password p\n",
    ".pypirc": "[pypi]\n",
}
GITIGNORE = "# local things\n*.key\n/data/\nlogs/\n!keep.log\nscratch/**/tmp*\n"
EXPECTED = ["data_loader.py", "k.py", "keep.log", "pkg/data/table.csv", "pkg/helpers.py", "scratch/notes.txt"]


def _workspace(root: Path) -> Path:
    files = {
        "k.py": "import pkg.helpers\n",
        "pkg/helpers.py": "X = 1\n",
        "pkg/data/table.csv": "1,2\n",  # `/data/` is anchored to the top: this one travels
        "pkg/.env": "TOKEN=1\n",  # hidden at any depth
        "data/big.npy": "x",  # ignored folder
        "data_loader.py": "import numpy\n",
        "signing.key": "-----BEGIN-----\n",
        "pkg/deploy.key": "-----BEGIN-----\n",
        "logs/run.log": "x\n",
        "keep.log": "kept\n",  # `!keep.log` does not matter: nothing ignores it first
        "scratch/a/tmp1.txt": "x\n",
        "scratch/a/b/tmp2.txt": "x\n",
        "scratch/notes.txt": "kept\n",
        ".gitignore": GITIGNORE,
        **SECRETS,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _names(blob: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return sorted(zf.namelist())


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)


def test_outside_git_hidden_files_and_gitignored_files_stay_home(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    selection = select_files(ws)
    assert selection.ignore_source == ".gitignore files"
    blob, _digest = build_snapshot(ws)
    assert _names(blob) == EXPECTED  # before: .env, .netrc, .pypirc, pkg/.env and every ignored file
    assert selection.hidden == 5  # .env .netrc .pypirc .gitignore pkg/.env
    assert selection.ignored == 6  # data/ logs/ signing.key pkg/deploy.key scratch/a/tmp1 scratch/a/b/tmp2


def test_in_a_git_work_tree_git_decides_what_is_ignored(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    _git(ws, "init", "-q")
    (ws / ".git" / "info" / "exclude").write_text("scratch/notes.txt\n")  # git's own excludes count too
    (ws / "tracked.key").write_text("tracked anyway\n")
    _git(ws, "add", "-f", "tracked.key")  # git does not ignore a tracked file
    selection = select_files(ws)
    assert selection.ignore_source == "git"
    names = _names(build_snapshot(ws)[0])
    assert names == sorted([n for n in EXPECTED if n != "scratch/notes.txt"] + ["tracked.key"])
    # a workspace inside a repository: paths are the workspace's own
    sub = select_files(ws / "pkg")
    assert sorted(p.relative_to(ws / "pkg").as_posix() for p in sub.files) == ["data/table.csv", "helpers.py"]


def test_the_job_module_travels_even_when_ignored(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    blob, _digest = build_snapshot(ws, ws / "signing.key")
    assert "signing.key" in _names(blob) and ".env" not in _names(blob)


def test_what_is_sent_is_said_in_one_line(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    selection = select_files(ws)
    blob, digest, count, size = _build(ws, None, selection)
    line = snapshot_line(selection, count, size, len(blob), digest)
    assert count == len(EXPECTED) and size == sum(len((ws / n).read_bytes()) for n in EXPECTED)
    assert f"{count} files, {size:,} bytes" in line
    assert "left out: 5 hidden, 6 ignored" in line and "from .gitignore files" in line


@pytest.mark.parametrize(
    ("pattern", "path", "folder", "ignored"),
    [
        ("*.key", "a/b/c.key", False, True),
        ("/top.txt", "top.txt", False, True),
        ("/top.txt", "a/top.txt", False, False),
        ("logs/", "logs", True, True),
        ("logs/", "logs", False, False),  # a file named logs
        ("a/**/z", "a/z", False, True),
        ("a/**/z", "a/b/c/z", False, True),
        ("**/cache", "x/y/cache", True, True),
        ("build-[0-9]", "build-7", True, True),
        ("build-[!0-9]", "build-7", True, False),
        ("\\#hash", "#hash", False, True),
        ("*.log\n!keep.log", "keep.log", False, False),
        ("*.log\n!keep.log", "other.log", False, True),
    ],
)
def test_the_gitignore_fallback_follows_gits_pattern_rules(
    tmp_path: Path, pattern: str, path: str, folder: bool, ignored: bool
) -> None:
    (tmp_path / ".gitignore").write_text(pattern + "\n")
    assert _GitignoreFiles(tmp_path).ignored(path, folder) is ignored
    # git agrees (check-ignore needs a repository)
    _git(tmp_path, "init", "-q")
    target = tmp_path / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if folder:
        target.mkdir(exist_ok=True)
        (target / "f").write_text("")
    else:
        target.write_text("")
    asked = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=tmp_path)
    assert (asked.returncode == 0) is ignored
