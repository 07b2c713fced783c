"""Where the table comes from: real extraction in a child process, the cache, the snapshot."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from warp_harness.builtins import (
    BuiltinTable,
    TableFormatError,
    cache_files,
    cache_path,
    clear_memo,
    installed_warp_version,
    load_table,
    loader,
)

SNAPSHOT = Path(loader.__file__).with_name("snapshot.msgpack")


def _no_extraction(*args: object, **kwargs: object) -> None:
    raise AssertionError("the extractor must not run here")


def test_version_comes_from_metadata() -> None:
    import importlib.metadata

    assert installed_warp_version() == importlib.metadata.version("warp-lang")


def test_extraction_lists_every_builtin(extracted_cache: Path, table: BuiltinTable) -> None:
    import warp
    import warp._src.context as wc

    assert extracted_cache.is_file()
    assert table.warp_version == warp.config.version
    assert set(table.builtin_names) == set(wc.builtin_functions)
    if warp.config.version == "1.19.0":
        assert len(table) == 355
    n_overloads = sum(len(getattr(f, "overloads", [])) or 1 for f in wc.builtin_functions.values())
    ours = sum(len(b.overloads) for b in (table.get(n) for n in table.builtin_names) if b is not None)
    assert ours >= n_overloads
    # dir(warp) is covered too, with a coarse kind. The extractor sees a freshly imported warp;
    # this test process may have imported submodules (warp.sparse, warp.render, ...) that then
    # show in dir(warp), so the comparison is with a fresh interpreter's dir(warp).
    fresh = subprocess.run(
        [sys.executable, "-I", "-c", "import warp; print('\\n'.join(dir(warp)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert set(table.warp_attribute_names) == {n for n in fresh if not n.startswith("_")}


def test_the_calling_process_never_imports_warp(extracted_cache: Path) -> None:
    code = (
        "import sys\n"
        "from warp_harness.builtins import load_table\n"
        "t = load_table()\n"
        "assert t.origin == 'cache', t.origin\n"
        "assert t.check_call('sqrt', []).status.value == 'bad_arity'\n"
        "assert 'warp' not in sys.modules, 'warp was imported'\n"
    )
    env = {**os.environ, "WARP_HARNESS_CACHE_DIR": str(extracted_cache.parent)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_cache_hit_spawns_nothing(
    cache_dir: Path, extracted_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = installed_warp_version()
    assert version is not None
    target = cache_path(version)
    target.parent.mkdir(parents=True)
    shutil.copy(extracted_cache, target)
    before = target.stat().st_mtime_ns
    monkeypatch.setattr(loader, "run_extractor", _no_extraction)
    table = load_table()
    assert table.origin == "cache"
    assert target.stat().st_mtime_ns == before
    assert load_table() is table  # memoised
    assert load_table(allow_extract=False) is table


def test_a_cache_is_checked_record_by_record_once_per_content(
    cache_dir: Path, extracted_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first load checks every record and keeps the bytes' digest beside the cache; later loads
    of the same bytes skip those checks; changed bytes under an old digest are checked in full (and
    a malformed record is still discarded)."""
    from warp_harness.builtins import table as table_module

    version = installed_warp_version()
    assert version is not None
    target = cache_path(version)
    target.parent.mkdir(parents=True)
    shutil.copy(extracted_cache, target)
    monkeypatch.setattr(loader, "run_extractor", _no_extraction)
    checked: list[object] = []
    real_check = table_module._validate_record

    def counting(rec: object, n_types: int) -> None:
        checked.append(rec)
        real_check(rec, n_types)

    monkeypatch.setattr(table_module, "_validate_record", counting)
    first = load_table()
    assert first.origin == "cache" and len(checked) == len(first)
    sidecar = target.with_name(target.name + ".checked")
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    assert sidecar.read_text().split() == [digest, version, loader._extractor_id()]
    assert cache_files.cached_identity() == first.identity == f"cache:{version}:{digest}"

    clear_memo()
    checked.clear()
    again = load_table()
    assert again.origin == "cache" and checked == []
    assert again.builtin_names == first.builtin_names
    assert again.check_call("sqrt", []).is_error

    data = msgpack.unpackb(target.read_bytes(), raw=False, strict_map_key=False)
    data["builtins"][0]["ovl"][0]["p"] = [["x", 0, len(data["types"]) + 5, False, True]]
    target.write_bytes(msgpack.packb(data, use_bin_type=True))  # same size class, old digest
    clear_memo()
    checked.clear()
    table = load_table(allow_extract=False)
    assert table.origin == "snapshot" and checked  # checked in full, found malformed, discarded
    assert not target.exists() and not sidecar.exists()


