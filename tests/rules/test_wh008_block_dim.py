from __future__ import annotations

from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

KERNEL = """
import warp as wp


@wp.kernel
def ones(a: wp.array(dtype=float)):
    i, lane = wp.tid()
    if lane == 0:
        a[i] = 1.0
"""

TOO_BIG = (
    KERNEL
    + """

def run():
    a = wp.zeros(4, dtype=float, device="cpu")
    wp.launch_tiled(ones, dim=[4], inputs=[a], block_dim=2048, device="cpu")
"""
)

BOTH = (
    KERNEL
    + """

def run():
    a = wp.zeros(4, dtype=float, device="cpu")
    wp.launch_tiled(ones, dim=[4], inputs=[a], block_dim=2048, device="cpu")
    wp.launch_tiled(ones, dim=[4], inputs=[a], block_dim=100, device="cpu")
    assert a.numpy().tolist() == [1.0, 1.0, 1.0, 1.0]
"""
)


def test_block_dim_above_the_cpu_limit_is_flagged_and_warp_agrees(analyse: Analyse) -> None:
    (record,) = analyse(TOO_BIG, select=["WH008"], target="cpu")
    assert record.severity is Severity.ERROR and record.actual == 2048 and record.expected == "<= 1024"
    assert "block_dim must be at most 1024 on CPU" in record.message
    line = TOO_BIG.splitlines()[record.location.line - 1]
    assert line[record.location.col : record.location.end_col] == "2048"
    error = warp_error(TOO_BIG, launch=True)
    assert error is not None and "block_dim must be at most 1024 on CPU, got 2048" in error


def test_not_a_warp_multiple_is_a_warning_on_cuda_targets_only(analyse: Analyse) -> None:
    records = analyse(BOTH, select=["WH008"], target="sm_86")
    assert [(r.severity, r.actual) for r in records] == [(Severity.ERROR, 2048), (Severity.WARNING, 100)]
    assert "warp size (32)" in records[1].message and "e.g. 128" in (records[1].hint or "")
    # the CPU's warp is one thread wide: any block size is a whole number of warps
    assert [r.actual for r in analyse(BOTH, select=["WH008"], target="cpu")] == [2048]


def test_fixes_give_a_launch_warp_accepts(analyse: Analyse) -> None:
    records = analyse(BOTH, select=["WH008"], target="sm_86")
    assert all(r.fix is not None and not r.fix.safe for r in records)  # tile shapes may depend on it
    fixed, applied = apply_fixes(BOTH, records, safe_only=False)
    assert applied == 2 and "block_dim=1024" in fixed and "block_dim=128" in fixed
    assert analyse(fixed, select=["WH008"], target="sm_86") == []
    assert warp_error(fixed, launch=True) is None


def test_constants_fold_but_only_literals_get_a_fix(analyse: Analyse) -> None:
    source = (
        KERNEL
        + """
BLOCK = 48


def run(a, n, block):
    wp.launch(ones, dim=(n, 1), inputs=[a], block_dim=BLOCK)
    wp.launch(ones, dim=(n, 1), inputs=[a], block_dim=block)
    wp.launch(ones, dim=(n, 1), inputs=[a], block_dim=0)
    wp.launch(ones, dim=(n, 1), inputs=[a], block_dim=4 * BLOCK + 64)
"""
    )
    (record,) = analyse(source, select=["WH008"], target="sm_90")
    assert record.actual == 48 and record.fix is None and "where `BLOCK` is defined" in (record.hint or "")


def test_fft_kernels_pick_their_own_block_size(analyse: Analyse) -> None:
    # cuFFTDx sets the thread count of an FFT (the shipped example_tile_fft.py uses 8 for 32 points)
    source = """
import warp as wp

BLOCK_DIM = 48


@wp.kernel
def fft_tiled(x: wp.array2d(dtype=wp.vec2d), y: wp.array2d(dtype=wp.vec2d)):
    a = wp.tile_load(x, shape=(1, 32))
    wp.tile_fft(a)
    wp.tile_store(y, a)


@wp.kernel
def plain(x: wp.array2d(dtype=wp.vec2d), y: wp.array2d(dtype=wp.vec2d)):
    i, lane = wp.tid()


def run(x, y):
    wp.launch_tiled(fft_tiled, dim=[1, 1], inputs=[x], outputs=[y], block_dim=BLOCK_DIM)
    wp.launch_tiled(plain, dim=[1, 1], inputs=[x], outputs=[y], block_dim=BLOCK_DIM)
    wp.launch_tiled(unknown_kernel, dim=[1, 1], inputs=[x], outputs=[y], block_dim=BLOCK_DIM)
"""
    records = analyse(source, select=["WH008"], target="sm_86")
    assert [r.location.line for r in records] == [
        source.splitlines().index(
            "    wp.launch_tiled(plain, dim=[1, 1], inputs=[x], outputs=[y], block_dim=BLOCK_DIM)"
        )
        + 1
    ]


def test_blocks_smaller_than_a_warp_are_taken_as_deliberate(analyse: Analyse) -> None:
    source = KERNEL + "\n\ndef run(a):\n    wp.launch_tiled(ones, dim=[4], inputs=[a], block_dim=8)\n"
    assert analyse(source, select=["WH008"], target="sm_86") == []
