"""The result cache of `check` (warp_harness.check_cache): same output warm and cold, invalidated by
content, settings and versions, private to the user and outside the workspace, corrupt or foreign
entries discarded, bypassed by --no-cache. Real files, real subprocesses, a real second user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import warp_harness
from warp_harness.batch import check_files
from warp_harness.check_cache import MAX_ENTRY_BYTES, CheckCache, decode_records, encode_records
from warp_harness.record import Location, Record, Severity, Stage

REPO = Path(__file__).resolve().parents[1]
BUGGY = REPO / "examples" / "buggy"
NOBODY = 65534
PLANTED = "PLANTED-BY-THE-TEST"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace holding copies of the buggy examples (they get records from several rules)."""
    workspace = tmp_path / "ws"
    shutil.copytree(BUGGY, workspace)
    return workspace


@pytest.fixture
def cache_home(tmp_path: Path) -> Path:
    return tmp_path / "xdg-cache"


def check(ws: Path, cache_home: Path, *args: str, fmt: str = "json") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", ".", "--output-format", fmt, "--exit-zero", *args],
        capture_output=True,
        text=True,
        cwd=ws,
        env=env,
        timeout=300,
    )


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


@pytest.mark.parametrize("fmt", ["json", "text", "sarif"])
def test_a_warm_run_prints_the_same_bytes_as_a_cold_one_and_without_the_cache(
    ws: Path, cache_home: Path, fmt: str
) -> None:
    cold = check(ws, cache_home, fmt=fmt)
    stored = entries(cache_home)
    warm = check(ws, cache_home, fmt=fmt)
    uncached = check(ws, cache_home, "--no-cache", fmt=fmt)
    assert cold.returncode == 0, cold.stderr
    assert len(stored) == len(list(ws.glob("*.py")))
    assert warm.stdout == cold.stdout == uncached.stdout
    assert "WH003" in cold.stdout


def test_a_warm_run_reads_the_cache(ws: Path, cache_home: Path) -> None:
    check(ws, cache_home)
    assert plant(cache_home) == 4
    assert PLANTED in check(ws, cache_home).stdout


def test_a_content_change_is_checked_again(ws: Path, cache_home: Path) -> None:
    check(ws, cache_home)
    plant(cache_home)
    race = ws / "race.py"
    race.write_text(race.read_text() + "\n# edited\n")
    report = check(ws, cache_home, "--output-format", "json").stdout
    # the edited file is analysed again, the others still come from the (planted) cache
    assert report.count(PLANTED) == 3
    assert '"path": "race.py"' in report and '"rule": "WH010"' in report


@pytest.mark.parametrize("option", [["--select", "WH003"], ["--target", "cpu"], ["--ignore", "WH010"]])
def test_a_settings_change_is_checked_again(ws: Path, cache_home: Path, option: list[str]) -> None:
    check(ws, cache_home)
    plant(cache_home)
    assert PLANTED not in check(ws, cache_home, *option).stdout


def test_a_pyproject_setting_is_part_of_the_key(ws: Path, cache_home: Path) -> None:
    check(ws, cache_home)
    plant(cache_home)
    (ws / "pyproject.toml").write_text('[tool.warp-harness]\nignore = ["WH004"]\n')
    assert PLANTED not in check(ws, cache_home).stdout


def test_a_version_or_builtin_table_change_changes_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warp_harness.config import Settings

    root = tmp_path / "c"
    key = CheckCache(root, table_identity="1:1.10.0").key(b"x = 1\n", "a.py", Settings())
    assert CheckCache(root, table_identity="1:1.10.0").key(b"x = 1\n", "a.py", Settings()) == key
    assert CheckCache(root, table_identity="1:1.11.0").key(b"x = 1\n", "a.py", Settings()) != key
    monkeypatch.setattr(warp_harness, "__version__", "99.0")
    assert CheckCache(root, table_identity="1:1.10.0").key(b"x = 1\n", "a.py", Settings()) != key


def test_a_rule_file_change_changes_the_key(tmp_path: Path) -> None:
    """An editable install keeps its version while rules change: their files are in the key."""
    import warp_harness.rules
    from warp_harness.config import Settings

    rule_file = Path(warp_harness.rules.__file__)
    before = CheckCache(tmp_path / "c").key(b"", "a.py", Settings())
    st = rule_file.stat()
    try:
        os.utime(rule_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert CheckCache(tmp_path / "c").key(b"", "a.py", Settings()) != before
    finally:
        os.utime(rule_file, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "oversized", "wrong-shape"])
