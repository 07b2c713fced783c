"""The worker's import step (daemon/steps/load.py) in this process, real Warp on the CPU: the
kernels' positions the supervisor sends are used only for the text they were parsed from, and
the one walk of ``sys.modules`` per save still forgets and records every workspace module."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from warp_harness.daemon.discovery import kernel_positions
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.steps import JobSpec, LoadedModule
from warp_harness.daemon.steps.load import load
from warp_harness.daemon.worker import _known_positions

pytestmark = pytest.mark.slow

MODULE = textwrap.dedent(
    """
    import warp as wp
    from helper_mod import FACTOR


    @wp.kernel
    def scale(x: wp.array(dtype=float)):
        i = wp.tid()
        x[i] = x[i] * float(FACTOR)
    """
)


def _load(path: Path, positions: object = None) -> LoadedModule:
    known, known_sha256 = _known_positions(positions)
    spec = JobSpec(
        id=1,
        path=path.resolve(),
        display_path=path.name,
        workspace=path.parent.resolve(),
        options=RuntimeOptions(),
        known_positions=known,
        known_positions_sha256=known_sha256,
    )
    return load(spec, lambda **_: None)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def module(tmp_path: Path) -> Iterator[Path]:
    """The module and its helper in a workspace of their own (a worker serves one workspace:
    the modules of another test's are forgotten here)."""
    (tmp_path / "helper_mod.py").write_text("FACTOR = 2\n")
    path = tmp_path / "scaled_mod.py"
    path.write_text(MODULE)
    for name in ("helper_mod", "scaled_mod"):
        sys.modules.pop(name, None)
    yield path
    for name in ("helper_mod", "scaled_mod"):
        sys.modules.pop(name, None)


def test_positions_sent_for_this_text_are_used(module: Path) -> None:
    sent = {"sha256": _sha(MODULE), "kernels": {"scale": [40, 4, 9]}}
    job = _load(module, sent)
    assert job.ok
    assert (job.kernels["scale"].line, job.kernels["scale"].col) == (40, 4)


def test_positions_of_another_text_are_parsed_again(module: Path) -> None:
    sent = {"sha256": _sha(MODULE + "\n# an older save\n"), "kernels": {"scale": [40, 4, 9]}}
    job = _load(module, sent)
    assert job.ok
    assert (job.kernels["scale"].line, job.kernels["scale"].col) == kernel_positions(MODULE)["scale"][:2]
    assert job.kernels["scale"].line == 7


@pytest.mark.parametrize(
    "sent",
    [
        {"sha256": 1, "kernels": {}},
        {"sha256": "x", "kernels": {"scale": [1, 2]}},
        {"sha256": "x", "kernels": {"scale": [True, 2, 3]}},
        ["not", "a", "map"],
    ],
)
def test_malformed_positions_are_ignored(sent: object) -> None:
    assert _known_positions(sent) == (None, None)


def test_every_save_forgets_and_records_workspace_modules(module: Path) -> None:
    first = _load(module)
    assert first.ok
    helper = str((module.parent / "helper_mod.py").resolve())
    assert helper in dict(first.deps)
    assert first.module.FACTOR == 2
    (module.parent / "helper_mod.py").write_text("FACTOR = 3\n")
    second = _load(module)
    assert second.ok
    assert second.module.FACTOR == 3  # the helper was purged and imported again
    assert dict(second.deps)[helper] == hashlib.sha256(b"FACTOR = 3\n").hexdigest()
