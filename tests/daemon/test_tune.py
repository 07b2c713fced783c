"""`warp-harness tune` (skeleton): tunables read statically, constants rewritten, candidates the
profile forbids dropped by the static rules, the rest validated, timed, and a Pareto front."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES

from warp_harness.contract import Contract
from warp_harness.daemon.tune import Candidate, candidates, pareto, read_tunables, rewrite, run_tune

SOURCE = textwrap.dedent(
    """
    import numpy as np
    import warp as wp
    from warp_harness.contract import Contract

    ITEMS = wp.constant(2)  # elements per thread
    TILE = wp.constant(16)
    THREADS: int = 64


    @wp.kernel
    def scale_chunks(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        t = wp.tid()
        for k in range(ITEMS):
            i = t * ITEMS + k
            y[i] = 2.0 * x[i]


    @wp.kernel
    def square(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        i, j = wp.tid()
        x = wp.tile_load(a, shape=(TILE, TILE), offset=(i * TILE, j * TILE))
        y = wp.tile_matmul(x, x)
        wp.tile_store(out, y, offset=(i * TILE, j * TILE))


    contract = Contract(
        kernel=scale_chunks,
        reference=lambda x: {"y": 2.0 * x},
        inputs=lambda n, rng: {"x": rng.random(n, dtype=np.float32), "y": np.empty(n, np.float32)},
        outputs=["y"],
        sizes=[64, 1024],
        dim=lambda n, inputs: n // int(ITEMS),
        tunables={"ITEMS": [1, 4], "TILE": [16, 256]},
    )
    """
).lstrip()


def test_read_candidates_and_rewrite() -> None:
    assert read_tunables(SOURCE) == {"scale_chunks": {"ITEMS": [1, 4], "TILE": [16, 256]}}
    combos = candidates({"ITEMS": [1, 4], "TILE": [16, 256]})
    assert combos == [
        {"ITEMS": 1, "TILE": 16},
        {"ITEMS": 1, "TILE": 256},
        {"ITEMS": 4, "TILE": 16},
        {"ITEMS": 4, "TILE": 256},
    ]
    out = rewrite(SOURCE, {"ITEMS": 8, "THREADS": 128})
    assert "ITEMS = wp.constant(8)  # elements per thread" in out
    assert "THREADS: int = 128" in out
    assert "TILE = wp.constant(16)" in out
    with pytest.raises(KeyError):
        rewrite(SOURCE, {"NOPE": 1})


def test_contract_checks_its_tunables() -> None:
    def make(tunables: object) -> Contract:
        return Contract(kernel="k", reference=abs, inputs=lambda n, r: {}, outputs=["y"], tunables=tunables)  # type: ignore[arg-type]

    assert make({"TILE_M": [16, 32]}).tunables == {"TILE_M": [16, 32]}
    with pytest.raises(ValueError):
        make({"TILE M": [1]})
    with pytest.raises(ValueError):
        make({"TILE_M": []})


def test_pareto_front() -> None:
    rows = [
        Candidate({"A": 1}, "timed", median_s=3.0),
        Candidate({"A": 2}, "timed", median_s=2.0),
        Candidate({"A": 4}, "timed", median_s=2.5),  # slower and costlier than A=2
        Candidate({"A": 8}, "rejected", reasons=["WH015"]),
    ]
    assert [r.config["A"] for r in pareto(rows)] == [2, 1]


@pytest.mark.slow
def test_tune_drops_what_the_profile_forbids_and_times_the_rest(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\n")
    path = tmp_path / "chunks.py"
    path.write_text(SOURCE, encoding="utf-8")
    kernel, rows = run_tune(
        path,
        trust=True,
        target="sm_86",
        runtime_overrides={"bench_repeats": 3, "bench_max_time_s": 0.05, "seed": 1},
    )
    assert kernel == "scale_chunks"
    by = {(r.config["ITEMS"], r.config["TILE"]): r for r in rows}
    for items in (1, 4):
        assert by[(items, 256)].status == "rejected"  # 2 x 256 KiB of tiles > sm_86's 99 KiB
        assert any("WH015" in reason for reason in by[(items, 256)].reasons)
        assert by[(items, 16)].status == "timed" and (by[(items, 16)].median_s or 0) > 0
    assert all(r.status != "timed" or r.config["TILE"] == 16 for r in pareto(rows))
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["chunks.py"]  # candidates removed


def test_tune_needs_trust(tmp_path: Path) -> None:
    from warp_harness.daemon.benchcmd import NotTrusted

    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\n")
    shutil.copy(EXAMPLES / "tune_chunks.py", tmp_path / "tune_chunks.py")
    with pytest.raises(NotTrusted):
        run_tune(tmp_path / "tune_chunks.py")


def small_tile_gemm(tmp_path: Path) -> Path:
    """The tile GEMM example at 128x128 with four candidates, in a trusted workspace: TILE_M 16
    or 32, TILE_K 16 or 512 (TILE_N 32, BLOCK_DIM 64)."""
    source = (EXAMPLES / "tile_gemm_tune.py").read_text()
    source = source.replace('"TILE_M": [32, 64]', '"TILE_M": [16, 32]').replace(
        '"TILE_N": [32, 64]', '"TILE_N": [32]'
    )
    source = source.replace('"TILE_K": [16, 32, 256]', '"TILE_K": [16, 512]')
    source = source.replace('"BLOCK_DIM": [64, 128, 256]', '"BLOCK_DIM": [64]')
    source = source.replace('os.environ.get("WH_TILE_GEMM_N", "256")', '"128"')
    path = tmp_path / "gemm.py"
    path.write_text(source)
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\ntrust = true\n")
    return path


@dataclass(frozen=True)
class GemmTune:
    """A sequential tune of `small_tile_gemm` in a workspace of its own: what `run_tune` returned."""

    path: Path
    kernel: str
    rows: list[Candidate]


@pytest.fixture(scope="module")
def gemm_tuned(tmp_path_factory: pytest.TempPathFactory) -> GemmTune:
    """One sequential tune of the small tile GEMM for the module: it compiles every candidate (the
    module's slowest step), and both tests below read its rows without changing them."""
    path = small_tile_gemm(tmp_path_factory.mktemp("gemm"))
    kernel, rows = run_tune(path, target="sm_86", runtime_overrides={"bench_repeats": 5})
    return GemmTune(path, kernel, rows)


def test_tile_gemm_tuning_on_the_cpu(gemm_tuned: GemmTune) -> None:
    """Warp's tile GEMM as a tiled contract: every candidate launched with wp.launch_tiled and its
    block_dim; one the target's shared memory forbids is dropped by WH015 before it runs; the
    current configuration is measured and marked; the result is stored for the editor."""
    import json

    from warp_harness.daemon.tune import best, report, store_result

    path, kernel, rows = gemm_tuned.path, gemm_tuned.kernel, gemm_tuned.rows
    tmp_path = path.parent
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["gemm.py"]  # candidates removed
    by_config = {(r.config["TILE_M"], r.config["TILE_K"]): r for r in rows}
    assert kernel == "tile_gemm" and len(rows) == 4
    forbidden = by_config[(32, 512)]
    assert forbidden.status == "rejected" and "WH015" in forbidden.reasons[0]
    assert forbidden.shared_bytes is not None and forbidden.shared_bytes > 99 * 1024
    current = by_config[(32, 16)]
    assert current.current and current.status == "timed" and current.shared_bytes == 8 * 1024
    assert by_config[(16, 16)].status == "timed"
    # K = 128 < TILE_K = 512: no tile loaded, C stays zero; validation catches it before timing
    assert by_config[(16, 512)].status == "validate:fail"
    winner = best(rows)
    assert winner is not None and winner.config["TILE_K"] == 16
    assert "(current)" in report(kernel, rows)
    stored = store_result(tmp_path, path, kernel, rows, "sm_86")
    data = json.loads(stored.read_text())
    assert stored.parent == tmp_path / ".warp-harness" / "tune"
    assert data["best"]["config"] == winner.config and data["current"]["config"] == current.config
    assert data["speedup"] == pytest.approx(current.median_s / winner.median_s)


def test_pareto_front_with_registers() -> None:
    rows = [
        Candidate({"A": 1}, "timed", median_s=1.0, shared_bytes=1024, registers=96),
        Candidate({"A": 2}, "timed", median_s=2.0, shared_bytes=1024, registers=32),
        Candidate({"A": 3}, "timed", median_s=2.5, shared_bytes=1024, registers=64),  # beaten by A=2
        Candidate({"A": 4}, "timed", median_s=3.0, shared_bytes=1024),  # registers unknown: 2 axes
    ]
    # the fastest stays on the front although it needs the most registers
    assert [r.config["A"] for r in pareto(rows)] == [1, 2]
    assert rows[0].to_dict()["registers"] == 96


def test_tile_gemm_tuning_in_parallel_matches_sequential(gemm_tuned: GemmTune, tmp_path: Path) -> None:
    """--jobs 2: candidates compiled and validated two at a time, then timed one by one; each
    candidate ends up classified as the sequential run (the module's) classifies it."""
    path = small_tile_gemm(tmp_path)
    seq = gemm_tuned.rows
    kernel, par = run_tune(path, target="sm_86", runtime_overrides={"bench_repeats": 5}, jobs=2)
    assert kernel == "tile_gemm"
    statuses = {(r.config["TILE_M"], r.config["TILE_K"]): r.status for r in par}
    assert statuses == {(r.config["TILE_M"], r.config["TILE_K"]): r.status for r in seq}
    assert statuses == {
        (16, 16): "timed",
        (32, 16): "timed",
        (16, 512): "validate:fail",
        (32, 512): "rejected",
    }
    assert all(r.median_s and r.median_s > 0 for r in par if r.status == "timed")
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["gemm.py"]  # candidates removed


def test_tune_never_writes_through_a_shipped_link(tmp_path: Path) -> None:
    """Security round 2, finding 5: a workspace shipped ``_wh_tune_<stem>_<n>.py`` symlinks to files
    outside the tree, and ``warp-harness tune --trust`` (the repository's own ``trust = true``
    counts for the command line) wrote its candidates through them: the outside files were
    overwritten (or created, through a dangling link). The candidates are now created with
    O_EXCL|O_NOFOLLOW under free names; the links and their targets are left as they were."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text("[tool.warp-harness]\ntrust = true\n")
    (ws / "chunks.py").write_text(SOURCE, encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    for n in range(6):
        target = outside / f"victim{n}.txt"
        if n != 5:  # the last link dangles: following it would create its target
            target.write_text(f"precious {n}\n")
        (ws / f"_wh_tune_chunks_{n}.py").symlink_to(target)
    done = subprocess.run(
        [sys.executable, "-m", "warp_harness", "tune", "chunks.py", "--target", "sm_86", "--repeats", "3"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert [(outside / f"victim{n}.txt").read_text() for n in range(5)] == [
        f"precious {n}\n" for n in range(5)
    ]
    assert sorted(p.name for p in outside.iterdir()) == [f"victim{n}.txt" for n in range(5)]
    assert done.returncode == 0, done.stdout + done.stderr
    links = sorted(p.name for p in ws.glob("_wh_tune_*"))
    assert links == [f"_wh_tune_chunks_{n}.py" for n in range(6)]  # only the shipped links remain
    assert all((ws / name).is_symlink() for name in links)
    assert "timed" in done.stdout or "median" in done.stdout, done.stdout
