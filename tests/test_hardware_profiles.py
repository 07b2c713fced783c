"""The bundled hardware profiles, Blackwell (sm_100 datacenter, sm_120 consumer) included: each loads, its
limits are consistent, and a check against it uses its own shared-memory limit (a 64x256 + 256x64 float
GEMM tile set needs 128 KiB: it fits an sm_100 block's 227 KiB, not an sm_120 block's 99 KiB)."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse

from warp_harness.hardware import bundled_profiles, load_profile

GEMM = """
import warp as wp

TILE_M = wp.constant(64)
TILE_N = wp.constant(64)
TILE_K = wp.constant(256)


@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=float)
    a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, 0))
    b = wp.tile_load(B, shape=(TILE_K, TILE_N), offset=(0, j * TILE_N))
    wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * TILE_M, j * TILE_N))


def run(A, B, C):
    wp.launch_tiled(gemm, dim=(4, 4), inputs=[A, B, C], block_dim=256)
"""


@pytest.mark.parametrize("name", bundled_profiles())
def test_every_bundled_profile_is_consistent(name: str) -> None:
    profile = load_profile(name)
    assert profile.name == name
    if profile.device == "cuda":
        assert profile.arch == int(name[3:])
        assert profile.shared_memory_per_block <= profile.shared_memory_per_block_optin
        assert profile.shared_memory_per_block_optin <= profile.shared_memory_per_sm
        assert profile.warp_size == 32 and profile.max_threads_per_block == 1024


def test_blackwell_profiles_are_bundled() -> None:
    assert {"sm_100", "sm_120"} <= set(bundled_profiles())
    assert load_profile("sm100").name == "sm_100"  # the short spelling, as for the others


def test_a_tile_set_that_fits_sm_100_is_flagged_on_sm_120(analyse: Analyse) -> None:
    assert [r for r in analyse(GEMM, select=["WH015"], target="sm_100") if r.rule == "WH015"] == []
    flagged = [r for r in analyse(GEMM, select=["WH015"], target="sm_120") if r.rule == "WH015"]
    assert flagged and "sm_120 allows 99 KiB per block" in flagged[0].message, flagged
