"""Choosing an executor (command line over the workspace's pyproject, which may not pick a
cluster on its own) and the workspace snapshot that travels to a Ray cluster. The jobs on a real
cluster: test_ray_executor.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from warp_harness.config import ConfigError
from warp_harness.daemon.executor import ExecutorChoice, executor_choice, make_executor
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.ray_executor import build_snapshot, unpack_snapshot


def _pyproject(folder: Path, runtime: str) -> Path:
    (folder / "pyproject.toml").write_text(f"[tool.warp-harness]\n[tool.warp-harness.runtime]\n{runtime}")
    return folder


def test_the_command_line_chooses_the_executor(tmp_path: Path) -> None:
    assert executor_choice(tmp_path) == ExecutorChoice("local", None)
    assert executor_choice(tmp_path, kind="ray", address="10.0.0.5:6379") == ExecutorChoice(
        "ray", "10.0.0.5:6379"
    )
    assert executor_choice(tmp_path, address="10.0.0.5:6379").kind == "ray"
    with pytest.raises(ConfigError, match="use it with --executor ray"):
        executor_choice(tmp_path, kind="local", address="10.0.0.5:6379")
    # the flags win over the workspace's table
    ws = _pyproject(tmp_path, 'executor = "ray"\naddress = "203.0.113.9:6379"\n')
    assert executor_choice(ws, kind="local") == ExecutorChoice("local", None)


def test_a_workspace_cannot_send_its_code_to_a_cluster_of_its_choosing(tmp_path: Path) -> None:
    ws = _pyproject(tmp_path, 'executor = "ray"\naddress = "203.0.113.9:6379"\n')
    choice = executor_choice(ws)
    assert choice.refused and "a workspace cannot choose where its code" in choice.refused
    with pytest.raises(ConfigError, match="a workspace cannot choose where its code"):
        make_executor(choice, ws, RuntimeOptions())  # refused before Ray is even imported
    # `trust = true` in the same pyproject does not vouch for it; an explicit --trust does
    (ws / "pyproject.toml").write_text(
        '[tool.warp-harness]\ntrust = true\n[tool.warp-harness.runtime]\nexecutor = "ray"\n'
        'address = "203.0.113.9:6379"\n'
    )
    assert executor_choice(ws).refused
    assert executor_choice(ws, trusted_by_flag=True) == ExecutorChoice("ray", "203.0.113.9:6379")
    # naming the local executor needs no trust
    assert executor_choice(_pyproject(ws, 'executor = "local"\n')) == ExecutorChoice("local", None)
    with pytest.raises(ConfigError, match="`executor` must be local or ray"):
        executor_choice(_pyproject(ws, 'executor = "dask"\n'), trusted_by_flag=True)


def test_the_snapshot_is_the_workspaces_files_by_content(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "k.py").write_text("import pkg.helpers\n")
    (ws / "pkg" / "helpers.py").write_text("X = 1\n")
    (ws / "data.npy").write_bytes(b"\x93NUMPY" + bytes(100))
    for skipped in (".git", ".warp-harness", "__pycache__", "node_modules", "venv"):
        (ws / skipped).mkdir()
        (ws / skipped / "junk.py").write_text("junk\n")
    (ws / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("not the workspace's\n")
    (ws / "link.txt").symlink_to(outside)
    blob, digest = build_snapshot(ws)
    again, same = build_snapshot(ws)
    assert (blob, digest) == (again, same)  # deterministic: one upload per content
    into = tmp_path / "unpacked"
    unpack_snapshot(blob, digest, into)
    files = sorted(p.relative_to(into).as_posix() for p in into.rglob("*") if p.is_file())
    assert files == ["data.npy", "k.py", "pkg/helpers.py"]
    assert (into / "pkg" / "helpers.py").read_text() == "X = 1\n"
    os.utime(ws / "k.py", (1, 1))  # a new time alone: the same content, the same snapshot
    assert build_snapshot(ws)[1] == digest
    (ws / "k.py").write_text("import pkg.helpers  # changed\n")
    assert build_snapshot(ws)[1] != digest
    with pytest.raises(RuntimeError, match="does not match its hash"):
        unpack_snapshot(blob, "0" * 64, tmp_path / "elsewhere")


def test_the_command_line_refuses_a_cluster_only_the_workspace_named(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text(
        '[tool.warp-harness]\ntrust = true\n[tool.warp-harness.runtime]\nexecutor = "ray"\n'
        'address = "203.0.113.9:6379"\n'
    )
    (tmp_path / "k.py").write_text(
        "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    pass\n"
    )

    def ci(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-I", "-m", "warp_harness", "ci", ".", *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    refused = ci()
    assert refused.returncode == 2 and "a workspace cannot choose where its code" in refused.stderr
    static = ci("--no-trust")  # nothing would run: the static tier alone, the choice is moot
    assert static.returncode == 0 and "workspace not trusted" in static.stderr


def test_a_cluster_nobody_listens_at_is_a_usage_error_at_once(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    pytest.importorskip("ray")
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\n")
    kernel = "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    pass\n"
    (tmp_path / "k.py").write_text(kernel)
    command = [sys.executable, "-I", "-m", "warp_harness", "ci", ".", "--trust"]
    command += ["--executor", "ray", "--address", f"127.0.0.1:{port}"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"cannot reach the Ray cluster at 127.0.0.1:{port}" in done.stderr


def test_an_unpacked_snapshot_is_checked_before_each_use(tmp_path: Path) -> None:
    """What a warm Ray runner checks before every job (issue #30, item 4): its folder private,
    no link below, every file as unpacked; a reason when not, so it unpacks afresh."""
    from warp_harness.daemon.ray_executor import snapshot_intact

    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "k.py").write_text("import pkg.helpers\n")
    (ws / "pkg" / "helpers.py").write_text("X = 1\n")
    blob, digest = build_snapshot(ws)
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    folder = root / "123-abc"
    folder.mkdir(mode=0o700)
    unpacked = folder / "workspace"
    manifest = unpack_snapshot(blob, digest, unpacked)
    assert sorted(manifest) == ["k.py", "pkg/helpers.py"]
    assert os.stat(unpacked / "k.py").st_mode & 0o777 == 0o600
    assert snapshot_intact(folder, unpacked, manifest) is None
    (unpacked / "pkg" / "__pycache__").mkdir()  # what the job's own imports write may stay
    assert snapshot_intact(folder, unpacked, manifest) is None
    (unpacked / "pkg" / "helpers.py").write_text("X = 2\n")
    assert "pkg/helpers.py changed" in str(snapshot_intact(folder, unpacked, manifest))
    (unpacked / "pkg" / "helpers.py").write_text("X = 1\n")
    (unpacked / "pkg" / "helpers.py").unlink()
    (unpacked / "pkg" / "helpers.py").symlink_to(ws / "pkg" / "helpers.py")  # same text, a link
    assert "is a link" in str(snapshot_intact(folder, unpacked, manifest))
    (unpacked / "pkg" / "helpers.py").unlink()
    (unpacked / "pkg" / "helpers.py").write_text("X = 1\n")
    assert snapshot_intact(folder, unpacked, manifest) is None
    folder.chmod(0o755)
    assert "open to other users" in str(snapshot_intact(folder, unpacked, manifest))
    folder.chmod(0o700)
    root.chmod(0o777)
    assert "open to other users" in str(snapshot_intact(folder, unpacked, manifest))


def test_a_refused_ray_connection_names_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    # #35: without its token, Ray printed 20 s of authentication warnings, then "cannot reach"
    import sys
    import types

    from warp_harness.daemon import ray_executor

    class RayError(Exception):
        pass

    def init(**_: object) -> None:
        raise ConnectionError("Unauthenticated: invalid or missing auth token")

    fake = types.SimpleNamespace(
        is_initialized=lambda: False, init=init, exceptions=types.SimpleNamespace(RayError=RayError)
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    with pytest.raises(ray_executor.RayUnavailable) as refused:
        ray_executor.connect("auto")
    message = str(refused.value)
    assert "refused this process's credentials" in message and "RAY_AUTH_TOKEN" in message
    assert "~/.ray/auth_token" in message
