"""The capture store is data, not code: signed indexes, verified content-addressed arrays, a byte
budget. A planted, altered or corrupt capture is refused with a reason and never executed."""

from __future__ import annotations

import json
import os
import pickle
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from warp_harness import user_state
from warp_harness.capture.identity import kernel_sources
from warp_harness.capture.store import CaptureRefused, CaptureStore, KernelIndex, Refusal


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(user_state.CACHE_ENV, str(tmp_path / "cache"))


def _launch(store: CaptureStore, lid: str, n: int, used_at: float) -> dict[str, Any]:
    x, y = store.put_blob(np.arange(n, dtype=np.float32))[0], store.put_blob(np.zeros(n, np.float32))[0]
    after = store.put_blob(np.arange(n, dtype=np.float32) * 2)[0]
    return {
        "id": lid,
        "device": "cpu",
        "dim": [n],
        "block_dim": None,
        "args": [
            {"name": "x", "kind": "array", "dtype": "float32", "shape": [n], "blob": x, "bytes": 4 * n},
            {"name": "y", "kind": "array", "dtype": "float32", "shape": [n], "blob": y, "bytes": 4 * n},
        ],
        "written": ["y"],
        "baseline": {"y": after},
        "provenance": {"file": "k.py", "line": 3},
        "used_at": used_at,
    }


def _index(store: CaptureStore, launches: list[dict[str, Any]], name: str = "scale") -> Path:
    return store.write_index({"kernel": {"path": "k.py", "name": name, "digest": "d"}, "launches": launches})


