"""The console script, run as a real subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("warp-harness")
    command = [exe] if exe else [sys.executable, "-m", "warp_harness"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_check_examples_reports_the_buggy_ones_and_exits_1() -> None:
    result = run("check", str(EXAMPLES), "--output-format", "json")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    by_file: dict[str, set[str]] = {}
    for entry in report["results"]:
        by_file.setdefault(Path(entry["path"]).name, set()).add(entry["rule"])
    assert "saxpy.py" not in by_file and "tile_gemm.py" not in by_file
    assert {"WH003", "WH004"} <= by_file["mixed_precision.py"]
    assert {"WH010", "WH012"} <= by_file["race.py"]
    assert {"WH006", "WH007", "WH008", "WH011"} <= by_file["launches.py"]
    assert {"WH009", "WH015"} <= by_file["big_tiles.py"]


def test_clean_file_exits_0() -> None:
    result = run("check", str(EXAMPLES / "saxpy.py"))
    assert result.returncode == 0 and "All checks passed" in result.stdout


def test_exit_zero_and_missing_path() -> None:
    assert run("check", str(EXAMPLES), "--exit-zero").returncode == 0
    missing = run("check", "does/not/exist.py")
    assert missing.returncode == 2 and "no such file" in missing.stderr


@pytest.mark.parametrize("fmt", ["sarif", "junit", "github", "text"])
def test_every_output_format(fmt: str) -> None:
    result = run("check", str(EXAMPLES / "buggy" / "race.py"), "--output-format", fmt)
    assert result.returncode == 1
    if fmt == "sarif":
        log = json.loads(result.stdout)
        assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"WH010"}
        schema = json.loads((REPO / "tests" / "output" / "data" / "sarif-schema-2.1.0.json").read_text())
        jsonschema.validators.validator_for(schema)(schema).validate(log)
    elif fmt == "junit":
        root = ET.fromstring(result.stdout)
        assert root.find(".//failure") is not None
    elif fmt == "github":
        assert result.stdout.startswith("::error") or "::error" in result.stdout
    else:
        assert "WH010" in result.stdout and "hint:" in result.stdout


def test_select_ignore_target_flags() -> None:
    path = str(EXAMPLES / "buggy" / "big_tiles.py")
    only = run("check", path, "--select", "WH015", "--output-format", "json")
    assert {e["rule"] for e in json.loads(only.stdout)["results"]} == {"WH015"}
    on_cpu = run("check", path, "--select", "WH015", "--target", "cpu")
    assert on_cpu.returncode == 0
    ignored = run("check", path, "--ignore", "WH009,WH015", "--output-format", "json")
    assert not {"WH009", "WH015"} & {e["rule"] for e in json.loads(ignored.stdout)["results"]}
    bad_target = run("check", path, "--target", "sm_99")
    assert bad_target.returncode == 2 and "unknown target" in bad_target.stderr


def test_fix_rewrites_the_file(tmp_path: Path) -> None:
    target = tmp_path / "race.py"
    shutil.copy(EXAMPLES / "buggy" / "race.py", target)
    before = run("check", str(target), "--select", "WH010", "--output-format", "json")
    assert json.loads(before.stdout)["results"]
    result = run("check", str(target), "--select", "WH010", "--fix")
    assert "Fixed 1 issue" in result.stdout, result.stdout
    fixed = target.read_text()
    assert "out[0] += x[i]" in fixed or "wp.atomic_add(out, 0, x[i])" in fixed
    assert run("check", str(target), "--select", "WH010").returncode == 0


def test_rule_and_rules_commands() -> None:
    listing = run("rules")
    assert listing.returncode == 0
    ids = [line.split()[0] for line in listing.stdout.splitlines()]
    assert ids == sorted(ids) and {f"WH{n:03d}" for n in range(1, 16)} <= set(ids)
    doc = run("rule", "WH003")
    assert doc.returncode == 0 and "### Bad" in doc.stdout and "### Good" in doc.stdout
    assert run("rule", "WH404").returncode == 2


def test_docs_rules_md_is_up_to_date() -> None:
    generated = run("rules", "--output-format", "markdown").stdout
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == generated, (
        "docs/rules.md is stale: run `warp-harness rules --output-format markdown > docs/rules.md`"
    )


def test_check_without_python_files_warns_instead_of_passing(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("no code here\n")
    result = run("check", str(tmp_path))
    # as ruff: a warning on stderr, exit 0, and no "All checks passed!" for a check of nothing
    assert result.returncode == 0, result.stderr
    assert "warning: no Python files found" in result.stderr
    assert "All checks passed" not in result.stdout
    with_files = run("check", str(EXAMPLES / "saxpy.py"))
    assert "no Python files" not in with_files.stderr


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_rule_codes_are_refused(option: str) -> None:
    path = str(EXAMPLES / "saxpy.py")
    bad = run("check", path, option, "WH970")
    assert bad.returncode == 2 and f"invalid rule code or prefix for {option}: WH970" in bad.stderr
    assert run("check", path, option, "WH003,NOPE").returncode == 2
    # ids, prefixes, dynamic ids and the engine's own (WH998 unreadable file, WH999 internal) are fine
    for good in ("WH003", "WH0", "WH", "WHD020", "WH998", "WH999"):
        assert run("check", path, option, good).returncode == 0, good
