"""One way to launch a contracted kernel, for validation and benchmark alike: ``wp.launch``, or
``wp.launch_tiled`` for a contract with ``tiled=True``, with the contract's ``block_dim``; both
as saved before any workspace code ran (``integrity.TRUSTED``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import warp as _warp

from warp_harness.contract import Contract
from warp_harness.daemon.integrity import TRUSTED

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped


def block_dim_of(contract: Contract, size: int, inputs: Mapping[str, Any]) -> int | None:
    value = contract.block_dim(size, inputs) if callable(contract.block_dim) else contract.block_dim
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Contract.block_dim must be a positive int, got {value!r}")
    return value


def launch(
    contract: Contract,
    kernel: Any,
    *,
    dim: Any,
    inputs: list[Any],
    device: Any,
    block_dim: int | None,
    stream: Any = None,
) -> None:
    extra: dict[str, Any] = {} if block_dim is None else {"block_dim": block_dim}
    if stream is not None:
        extra["stream"] = stream
    # the launch functions saved when the worker started: a `wp.launch` the workspace rebound
    # is never called (daemon/integrity.py)
    if contract.tiled:
        TRUSTED.launch_tiled(kernel, dim=dim, inputs=inputs, device=device, **extra)
    else:
        TRUSTED.launch(kernel, dim=dim, inputs=inputs, device=device, **extra)