def test_a_corrupt_entry_is_discarded(ws: Path, cache_home: Path, damage: str) -> None:
    cold = check(ws, cache_home).stdout
    for entry in entries(cache_home):
        good = entry.read_bytes()
        entry.write_bytes(
            {
                "garbage": os.urandom(64),
                "truncated": good[: len(good) // 2],
                "oversized": b"\x90" * (MAX_ENTRY_BYTES + 1),
                "wrong-shape": b"\x92\x01\x91\x93\xa1a\xa1b\xa1c",  # [1, [["a", "b", "c"]]]
            }[damage]
        )
    assert check(ws, cache_home).stdout == cold
    # discarded and written again, whole
    assert all(decode_records(e.read_bytes()) is not None for e in entries(cache_home))


def test_an_entry_owned_by_another_user_is_not_used(ws: Path, cache_home: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    cold = check(ws, cache_home).stdout
    plant(cache_home)
    for entry in entries(cache_home):
        os.chown(entry, NOBODY, NOBODY)
    assert check(ws, cache_home).stdout == cold
    assert all(e.stat().st_uid == os.getuid() for e in entries(cache_home))


def test_a_cache_folder_owned_by_another_user_is_not_used(ws: Path, cache_home: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    cold = check(ws, cache_home, "--no-cache").stdout
    folder = cache_home / "warp-harness"
    folder.mkdir(parents=True)
    os.chown(folder, NOBODY, NOBODY)
    result = check(ws, cache_home)
    assert result.stdout == cold
    assert "result cache not used" in result.stderr and "another user" in result.stderr
    assert entries(cache_home) == []


def test_a_cache_folder_others_can_write_is_not_used(ws: Path, cache_home: Path) -> None:
    folder = cache_home / "warp-harness"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    result = check(ws, cache_home)
    assert "writable by other users" in result.stderr
    assert entries(cache_home) == []


def test_no_cache_neither_reads_nor_writes(ws: Path, cache_home: Path) -> None:
    check(ws, cache_home)
    plant(cache_home)
    assert PLANTED not in check(ws, cache_home, "--no-cache").stdout
    (ws / "new.py").write_text("import warp as wp\n")
    before = entries(cache_home)
    check(ws, cache_home, "--no-cache")
    assert entries(cache_home) == before


def test_the_cache_lives_outside_the_workspace_private_and_ignored(ws: Path, cache_home: Path) -> None:
    files = sorted(p for p in ws.rglob("*"))
    check(ws, cache_home)
    assert sorted(p for p in ws.rglob("*")) == files  # nothing written into the workspace
    folder = cache_home / "warp-harness"
    assert entries(cache_home)
    assert (folder.stat().st_mode & 0o777) == 0o700
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"


def test_without_xdg_cache_home_the_cache_is_under_home(ws: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = str(tmp_path / "home")
    subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", ".", "--exit-zero"],
        cwd=ws,
        env=env,
        capture_output=True,
        timeout=300,
        check=True,
    )
    assert list((tmp_path / "home" / ".cache" / "warp-harness").rglob("check-v*/*/*"))


def test_the_cache_round_trips_every_record_of_the_examples_exactly(tmp_path: Path) -> None:
    cache = CheckCache(tmp_path / "c")
    cold = check_files([REPO / "examples"], jobs=1, cache=cache)
    warm = check_files([REPO / "examples"], jobs=1, cache=cache)
    assert cache.hits == len(warm) and cold == warm
    assert any(r.records for r in warm)


PKG_KERNELS = """import warp as wp


@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s
"""
PKG_SIM = """import warp as wp

from .kernels import scale


def step(a, n):
    wp.launch(scale, dim=n, inputs=[a, 2.0])
"""


def _package(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(PKG_KERNELS)
    (pkg / "sim.py").write_text(PKG_SIM)
    return pkg


def test_a_change_in_the_module_a_launch_resolved_into_is_checked_again(tmp_path: Path) -> None:
    """sim.py's bytes do not change, but its launch now passes too few arguments: not a stale hit."""
    pkg = _package(tmp_path / "ws")
    cache = CheckCache(tmp_path / "cache")
    first = check_files([pkg], jobs=1, cache=cache)
    assert not [r for x in first for r in x.records if r.rule == "WH006"]
    # a third parameter in the kernel's module
    (pkg / "kernels.py").write_text(PKG_KERNELS.replace("s: float)", "s: float, t: float)"))
    second = check_files([pkg], jobs=1, cache=cache)
    (record,) = [r for x in second for r in x.records if r.rule == "WH006"]
    assert record.location.path.endswith("sim.py")
    # unchanged again: sim.py and the others come from the cache, with the same records
    hits = cache.hits
    third = check_files([pkg], jobs=1, cache=cache)
    assert third == second and cache.hits == hits + 3


def test_a_module_appearing_makes_an_unresolved_launch_checked_again(tmp_path: Path) -> None:
    pkg = _package(tmp_path / "ws")
    (pkg / "kernels.py").unlink()
    (pkg / "sim.py").write_text(PKG_SIM.replace("inputs=[a, 2.0]", "inputs=[a]"))
    cache = CheckCache(tmp_path / "cache")
    assert not [r for x in check_files([pkg], jobs=1, cache=cache) for r in x.records if r.rule == "WH006"]
    (pkg / "kernels.py").write_text(PKG_KERNELS)
    found = [r for x in check_files([pkg], jobs=1, cache=cache) for r in x.records if r.rule == "WH006"]
    assert len(found) == 1


def test_an_entry_with_dependencies_round_trips_and_needs_them_unchanged(tmp_path: Path) -> None:
    cache = CheckCache(tmp_path / "cache")
    record = Record(Stage.CONSTRAINT, "WH006", Severity.ERROR, Location("sim.py", 3, 4), "m")
    cache.put("ab" * 32, (record,), {"pkg.kernels": "d1", "pkg.gone": ""})
    assert cache.get("ab" * 32, {"pkg.kernels": "d1", "pkg.gone": ""}.__getitem__) == (record,)
    assert cache.get("ab" * 32, {"pkg.kernels": "d2", "pkg.gone": ""}.__getitem__) is None
    assert cache.get("ab" * 32) is None  # nothing to compare the dependencies with: a miss
    cache.put("cd" * 32, (record,))
    assert cache.get("cd" * 32) == (record,)
    # `current` is asked only about the modules of an entry that has some (the workspace model is built
    # only then)
    asked: list[str] = []

    def digest(module: str) -> str:
        asked.append(module)
        return ""

    assert cache.get("cd" * 32, digest) == (record,)
    assert asked == []
    # a module whose digest cannot be told (no workspace model) is a miss
    assert cache.get("ab" * 32, lambda module: None) is None


def test_a_warm_file_without_dependencies_does_not_build_the_workspace_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sim.py says "launch" but launches nothing that resolves into another module: its entry has no
    dependencies, so a warm run of it serves the entry without walking the workspace."""
    import warp_harness.engine

    pkg = _package(tmp_path / "ws")
    (pkg / "sim.py").write_text(PKG_SIM.replace("from .kernels import scale\n", "scale = None\n"))
    cache = CheckCache(tmp_path / "cache")
    cold = check_files([pkg / "sim.py"], jobs=1, cache=cache)
    built: list[object] = []
    real = warp_harness.engine.project_index

    def counted(*args: Any) -> Any:
        built.append(args)
        return real(*args)

    monkeypatch.setattr(warp_harness.engine, "project_index", counted)
    assert check_files([pkg / "sim.py"], jobs=1, cache=cache) == cold
    assert cache.hits == 1 and built == []
    # with a dependency (the launch resolves into kernels.py), the warm run builds it to compare digests
    (pkg / "sim.py").write_text(PKG_SIM)
    first = check_files([pkg / "sim.py"], jobs=1, cache=cache)
    built.clear()
    assert check_files([pkg / "sim.py"], jobs=1, cache=cache) == first
    assert cache.hits == 2 and len(built) == 1


def test_a_profile_file_change_changes_the_key(tmp_path: Path) -> None:
    """A .toml target counts by its contents; a bundled target by the package's own profile files."""
    import warp_harness.hardware
    from warp_harness.config import Settings

    profile = tmp_path / "gpu.toml"
    bundled = Path(warp_harness.hardware.__file__).parent / "sm_86.toml"
    profile.write_text(bundled.read_text())
    cache = CheckCache(tmp_path / "c")
    custom = cache.key(b"", "a.py", Settings(target=str(profile)))
    assert len({custom, cache.key(b"", "a.py", Settings(target="sm_86"))}) == 2
    profile.write_text(bundled.read_text().replace("warp_size = 32", "warp_size = 64"))
    warp_harness.hardware.load_profile.cache_clear()  # as a new run: a process loads a profile once
    assert CheckCache(tmp_path / "c").key(b"", "a.py", Settings(target=str(profile))) != custom
    before = CheckCache(tmp_path / "c").key(b"", "a.py", Settings(target="sm_86"))
    st = bundled.stat()
    try:
        os.utime(bundled, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert CheckCache(tmp_path / "c").key(b"", "a.py", Settings(target="sm_86")) != before
    finally:
        os.utime(bundled, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_an_entry_folder_removed_while_running_is_made_again(tmp_path: Path) -> None:
    """`put` makes each entry folder once per run; one removed meanwhile (another run clearing the cache)
    is made again, the entry is not lost."""
    cache = CheckCache(tmp_path / "cache")
    record = Record(Stage.CONSTRAINT, "WH006", Severity.ERROR, Location("sim.py", 3, 4), "m")
    cache.put("ab" * 32, (record,))
    folder = cache.entries / "ab"
    assert folder.is_dir()
    shutil.rmtree(folder)
    cache.put("ab" + "cd" * 31, (record,))
    assert cache.get("ab" + "cd" * 31) == (record,)
    assert sorted(p.name for p in folder.iterdir()) == ["cd" * 31]  # and no temporary file is left
