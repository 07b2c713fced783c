"""The per-kernel judgements shared by the files of a run (`warp_harness.kernel_judgements`): the records
are those of judging every file afresh, a change to the kernel's module gives a new verdict, and the
entries go with the kernel's model."""

from __future__ import annotations

import gc
import textwrap
from pathlib import Path

from warp_harness import kernel_judgements
from warp_harness.batch import check_files
from warp_harness.config import Settings
from warp_harness.engine import check_bytes, check_paths
from warp_harness.model.project import ProjectIndex
from warp_harness.output.model import FileResult

# 24,800 floats of shared tiles: 99,200 bytes fit sm_86 at block_dim=128, not at 1024
TILES = """
import warp as wp


@wp.kernel
def stage(a: wp.array(dtype=float)):
    t = wp.tile_load(a, shape={n}, storage="shared")
    wp.tile_store(a, t)


def make(n: int = 4):
    @wp.kernel
    def made(a: wp.array(dtype=float)):
        t = wp.tile_load(a, shape=n * 8000, storage="shared")
        wp.tile_store(a, t)

    return made


staged = make(4)
"""

LAUNCHER = """
import warp as wp
from . import tiles
from .tiles import staged


def run(a):
    wp.launch_tiled(tiles.stage, dim=1, inputs=[a], block_dim={block_dim})
    wp.launch_tiled(tiles.stage, dim=1, inputs=[a], block_dim=128)
    wp.launch_tiled(staged, dim=1, inputs=[a], block_dim={block_dim})
"""


def _workspace(root: Path, n: int = 24800) -> Path:
    files = {
        "pkg/__init__.py": "",
        "pkg/tiles.py": TILES.format(n=n),
        # three files launching the same kernels: the second and third reuse the first one's judgements
        "pkg/run_a.py": LAUNCHER.format(block_dim=1024),
        "pkg/run_b.py": LAUNCHER.format(block_dim=1024),
        "pkg/run_c.py": LAUNCHER.format(block_dim=64),
        "pkg/run_d.py": LAUNCHER.format(block_dim=1024),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root / "pkg"


def _records(results: list[FileResult]) -> list[tuple[str, str, int, int, str]]:
    return [
        (Path(r.location.path).name, r.rule, r.location.line, r.location.col, r.message)
        for x in results
        for r in x.records
    ]


def test_shared_judgements_give_the_records_of_judging_each_file_afresh(tmp_path: Path) -> None:
    pkg = _workspace(tmp_path)
    kernel_judgements.clear()
    shared = _records(check_files([pkg], jobs=1))
    assert kernel_judgements.held() > 0  # the run did go through the cache
    # afresh: every file checked with nothing judged before it
    alone = []
    for path in sorted(pkg.glob("*.py")):
        kernel_judgements.clear()
        alone.extend(_records(check_paths([path])))
    assert shared == alone
    wh015 = [(name, line) for name, rule, line, _, _ in shared if rule == "WH015"]
    # block_dim=1024 exceeds the budget, 128 and 64 fit: only the 1024 launches of run_a, run_b, run_d;
    # and the factory's kernel (`make(4)`, called once with a constant: WH015 follows it), whose
    # 32,000-float tile (128,000 bytes) exceeds sm_86's shared memory at any block_dim
    assert wh015 == [("run_a.py", 7), ("run_b.py", 7), ("run_d.py", 7), ("tiles.py", 13)]


def test_a_change_to_the_kernels_module_is_judged_anew(tmp_path: Path) -> None:
    pkg = _workspace(tmp_path)
    index = ProjectIndex.for_paths([pkg])
    run = pkg / "run_a.py"
    data = run.read_bytes()

    def wh015_lines() -> list[int]:
        result = check_bytes(data, str(run), Settings(), project=index.view(str(run)))
        return [r.location.line for r in result.records if r.rule == "WH015"]

    assert wh015_lines() == [7]
    # a quarter of the tiles fit at any block_dim: the judgement made above must not be reused
    index.set_text(pkg / "tiles.py", textwrap.dedent(TILES.format(n=6200)).lstrip())
    assert wh015_lines() == []
    index.set_text(pkg / "tiles.py", None)
    assert wh015_lines() == [7]


def test_judgements_go_with_their_model(tmp_path: Path) -> None:
    pkg = _workspace(tmp_path)
    kernel_judgements.clear()
    index = ProjectIndex.for_paths([pkg])
    run = pkg / "run_a.py"
    check_bytes(run.read_bytes(), str(run), Settings(), project=index.view(str(run)))
    assert kernel_judgements.held() > 0
    del index
    gc.collect()
    assert kernel_judgements.held() == 0


# WH011: a kernel of one module writing `a[i]` unguarded, launched from three files (two past the end)
FILL = """
import warp as wp


@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
{guard}    a[i] = 1.0
"""

FILL_LAUNCHER = """
import warp as wp
from .fill import fill


def run(n):
    a = wp.zeros(n, dtype=float)
    wp.launch(fill, dim=n + {extra}, inputs=[a])
"""


def _fill_workspace(root: Path) -> Path:
    files = {
        "pkg/__init__.py": "",
        "pkg/fill.py": FILL.format(guard=""),
        "pkg/run_a.py": FILL_LAUNCHER.format(extra=1),
        "pkg/run_b.py": FILL_LAUNCHER.format(extra=0),
        "pkg/run_c.py": FILL_LAUNCHER.format(extra=2),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip(), encoding="utf-8")
    return root / "pkg"


def test_shared_wh011_judgements_give_the_records_of_judging_each_file_afresh(tmp_path: Path) -> None:
    pkg = _fill_workspace(tmp_path)
    kernel_judgements.clear()
    shared = _records(check_files([pkg], jobs=1))
    alone = []
    for path in sorted(pkg.glob("*.py")):
        kernel_judgements.clear()
        alone.extend(_records(check_paths([path])))
    assert shared == alone
    assert [(name, line) for name, rule, line, _, _ in shared if rule == "WH011"] == [
        ("run_a.py", 7),
        ("run_c.py", 7),
    ]


def test_a_guard_added_to_the_kernel_is_judged_anew_by_wh011(tmp_path: Path) -> None:
    pkg = _fill_workspace(tmp_path)
    index = ProjectIndex.for_paths([pkg])
    run = pkg / "run_a.py"
    data = run.read_bytes()

    def wh011_lines() -> list[int]:
        result = check_bytes(data, str(run), Settings(), project=index.view(str(run)))
        return [r.location.line for r in result.records if r.rule == "WH011"]

    assert wh011_lines() == [7]
    index.set_text(pkg / "fill.py", FILL.format(guard="    if i >= a.shape[0]:\n        return\n").lstrip())
    assert wh011_lines() == []
    index.set_text(pkg / "fill.py", None)
    assert wh011_lines() == [7]
