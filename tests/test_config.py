from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from warp_harness.config import ConfigError, Settings, find_pyproject, is_excluded, load_settings
from warp_harness.engine import check_file, check_paths
from warp_harness.record import Severity

KERNEL = """
import warp as wp

@wp.kernel
def k(x: wp.array(dtype=float), s):
    i = wp.tid()
    return x[i]
"""


def _project(root: Path, table: str) -> None:
    (root / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n[tool.warp-harness]\n{table}\n")


def test_nearest_pyproject_with_a_table_wins(tmp_path: Path) -> None:
    _project(tmp_path, 'target = "sm_90"')
    inner = tmp_path / "pkg" / "sub"
    inner.mkdir(parents=True)
    (tmp_path / "pkg" / "pyproject.toml").write_text("[project]\nname = 'no-table'\n")
    assert find_pyproject(inner / "k.py") == tmp_path / "pyproject.toml"
    settings = load_settings(inner / "k.py")
    assert settings.target == "sm_90" and settings.root == tmp_path


def test_table_settings_drive_the_checker(tmp_path: Path) -> None:
    _project(tmp_path, 'ignore = ["WH001"]\nseverity = { WH005 = "warning" }\nexclude = ["skipped"]')
    (tmp_path / "k.py").write_text(KERNEL)
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "k.py").write_text(KERNEL)
    results = check_paths([tmp_path])
    assert [Path(r.path).name for r in results] == ["k.py"] and len(results) == 1
    assert [(r.rule, r.severity) for r in results[0].records] == [("WH005", Severity.WARNING)]
    # explicit overrides (the CLI flags) beat the table
    overridden = check_file(tmp_path / "k.py", {"ignore": [], "select": ["WH001"]})
    assert [r.rule for r in overridden.records] == ["WH001"]


def test_invalid_settings_are_a_clear_error(tmp_path: Path) -> None:
    _project(tmp_path, 'select = "WH001"\nseverity = { WH005 = "loud" }')
    with pytest.raises(ConfigError, match="severity"):
        load_settings(tmp_path)
    with pytest.raises(ConfigError, match="debounce_ms"):
        Settings().merged({"debounce_ms": -1})
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\ntrust = 'yes'\n")
    (tmp_path / "k.py").write_text(KERNEL)
    cli = subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", str(tmp_path / "k.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.returncode == 2 and "configuration error" in cli.stderr and "trust" in cli.stderr


def test_broken_pyproject_is_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness\nthis is not toml")
    (tmp_path / "k.py").write_text(KERNEL)
    assert load_settings(tmp_path / "k.py").target == Settings().target
    result = subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", str(tmp_path), "--output-format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and json.loads(result.stdout)["results"]


def test_exclude_patterns(tmp_path: Path) -> None:
    settings = Settings(exclude=("tests/data", "*_generated.py"), root=tmp_path)
    assert is_excluded(tmp_path / "tests" / "data" / "x.py", settings)
    assert is_excluded(tmp_path / "a" / "b_generated.py", settings)
    assert not is_excluded(tmp_path / "tests" / "x.py", settings)


# a kernel whose tiles need 2 x 256 KiB of shared memory: WH015 on sm_86, silent on a forged profile
BIG_TILES = """
import warp as wp

@wp.kernel
def k(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    x = wp.tile_load(a, shape=(256, 256), offset=(i * 256, j * 256))
    wp.tile_store(out, wp.tile_matmul(x, x), offset=(i * 256, j * 256))
"""


def _forged_profile(path: Path) -> Path:
    """sm_86 with a shared memory per block no tile exceeds."""
    import warp_harness.hardware

    text = (Path(warp_harness.hardware.__file__).parent / "sm_86.toml").read_text()
    lines = [
        f"{line.split('=')[0].strip()} = 1073741824" if line.startswith("shared_memory_per_block") else line
        for line in text.splitlines()
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _check_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", ".", "--no-cache", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("how", ["dot-dot", "absolute", "link"])
def test_a_workspace_target_outside_the_workspace_is_refused(tmp_path: Path, how: str) -> None:
    """Security round 2, finding 11: a pyproject's ``target`` could name any ``.toml`` outside the
    tree (``../``, an absolute path, a link out), which the checks then read and trusted. A path a
    workspace names is confined to the workspace now (exit 2, one line); the command line's
    ``--target`` may still name any file."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / "k.py").write_text(BIG_TILES)
    outside = _forged_profile(tmp_path / "elsewhere" / "big.toml")
    if how == "link":
        (ws / "profiles").mkdir()
        (ws / "profiles" / "big.toml").symlink_to(outside)
    target = {"dot-dot": "../elsewhere/big.toml", "absolute": str(outside), "link": "profiles/big.toml"}[how]
    _project(ws, f"target = {json.dumps(target)}")
    done = _check_cli(ws)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is outside the workspace" in done.stderr and "WH015" not in done.stdout, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    by_user = _check_cli(ws, "--target", str(outside))  # the user's own choice stays free
    assert by_user.returncode == 0 and "WH015" not in by_user.stdout, by_user.stdout + by_user.stderr


def test_a_workspace_target_inside_is_read_relative_to_its_pyproject(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "k.py").write_text(BIG_TILES)
    _forged_profile(ws / "profiles" / "big.toml")
    _project(ws, 'target = "profiles/big.toml"')
    assert load_settings(ws / "pkg" / "k.py").target == str((ws / "profiles" / "big.toml").resolve())
    done = _check_cli(ws / "pkg")  # from a subfolder: the same profile
    assert done.returncode == 0 and "WH015" not in done.stdout, done.stdout + done.stderr
    assert "WH015" in _check_cli(ws / "pkg", "--target", "sm_86").stdout
