from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.daemon import repros
from warp_harness.daemon.results import FailingCase

FAILURE_DICT = {
    "kernel": "k",
    "device": "cpu",
    "size": 3,
    "seed": 7,
    "edge_case": None,
    "rule": "WHD020",
    "message": "m",
    "inputs": None,
}
FAILURE = FailingCase.from_dict(FAILURE_DICT)


def test_store_and_load(tmp_path: Path) -> None:
    mod = tmp_path / "pkg" / "k.py"
    mod.parent.mkdir()
    mod.write_text("")
    f1 = repros.store(tmp_path, mod, FAILURE, {"mode": "release"})
    f2 = repros.store(tmp_path, mod, FailingCase.from_dict(dict(FAILURE_DICT, size=2)), {"mode": "release"})
    assert f1 == f2  # same kernel/device/rule: replaced, the library does not grow per save
    assert f1.parent == tmp_path / ".warp-harness" / "repros"
    cases, corrupt = repros.load_all(tmp_path)
    assert corrupt == [] and len(cases) == 1
    assert cases[0].case["path"] == "pkg/k.py" and cases[0].case["size"] == 2
    (f1.parent / "bad.msgpack").write_bytes(b"junk")
    cases, corrupt = repros.load_all(tmp_path)
    assert len(cases) == 1 and [c.name for c in corrupt] == ["bad.msgpack"]


def test_never_writes_outside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "k.py").write_text("")
    with pytest.raises(repros.OutsideWorkspaceError):
        repros.store(ws, outside / "k.py", FAILURE, {})
    (ws / "k.py").write_text("")
    (ws / ".warp-harness").symlink_to(outside, target_is_directory=True)
    with pytest.raises(repros.OutsideWorkspaceError):
        repros.store(ws, ws / "k.py", FAILURE, {})
    assert list(outside.iterdir()) == [outside / "k.py"]
