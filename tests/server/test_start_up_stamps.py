"""The start-up process answers a document from the result cache through the entry's stamp, without the
workspace model, while no folder the model read changed (server/start_up_stamps.py); otherwise through the
model, as before. The start-up process's own code (`_records`) on real files and a real cache folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_start_up_process import SIM
from test_workspace_model import KERNELS

from warp_harness.check_cache import CheckCache
from warp_harness.model.project import MAX_INDEXED_BYTES, ProjectIndex
from warp_harness.record import Record
from warp_harness.server import start_up_stamps
from warp_harness.server.analysis import StaticTier
from warp_harness.server.start_up_process import _records, _Workspace, spare_core

CODES = {"WH004", "WH006", "WH007"}  # WH007: a launch into the other module


@pytest.fixture
def sim(tmp_path: Path) -> Path:
    package = tmp_path / "ws" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_text(KERNELS)
    (package / "sim.py").write_text(SIM)
    return package / "sim.py"


@pytest.fixture
def cache(tmp_path: Path) -> CheckCache:
    return CheckCache(tmp_path / "cache", table_identity="test")


def _start(root: Path) -> _Workspace:
    """A fresh start-up process's state, its workspace folders named by the parent's first request."""
    workspace = _Workspace(StaticTier(report=lambda message: None))
    workspace.roots = [str(root)]
    return workspace


def _answer(root: Path, cache: CheckCache, source: Path) -> tuple[list[Record], bool]:
    """A fresh start-up process's answer for ``source``; whether it made the workspace model for it."""
    workspace = _start(root)
    records = _records(workspace, cache, source.read_text(), str(source))
    return records, workspace.tier.project is not None


def test_an_unchanged_workspace_is_answered_by_the_stamp_without_the_model(
    sim: Path, cache: CheckCache
) -> None:
    root = sim.parents[1]
    first, modelled = _answer(root, cache, sim)
    assert {r.rule for r in first} == CODES and modelled  # analysed in the model; entry and stamp stored
    assert len(list((cache.root / start_up_stamps.FOLDER).iterdir())) == 1
    again, modelled = _answer(root, cache, sim)
    assert again == first and not modelled


def test_an_entry_confirmed_by_the_model_gets_a_stamp(sim: Path, cache: CheckCache) -> None:
    root = sim.parents[1]
    first, _ = _answer(root, cache, sim)
    for stamp in (cache.root / start_up_stamps.FOLDER).iterdir():
        stamp.unlink()
    assert _answer(root, cache, sim) == (first, True)  # no stamp: the model confirms the entry...
    assert _answer(root, cache, sim) == (first, False)  # ...and writes one


def test_a_changed_module_is_analysed_again(sim: Path, cache: CheckCache) -> None:
    root = sim.parents[1]
    first, _ = _answer(root, cache, sim)
    kernels = sim.with_name("kernels.py")
    kernels.write_text(kernels.read_text().replace("@wp.kernel", "@wp.kernel  # edited", 1))
    again, modelled = _answer(root, cache, sim)
    assert modelled and again == first  # the same findings, from an analysis in the model


@pytest.mark.parametrize(
    "change",
    [
        "a module added beside it",
        "a module removed",
        "a subpackage added",
        "the folder above becomes a package",
    ],
)
def test_a_changed_folder_listing_voids_the_stamp(sim: Path, cache: CheckCache, change: str) -> None:
    """A new file can change which file a module name resolves to (or make one that was not found): no
    stamp answers then, whatever its modules' digests say."""
    root = sim.parents[1]
    folder = sim.parent
    (folder / "spare.py").write_text("X = 1\n")
    _answer(root, cache, sim)
    stamps = cache.root / start_up_stamps.FOLDER
    (key,) = (p.name for p in stamps.iterdir())
    texts = {str(sim): sim.read_text()}
    assert start_up_stamps.digests(stamps, key, [str(root)], texts) is not None
    if change == "a module added beside it":
        (folder / "other.py").write_text("")
    elif change == "a module removed":
        (folder / "spare.py").unlink()
    elif change == "a subpackage added":
        (folder / "sub").mkdir()
    else:
        (root.parent / "__init__.py").write_text("")
    assert start_up_stamps.digests(stamps, key, [str(root)], texts) is None
    _, modelled = _answer(root, cache, sim)
    assert modelled


def test_a_stamp_is_for_its_workspace_folders_only(sim: Path, cache: CheckCache) -> None:
    root = sim.parents[1]
    _answer(root, cache, sim)
    stamps = cache.root / start_up_stamps.FOLDER
    (key,) = (p.name for p in stamps.iterdir())
    texts = {str(sim): sim.read_text()}
    assert start_up_stamps.digests(stamps, key, [str(sim.parent)], texts) is None
    assert start_up_stamps.digests(stamps, key, [str(root), str(sim.parent)], texts) is None


@pytest.mark.parametrize("damage", ["garbage", "link", "wrong shape"])
def test_a_damaged_stamp_is_not_used(sim: Path, cache: CheckCache, tmp_path: Path, damage: str) -> None:
    root = sim.parents[1]
    first, _ = _answer(root, cache, sim)
    stamps = cache.root / start_up_stamps.FOLDER
    (stamp,) = stamps.iterdir()
    good = stamp.read_bytes()
    stamp.unlink()
    if damage == "garbage":
        stamp.write_bytes(b"\xc1\xff" + good[:10])
    elif damage == "link":
        (tmp_path / "elsewhere").write_bytes(good)
        stamp.symlink_to(tmp_path / "elsewhere")
    else:
        stamp.write_bytes(b"\x93\x01\x02\x03")  # a msgpack list, not a map
    assert start_up_stamps.digests(stamps, stamp.name, [str(root)], {str(sim): sim.read_text()}) is None
    assert _answer(root, cache, sim) == (first, True)


def test_digests_are_the_workspace_models(sim: Path) -> None:
    """A stamp's digest of a module is the one the model compares (files read and open documents alike)."""
    assert start_up_stamps.MAX_MODULE_BYTES == MAX_INDEXED_BYTES
    index = ProjectIndex.for_paths([sim.parents[1]])
    kernels = sim.with_name("kernels.py")
    module = index.module_of(kernels)
    assert module is not None
    assert index.digest(module) == start_up_stamps.digest(kernels.read_bytes())
    opened = "# edited in the editor, not saved: é\n" + KERNELS
    index.set_text(kernels, opened)
    assert index.digest(module) == start_up_stamps.digest(opened.encode("utf-8"))
    assert os.path.isabs(str(kernels))


@pytest.mark.parametrize(
    ("pressure", "load", "cores", "spare"),
    [
        (
            "some avg10=0.40 avg60=1.00 avg300=0.5 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
            9.0,
            2,
            True,
        ),
        (
            "some avg10=99.75 avg60=99.81 avg300=99.83 total=1\nfull avg10=0.00 avg60=0.00 total=0\n",
            0.1,
            2,
            False,
        ),
        (None, 0.7, 2, True),
        (None, 1.5, 2, False),
        ("garbage", 3.0, 8, True),
        (None, None, 2, True),
    ],
)
def test_the_start_up_process_works_ahead_only_with_a_core_to_spare(
    pressure: str | None, load: float | None, cores: int, spare: bool
) -> None:
    """Ahead of a request (warm-up, the workspace model) only when the CPU pressure (else the load average)
    says a core is free: on a busy machine that CPU would delay every first diagnostics."""
    assert spare_core(pressure, load, cores) is spare