def test_corrupt_cache_is_rebuilt_by_a_real_extraction(cache_dir: Path, extracted_cache: Path) -> None:
    version = installed_warp_version()
    assert version is not None
    target = cache_path(version)
    target.parent.mkdir(parents=True)
    good = extracted_cache.read_bytes()
    target.write_bytes(good[: len(good) // 2])  # truncated
    table = load_table()
    assert table.origin == "extracted"
    assert loader.load_file(target, "cache").warp_version == version
    assert target.read_bytes() != good[: len(good) // 2]
    # no temporary file left behind (writes go through a temp file and os.replace)
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x00garbage\xff" * 10,
        msgpack.packb({"format": 1}),
        msgpack.packb([1, 2, 3]),
        msgpack.packb(
            {
                "format": 1,
                "warp_version": "1.19.0",
                "types": [{"k": "any"}],
                "builtins": [{"name": "f", "ovl": [{"p": [["x", 0, 7, False, True]]}]}],  # type 7 missing
                "attrs": {},
                "kcall": {},
                "array_kinds": {},
                "pyi": {},
            }
        ),
    ],
)
def test_malformed_tables_are_rejected(payload: bytes) -> None:
    with pytest.raises(TableFormatError):
        loader.decode(payload, "cache")


def test_stale_or_foreign_cache_is_replaced(
    cache_dir: Path, extracted_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache written by another extractor version (or claiming another Warp) is not reused."""
    version = installed_warp_version()
    assert version is not None
    target = cache_path(version)
    target.parent.mkdir(parents=True)
    data = msgpack.unpackb(extracted_cache.read_bytes(), raw=False)
    data["extractor"] = "0" * 16
    target.write_bytes(msgpack.packb(data, use_bin_type=True))

    def copy_good(output: Path, timeout: float = 0.0) -> None:  # stands in for the child process
        shutil.copy(extracted_cache, output)

    monkeypatch.setattr(loader, "run_extractor", copy_good)
    table = load_table()
    assert table.origin == "extracted"
    assert loader.load_file(target, "cache").extractor_id == loader._extractor_id()


@pytest.mark.parametrize("python", ["/nonexistent/python3", shutil.which("false") or "/bin/false"])
def test_snapshot_when_extraction_fails(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, python: str
) -> None:
    monkeypatch.setattr(loader, "EXTRACTOR_PYTHON", python)
    table = load_table()
    assert table.origin == "snapshot"
    assert table.has_builtin("sqrt") and table.check_call("sqrt", []).is_error
    assert loader.last_load["problems"]
    # nothing (not even a temporary file) is left in the cache folder
    assert not cache_dir.exists() or not any(cache_dir.iterdir())


def test_no_extraction_when_not_allowed(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "run_extractor", _no_extraction)
    assert load_table(allow_extract=False).origin == "snapshot"


def test_snapshot_is_current(table: BuiltinTable) -> None:
    """Regenerate with ``python -m warp_harness.builtins.extract --write-snapshot`` when this fails."""
    snap = loader.load_snapshot()
    if snap.warp_version != table.warp_version:
        pytest.skip(f"snapshot is for warp {snap.warp_version}, installed {table.warp_version}")
    assert snap.builtin_names == table.builtin_names
    for name in table.builtin_names:
        ours, theirs = snap.get(name), table.get(name)
        assert ours is not None and theirs is not None
        assert ours.overloads == theirs.overloads, name
    assert SNAPSHOT.stat().st_size < 400_000
    assert oct(SNAPSHOT.stat().st_mode & 0o777) == oct(0o644)


def test_clear_memo_forgets(cache_dir: Path, extracted_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "run_extractor", _no_extraction)
    first = load_table(allow_extract=False)
    clear_memo()
    assert load_table(allow_extract=False) is not first


def test_unwritable_cache_folder_still_extracts(
    tmp_path: Path, cache_dir: Path, extracted_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("WARP_HARNESS_CACHE_DIR", str(blocker / "cache"))

    def copy_good(output: Path, timeout: float = 0.0) -> None:  # stands in for the child process
        shutil.copy(extracted_cache, output)

    monkeypatch.setattr(loader, "run_extractor", copy_good)
    table = load_table()
    assert table.origin == "extracted"
    assert blocker.read_text() == "not a folder"


def test_a_check_answered_from_its_result_cache_never_loads_the_table(
    cache_dir: Path, extracted_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result cache is keyed on the table's identity, known from the cache file's vouched-for digest
    without decoding it; the table is loaded only for a file that must be analysed, and both runs agree."""
    from warp_harness.batch import check_files
    from warp_harness.check_cache import table_identity

    version = installed_warp_version()
    assert version is not None
    target = cache_path(version)
    target.parent.mkdir(parents=True)
    shutil.copy(extracted_cache, target)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(loader, "run_extractor", _no_extraction)
    source = tmp_path / "k.py"
    source.write_text(
        "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = wp.sqrt()\n"
    )
    first = check_files([source], cache=True, jobs=1)
    assert loader._memo  # analysed: the table was loaded (and its sidecar written)
    identity = table_identity()
    assert identity == table_identity(load_table())

    clear_memo()
    again = check_files([source], cache=True, jobs=1)
    assert not loader._memo  # every file answered from the result cache: no table decoded
    assert [r.to_dict() for r in again[0].records] == [r.to_dict() for r in first[0].records]
    assert [r.rule for r in first[0].records] == ["WH004"]  # the builtin table was used

    source.write_text(source.read_text() + "\n")  # a changed file is analysed again
    check_files([source], cache=True, jobs=1)
    assert loader._memo


NOBODY = 65534
WRONG_SQRT = "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = wp.sqrt()\n"


def _plant_forged_table(extracted_cache: Path, folder: Path) -> Path:
    """A real table for the installed Warp with one forged overload: ``wp.sqrt()`` with no argument."""
    data = msgpack.unpackb(extracted_cache.read_bytes(), raw=False, strict_map_key=False)
    (sqrt,) = [b for b in data["builtins"] if b["name"] == "sqrt"]
    sqrt["ovl"].append({**sqrt["ovl"][0], "p": []})
    version = installed_warp_version()
    assert version is not None
    target = folder / cache_path(version).name
    target.write_bytes(msgpack.packb(data, use_bin_type=True))
    return target


def _check_cli(source: Path, cache: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WARP_HARNESS_CACHE_DIR": str(cache), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", source.name, "--no-cache", "--exit-zero"],
        cwd=source.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("where", ["shared-folder", "their-file"])
def test_a_table_another_user_planted_is_not_used(where: str, extracted_cache: Path, tmp_path: Path) -> None:
    """Security round 2, finding 9: the builtin table's cache had no owner or mode check, so a table
    another user (uid 65534) planted in a shared cache folder (group/world-writable) decided which
    builtin calls are errors: a forged overload silenced WH004 in ``warp-harness check``. Now a
    folder others can write, or a cache file of another user, is not used (one note on stderr) and
    the table is extracted again."""
    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    source = tmp_path / "ws" / "k.py"
    source.parent.mkdir()
    source.write_text(WRONG_SQRT)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if where == "shared-folder":
        cache.chmod(0o1777)  # like /tmp: anyone may create a file in it
    planted = _plant_forged_table(extracted_cache, cache)
    os.chown(planted, NOBODY, NOBODY)
    done = _check_cli(source, cache, tmp_path)
    assert "WH004" in done.stdout, done.stdout + done.stderr  # the real table decided
    expected = "writable by other users; not used" if where == "shared-folder" else "belongs to another user"
    assert expected in done.stderr, done.stderr
    assert done.stderr.count("warp-harness: builtin table cache") == 1, done.stderr
