"""One way to launch a contracted kernel, for validation and benchmark alike: ``wp.launch``, or
``wp.launch_tiled`` for a contract with ``tiled=True``, with the contract's ``block_dim``; both
as saved before any workspace code ran (``integrity.TRUSTED``)."""

from __future__ import annotations

import ctypes
import importlib
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

import warp as _warp

from warp_harness.contract import Contract
from warp_harness.daemon.integrity import TRUSTED
from warp_harness.daemon.worker_process import (
    CONTEXT_LOST_EXIT,
    CONTEXT_LOST_LATE_EXIT,
    CONTEXT_LOST_MARK,
)

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


# --------------------------------------------------------------------------- a lost CUDA context
#
# A kernel that faults on a GPU (an illegal address, a trap, a device-side assert) does not kill
# the process as a segfault does on the CPU: the process lives on with a CUDA context in which
# every later call fails with the same "sticky" error (the next allocation fails, every module
# after it "Failed to load CUDA module"). Nothing run in it is a verdict on any kernel. The
# worker therefore ends itself (worker_process.CONTEXT_LOST_EXIT) as soon as it sees such an error, and the
# supervisor treats that like a crash on the CPU: a record on the kernel, a debug re-run that
# places the access, a fresh worker (and context) for every other kernel.

# CUDA errors that leave the context unusable (cudaError_t; the driver's CUresult numbers agree)
STICKY_CUDA_ERRORS = {
    700: "an illegal memory access was encountered",
    710: "device-side assert triggered",
    714: "hardware stack error",
    715: "an illegal instruction was encountered",
    716: "misaligned address",
    717: "operation not supported on global/shared address space",
    718: "invalid program counter",
    719: "unspecified launch failure",
}
# what Warp raises or prints for them: "Warp CUDA error 700: an illegal memory access was
# encountered (in function ...)", "CUDA error 700 detected on device cuda:0: ..."
_CUDA_ERROR_RE = re.compile(r"CUDA error (\d+)")
# what Warp raises after the fact in a lost context (the error itself was seen earlier)
_AFTERMATH = (
    re.compile(r"Failed to load CUDA module"),
    re.compile(r"Failed to allocate \d+ bytes on device 'cuda"),
    re.compile(r"Failed to synchronize device cuda"),
)


def cuda_error_code(text: str) -> int | None:
    """The last CUDA error number ``text`` names (Warp's messages), or None."""
    found = _CUDA_ERROR_RE.findall(text)
    return int(found[-1]) if found else None


def may_have_lost_context(text: str) -> bool:
    """Whether an error's text is one a lost context gives: a sticky CUDA error, or what Warp
    raises afterwards (a failed allocation or module load on a CUDA device)."""
    code = cuda_error_code(text)
    if code is not None:
        return code in STICKY_CUDA_ERRORS
    return any(p.search(text) for p in _AFTERMATH)


def _live_cuda_devices() -> list[Any]:
    """The CUDA devices whose context this process has made (asking another would make one)."""
    try:
        devices = wp.get_cuda_devices()
    except Exception:
        return []
    return [d for d in devices if getattr(d, "_context", None) is not None]


def context_error(device: Any) -> int:
    """The error ``device``'s context is in, asked twice: the first call hands back (and
    clears) a launch's ordinary error, a sticky one stays. 0: the context is usable."""
    core = importlib.import_module("warp._src.context").runtime.core
    core.wp_cuda_context_check(device.context)
    return int(core.wp_cuda_context_check(device.context))


def lost_context_error(exc: BaseException | None = None) -> str | None:
    """What left this process's CUDA context unusable ("CUDA error 700: an illegal memory access
    was encountered"), or None when every context it made answers. ``exc``: the exception the
    caller caught, whose text names the error best; one that no lost context gives is not
    checked further (no device synchronise)."""
    text = f"{exc}" if exc is not None else ""
    if exc is not None and not may_have_lost_context(text):
        return None
    asked = False
    for device in _live_cuda_devices():
        try:
            code = context_error(device)
        except Exception:
            continue
        asked = True
        if code:
            named = cuda_error_code(text)
            if named == code:  # Warp's own words, which name the call it failed in
                return text.strip().splitlines()[0]
            what = STICKY_CUDA_ERRORS.get(code, "unknown error")
            return f"CUDA error {code} on {device}: {what}" + (
                f" (then: {text.strip().splitlines()[0]})" if text.strip() else ""
            )
    if not asked and cuda_error_code(text) in STICKY_CUDA_ERRORS:  # no context to ask: the text says
        return text.strip().splitlines()[0]
    return None


def _flush_native_output() -> None:
    """Flush C's stdio (a device-side assert's message sits in the process's stdout buffer, a
    pipe's full one): ``os._exit`` would drop it."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def end_if_context_lost(exc: BaseException | None = None, *, late: bool = False) -> None:
    """End the worker (``CONTEXT_LOST_EXIT``; ``late``: ``CONTEXT_LOST_LATE_EXIT``) when its CUDA
    context is lost, after writing ``CONTEXT_LOST_MARK`` and the error to its output; else return.
    The supervisor sees the worker die during the kernel of its last progress message."""
    error = lost_context_error(exc)
    if error is None:
        return
    _flush_native_output()
    os.write(2, f"\n{CONTEXT_LOST_MARK} {error}\n".encode("utf-8", errors="replace"))
    os._exit(CONTEXT_LOST_LATE_EXIT if late else CONTEXT_LOST_EXIT)
