"""`ci`'s static tier and the daemon's through `check`'s result cache (warp_harness/check_cache.py, scope
`alone`: each file analysed on its own): an unchanged file is not analysed again, the records are those
an analysis gives, an edited file is analysed again, and `check`'s entries (computed in the workspace
model, records that can differ) are never read for them. Real CLI runs on copies of the buggy examples."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from warp_harness import check_cache
from warp_harness import engine as static_engine
from warp_harness.check_cache import encode_records
from warp_harness.config import load_settings
from warp_harness.daemon.ci import run_ci
from warp_harness.daemon.engine import Engine
from warp_harness.daemon.options import load_runtime_options
from warp_harness.record import Location, Record, Severity, Stage

REPO = Path(__file__).resolve().parents[2]
BUGGY = REPO / "examples" / "buggy"
PLANTED = "PLANTED-BY-THE-TEST"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    shutil.copytree(BUGGY, workspace)
    return workspace


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user cache folder, for the CLIs started and for this process (no cache opened yet)."""
    home = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.setattr(check_cache, "_shared", [])
    return home


def cli(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", *args],
        capture_output=True,
        text=True,
        cwd=ws,
        env=dict(os.environ),
        timeout=300,
    )


def ci_json(ws: Path) -> str:
    done = cli(ws, "ci", ".", "--output-format", "json")
    assert done.returncode == 1, done.stderr  # the buggy examples have errors
    return done.stdout


def entries(cache_home: Path) -> list[Path]:
    return sorted(
        p for p in (cache_home / "warp-harness").rglob("*") if p.is_file() and p.name != ".gitignore"
    )


def plant(cache_home: Path) -> int:
    """Overwrite every entry with a well-formed one holding one made-up record; how many."""
    fake = Record(Stage.CONSTRAINT, "WH003", Severity.ERROR, Location("x.py", 1, 0), PLANTED)
    data = encode_records((fake,))
    assert data is not None
    found = entries(cache_home)
    for entry in found:
        entry.write_bytes(data)
    return len(found)


def python_files(ws: Path) -> int:
    return sum(1 for _ in ws.rglob("*.py"))


def test_a_ci_rerun_reads_its_entries_and_reports_the_same(ws: Path, cache_home: Path) -> None:
    cold = ci_json(ws)
    assert len(entries(cache_home)) == python_files(ws)
    assert ci_json(ws) == cold
    assert plant(cache_home) == python_files(ws)
    # what the re-run reported came from the entries: nothing was analysed again
    assert PLANTED in ci_json(ws)


def test_ci_never_reads_the_entries_check_wrote(
    ws: Path, cache_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = cli(ws, "check", ".", "--exit-zero")
    assert done.returncode == 0, done.stderr
    assert plant(cache_home) == python_files(ws)  # check's entries
    first = ci_json(ws)
    assert PLANTED not in first
    assert len(entries(cache_home)) == 2 * python_files(ws)  # ci's beside check's
    # ...and it is what ci reports without any cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-cache"))
    assert ci_json(ws) == first


def test_an_edited_file_is_analysed_again(ws: Path, cache_home: Path) -> None:
    ci_json(ws)
    plant(cache_home)
    edited = ws / "mixed_precision.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    report = ci_json(ws)
    # the edited file's own records, the others' planted ones
    assert "mixed_precision.py" in report and "WH003" in report
    assert report.count(PLANTED) == python_files(ws) - 1


def test_records_and_lines_are_those_of_an_analysis_cold_and_warm(
    ws: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ws)
    for trust in (False, True):  # untrusted: only the lines records point at; trusted: every line
        uncached = run_ci([ws], trust=trust, static_only=True, cache_static=False)
        cold = run_ci([ws], trust=trust, static_only=True)
        warm = run_ci([ws], trust=trust, static_only=True)
        assert sum(len(r.records) for r in uncached.results) > 5
        assert cold.results == uncached.results and warm.results == uncached.results
        assert cold.files == uncached.files and warm.files == uncached.files


def test_the_daemons_static_tier_answers_an_unchanged_file_from_the_cache(
    ws: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    analysed: list[str] = []
    analyse = static_engine.check_bytes

    def counted(data: bytes, path: str, *args: object, **kwargs: object) -> object:
        analysed.append(path)
        return analyse(data, path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(static_engine, "check_bytes", counted)
    engine = Engine(ws, load_settings(ws), load_runtime_options(ws), trusted=False, record_history=False)
    try:
        first = engine.check(ws / "mixed_precision.py")
        assert analysed == ["mixed_precision.py"]
        again = engine.check(ws / "mixed_precision.py")
        assert analysed == ["mixed_precision.py"]  # not analysed again
        assert again.records == first.records
        assert any(r.record.rule == "WH003" for r in first.records)
    finally:
        engine.close()
