from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.daemon.cache import ResultCache, atomic_write_bytes, file_sha, result_key
from warp_harness.daemon.options import RuntimeOptions


def _result(*deps: Path) -> dict:
    return {"status": "ok", "records": [], "deps": [[str(d.resolve()), file_sha(d)] for d in deps]}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    mod = tmp_path / "k.py"
    mod.write_text("x = 1\n")
    helper = tmp_path / "helper.py"
    helper.write_text("y = 2\n")
    return mod, helper


def test_hit_then_miss_when_a_dependency_changes(tmp_path: Path, files: tuple[Path, Path]) -> None:
    mod, helper = files
    cache = ResultCache(tmp_path)
    key = result_key(RuntimeOptions().to_dict())
    assert cache.lookup(mod, key) is None
    cache.store(mod, key, _result(mod, helper))
    assert cache.lookup(mod, key) == _result(mod, helper)
    helper.write_text("y = 3\n")
    assert cache.lookup(mod, key) is None
    assert cache.dependents(helper) == [mod.resolve()]


def test_key_covers_options(tmp_path: Path, files: tuple[Path, Path]) -> None:
    mod, _ = files
    cache = ResultCache(tmp_path)
    k1 = result_key(RuntimeOptions().to_dict())
    k2 = result_key(RuntimeOptions(fast_math=True).to_dict())
    k3 = result_key(RuntimeOptions(devices=("cpu", "cuda")).to_dict())
    assert len({k1, k2, k3}) == 3
    assert k1 == result_key(RuntimeOptions(timeout_s=5).to_dict())  # limits do not change verdicts
    cache.store(mod, k1, _result(mod))
    assert cache.lookup(mod, k2) is None


@pytest.mark.parametrize("damage", ["garbage", "truncate", "wrong-shape", "empty"])
def test_corrupt_files_are_discarded_and_rebuilt(
    tmp_path: Path, files: tuple[Path, Path], damage: str
) -> None:
    mod, _ = files
    cache = ResultCache(tmp_path)
    key = result_key(RuntimeOptions().to_dict())
    cache.store(mod, key, _result(mod))
    file = cache.file_for(mod)
    data = file.read_bytes()
    if damage == "garbage":
        file.write_bytes(b"\xc1\xc1 not msgpack")
    elif damage == "truncate":
        file.write_bytes(data[: len(data) // 2])
    elif damage == "wrong-shape":
        from warp_harness.daemon.protocol import packb

        file.write_bytes(packb({"schema": 1, "key": key, "path": str(mod.resolve()), "result": 7, "deps": 3}))
    else:
        file.write_bytes(b"")
    assert cache.lookup(mod, key) is None
    assert not file.exists()
    assert cache.stats.discarded == 1
    cache.store(mod, key, _result(mod))
    assert cache.lookup(mod, key) is not None


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.bin"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["f.bin"]