def test_a_signed_index_loads_and_its_blobs_verify(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    file = _index(store, [_launch(store, "a1", 8, 1.0)])
    (entry,) = list(store.indexes())
    assert isinstance(entry, KernelIndex) and entry.file == file and entry.name == "scale"
    np.testing.assert_array_equal(store.blob(entry.launches[0]["baseline"]["y"]), np.arange(8) * 2)


def test_an_index_signed_by_another_secret_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture shipped in a repository or planted by another user carries someone else's tag."""
    store = CaptureStore(tmp_path)
    monkeypatch.setenv(user_state.CACHE_ENV, str(tmp_path / "someone-else"))
    _index(store, [_launch(store, "a1", 8, 1.0)])
    monkeypatch.setenv(user_state.CACHE_ENV, str(tmp_path / "cache"))
    (entry,) = list(store.indexes())
    assert isinstance(entry, Refusal) and "wrong signature" in entry.reason


def test_unsigned_corrupt_and_altered_indexes_are_refused(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    file = _index(store, [_launch(store, "a1", 8, 1.0)])
    data = json.loads(file.read_text())
    data["launches"][0]["dim"] = [10**9]  # an edit after signing
    file.write_text(json.dumps(data))
    (file.parent / "unsigned.json").write_text(json.dumps({k: v for k, v in data.items() if k != "tag"}))
    (file.parent / "corrupt.json").write_bytes(b"\x00{not json")
    reasons = sorted(e.reason for e in store.indexes() if isinstance(e, Refusal))
    assert len(reasons) == 3
    assert any("unsigned" in r for r in reasons) and any("corrupt" in r for r in reasons)
    assert any("wrong signature" in r for r in reasons)


def test_an_altered_blob_is_refused(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    sha, _ = store.put_blob(np.ones(4, np.float32))
    path = store.root / "blobs" / f"{sha}.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CaptureRefused, match="altered"):
        store.blob(sha)


class _Boom:
    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {os.environ['WH_PWNED']}",))


def test_a_pickled_array_is_never_unpickled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An object array in an .npy file is a pickle; loading it with pickle allowed would run code.
    Even named by its own hash (so the content check passes) it is refused, and the code never runs."""
    store = CaptureStore(tmp_path)
    marker = tmp_path / "pwned"
    monkeypatch.setenv("WH_PWNED", str(marker))
    import hashlib
    import io

    buf = io.BytesIO()
    np.save(buf, np.array([_Boom()], dtype=object), allow_pickle=True)
    data = buf.getvalue()
    assert b"system" in data and pickle.PROTO  # it really is a pickle payload
    sha = hashlib.sha256(data).hexdigest()
    (store.root / "blobs").mkdir(parents=True)
    (store.root / "blobs" / f"{sha}.npy").write_bytes(data)
    with pytest.raises(CaptureRefused, match=r"plain \.npy"):
        store.blob(sha)
    assert not marker.exists()


def test_a_linked_blob_is_refused(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    sha, _ = store.put_blob(np.ones(4, np.float32))
    path = store.root / "blobs" / f"{sha}.npy"
    target = tmp_path / "elsewhere.npy"
    path.rename(target)
    path.symlink_to(target)
    with pytest.raises(CaptureRefused):
        store.blob(sha)


def test_prune_evicts_the_least_recently_used_launches(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    now = time.time()
    _index(store, [_launch(store, "old", 4096, now - 100), _launch(store, "new", 4000, now)], name="a")
    _index(store, [_launch(store, "mid", 3000, now - 50)], name="b")
    sizes = store.referenced([e for e in store.indexes() if isinstance(e, KernelIndex)])
    total = sum(sizes.values())
    evicted, freed = store.prune(total - 1)  # one launch too many
    assert evicted == 1 and freed > 0
    left = {launch["id"] for e in store.indexes() if isinstance(e, KernelIndex) for launch in e.launches}
    assert left == {"new", "mid"}
    kept = store.referenced([e for e in store.indexes() if isinstance(e, KernelIndex)])
    assert {p.stem for p in (store.root / "blobs").iterdir()} == set(kept)
    assert store.prune(0)[0] == 2 and not any(store.indexes())


def test_kernel_digest_follows_the_kernel_and_its_helpers() -> None:
    base = (
        "import warp as wp\n\n@wp.func\ndef h(v: float):\n    return v * 2.0\n\n"
        "@wp.kernel\ndef k(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    y[i] = h(x[i])\n\n"
        "@wp.kernel\ndef other(y: wp.array(dtype=float)):\n    y[0] += 1.0\n"
    )
    first = kernel_sources(base)
    assert first["k"].write_only == {"y"} and first["other"].write_only == frozenset()
    moved = kernel_sources("# a comment\n" + base)
    assert moved["k"].digest == first["k"].digest  # a line moved is the same kernel
    helper = kernel_sources(base.replace("v * 2.0", "v * 3.0"))
    assert helper["k"].digest != first["k"].digest and helper["other"].digest == first["other"].digest


def test_prune_and_list_from_the_command_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = CaptureStore(tmp_path)
    _index(store, [_launch(store, "a1", 8, 1.0)])
    planted = store.root / "kernels" / "planted.json"
    planted.write_text(json.dumps({"kernel": {"path": "k.py", "name": "x"}, "launches": [], "tag": "0" * 64}))
    stray = store.root / "blobs" / ("f" * 64 + ".npy")
    stray.write_bytes(b"not referenced")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "warp_harness", "capture", *args, "--workspace", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )

    listing = cli("--list")
    assert "REFUSED .warp-harness/captures/kernels/planted.json: wrong signature" in listing.stdout
    assert "k.py::scale  1 launch(es)" in listing.stdout
    pruned = cli("--prune")
    assert pruned.returncode == 0 and "1 refused index(es) deleted" in pruned.stdout, pruned.stdout
    assert not planted.exists() and not stray.exists()
    assert [e.name for e in store.indexes() if isinstance(e, KernelIndex)] == ["scale"]


def test_the_digest_covers_every_definition_of_every_helper_the_kernel_reaches() -> None:
    """A save replays a kernel when its digest changed: an edit of a helper's helper, or of the second
    definition of a helper Warp keeps as an overload, is an edit of what the kernel runs."""
    base = (
        "import warp as wp\n\n"
        "@wp.func\ndef inner(v: float):\n    return v + 1.0\n\n"
        "@wp.func\ndef outer(v: float):\n    return inner(v) * 2.0\n\n"
        "@wp.func\ndef outer(v: int):\n    return v * 3\n\n"
        "@wp.func\ndef unrelated(v: float):\n    return v\n\n"
        "@wp.kernel\ndef k(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    y[i] = outer(x[i])\n"
    )
    first = kernel_sources(base)["k"].digest
    assert kernel_sources(base.replace("v + 1.0", "v + 2.0"))["k"].digest != first  # a helper's helper
    assert kernel_sources(base.replace("v * 3", "v * 4"))["k"].digest != first  # the second definition
    assert kernel_sources(base.replace("return v\n", "return -v\n"))["k"].digest == first  # not reached
    # calls that loop (a recursive helper) end
    looping = base.replace("return inner(v) * 2.0", "return inner(outer(v)) * 2.0")
    assert kernel_sources(looping)["k"].digest != first
