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
