"""Registers/local memory of a benchmarked CUDA kernel, and the block_dim a unit is built with."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from warp_harness.daemon.steps import bench
from warp_harness.daemon.steps.compile import unit_block_dim


def info(contract: Any) -> Any:
    return SimpleNamespace(contract=contract)


def contract(block_dim: Any, tiled: bool = True) -> Any:
    return SimpleNamespace(tiled=tiled, block_dim=block_dim, sizes=(16, 64))


def test_unit_block_dim_is_the_tiled_contracts_one() -> None:
    assert unit_block_dim([info(contract(64))]) == 64
    assert unit_block_dim([info(contract(64)), info(None), info(contract(lambda n, inputs: 64))]) == 64
    assert unit_block_dim([info(contract(lambda n, inputs: n * 4))]) == 64  # the first size: 16
    assert unit_block_dim([info(contract(64)), info(contract(128))]) is None  # they disagree
    assert unit_block_dim([info(contract(64)), info(contract(64, tiled=False))]) is None
    assert unit_block_dim([info(contract(None))]) is None  # the module default
    assert unit_block_dim([info(contract(lambda n, inputs: inputs["x"]))]) is None  # fails: default
    assert unit_block_dim([info(contract(0))]) is None  # invalid: default
    assert unit_block_dim([info(None)]) is None
    assert unit_block_dim([]) is None


def test_kernel_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def props(kernel: Any, device: Any, block_dim: Any) -> dict[str, int]:
        seen.append(block_dim)
        return {"register_count": 40, "local_memory_size": 8, "other": 1}

    monkeypatch.setattr(bench.wp, "get_cuda_kernel_properties", props, raising=False)
    assert bench.kernel_resources(object(), "cuda:0", 64) == {"registers": 40, "local_bytes": 8}
    assert seen == [64]

    def broken(kernel: Any, device: Any, block_dim: Any) -> dict[str, int]:
        raise RuntimeError("not a CUDA device")

    monkeypatch.setattr(bench.wp, "get_cuda_kernel_properties", broken, raising=False)
    assert bench.kernel_resources(object(), "cpu", None) == {}
