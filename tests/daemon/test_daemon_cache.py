from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import FAST

from warp_harness import user_state
from warp_harness.daemon import cache as cache_module
from warp_harness.daemon import protocol as P
from warp_harness.daemon.cache import ResultCache, atomic_write_bytes, file_sha, result_key
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.protocol import packb, unpackb
from warp_harness.daemon.server import Daemon, DaemonThread


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


def test_write_behind_returns_before_the_write_and_readers_wait_for_it(
    tmp_path: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's store returns before the file is written; a lookup or a helper's dependents
    meanwhile wait for the write, so they see the latest store, as with a written file."""
    import threading

    mod, helper = files
    cache = ResultCache(tmp_path, write_behind=True)
    key = result_key(RuntimeOptions().to_dict())
    release = threading.Event()
    real_write = cache_module.atomic_write_bytes

    def held_write(path: Path, data: bytes, *, durable: bool = True) -> None:
        assert release.wait(10)
        real_write(path, data, durable=durable)

    monkeypatch.setattr(cache_module, "atomic_write_bytes", held_write)
    cache.store(mod, key, {**_result(mod, helper), "n": 1})
    cache.store(mod, key, {**_result(mod, helper), "n": 2})
    assert not cache.file_for(mod).exists()  # store returned; the write is held
    assert not cache.flush(timeout=0.05)
    threading.Timer(0.2, release.set).start()
    assert cache.lookup(mod, key) == {**_result(mod, helper), "n": 2}
    assert release.is_set() and cache.file_for(mod).is_file()
    assert cache.dependents(helper) == [mod.resolve()]
    fresh = ResultCache(tmp_path)  # only the file
    assert fresh.lookup(mod, key) == {**_result(mod, helper), "n": 2}


def test_write_behind_keeps_a_failed_write_and_the_next_store_still_writes(
    tmp_path: Path, files: tuple[Path, Path]
) -> None:
    mod, _ = files
    cache = ResultCache(tmp_path, write_behind=True)
    key = result_key(RuntimeOptions().to_dict())
    results = tmp_path / ".warp-harness" / "results"
    results.parent.mkdir()
    results.write_text("a file where the folder should be")
    cache.store(mod, key, _result(mod))
    assert cache.flush(timeout=10)
    assert cache.write_error is not None and "results" in cache.write_error
    assert cache.lookup(mod, key) is None  # nothing stored; nothing half-kept in memory
    results.unlink()
    cache.store(mod, key, _result(mod))
    assert cache.flush(timeout=10)
    assert ResultCache(tmp_path).lookup(mod, key) == _result(mod)


def test_a_written_behind_result_survives_the_process_exit(tmp_path: Path, files: tuple[Path, Path]) -> None:
    """The writer is not a daemon thread: a process that stores and exits at once still writes."""

    mod, _ = files
    key = result_key(RuntimeOptions().to_dict())
    script = (
        "import sys; from pathlib import Path; from warp_harness.daemon.cache import ResultCache\n"
        "ws = Path(sys.argv[1]); c = ResultCache(ws, write_behind=True)\n"
        "c.store(ws / 'k.py', sys.argv[2], {'status': 'ok', 'records': [], 'blob': b'x' * (32 << 20)})\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path), key], check=True, timeout=60)
    stored = ResultCache(tmp_path).lookup(mod, key)
    assert stored is not None and len(stored["blob"]) == 32 << 20


SAXPY = (Path(__file__).resolve().parents[2] / "examples" / "contracts" / "saxpy.py").read_text()


def _check(ws: Path, socket_path: Path) -> dict[str, Any]:
    """``check k.py`` through a real daemon (its socket), then the daemon stopped."""
    daemon = Daemon(
        ws, trust=True, runtime_overrides=FAST.to_dict(), socket_path=socket_path, watch=False, warmup=False,
        log=lambda s: None,
    )  # fmt: skip
    with DaemonThread(daemon) as t, P.Client(t.daemon.socket_path, timeout=300) as c:
        reply: dict[str, Any] = c.request("check", path="k.py")
    return reply


@pytest.mark.slow
def test_a_result_the_repository_ships_is_never_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Security round 2, finding 2: a repository shipped ``.warp-harness/results/<name>.msgpack``
    holding a ``pass`` for its failing kernel (the file name, key and dependency hashes are all
    computable from public facts), and the trusted daemon served it without running anything
    (``cached``, ``pass``). A result file now counts only with a tag made with this user's secret:
    the planted one (in the format the harness writes, tagged with the attacker's own secret) is
    ignored with a note, and the kernel runs and fails."""
    ws = tmp_path / "ws"
    ws.mkdir()
    module = ws / "k.py"
    module.write_text(SAXPY)
    attacker = tmp_path / "attacker-cache"
    monkeypatch.setenv(user_state.CACHE_ENV, str(attacker))  # the attacker's machine, its own secret
    first = _check(ws, tmp_path / "run" / "a.sock")
    assert first["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, first["records"]
    (file,) = (ws / ".warp-harness" / "results").glob("*.msgpack")
    module.write_text(SAXPY.replace("y[i] = a * x[i] + y[i]", "y[i] = a * x[i] - y[i]"))
    outer = unpackb(file.read_bytes())
    signed = "entry" in outer
    entry = unpackb(outer["entry"]) if signed else outer
    deps = [[str(module.resolve()), file_sha(module)]]  # the pass, now for the wrong kernel
    entry["deps"] = entry["result"]["deps"] = deps
    if signed:
        data = packb(entry)
        outer = {**outer, "entry": data, "tag": user_state.sign(data, purpose=cache_module.TAG_PURPOSE)}
    else:
        outer = entry
    file.write_bytes(packb(outer))
    monkeypatch.setenv(user_state.CACHE_ENV, str(tmp_path / "victim-cache"))
    caplog.clear()

    served = _check(ws, tmp_path / "run" / "v.sock")
    assert served["cached"] is False
    assert served["kernels"]["saxpy"]["validate"] == {"cpu": "fail"}, served["records"]
    assert "not written by this user's harness; ignored" in caplog.text
