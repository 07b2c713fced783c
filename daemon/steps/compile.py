"""Step ``compile``: compile for every configured device into the project-local kernel cache.

A module whose codegen failed for one kernel cannot be built by Warp at all; each of its
good kernels is then compiled alone in an isolated Warp module (same function, same
options), so they still get compiled, validated and benchmarked.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import warp as _warp

from warp_harness.daemon import findings as F
from warp_harness.daemon import kernel_cache
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.steps import Built, KernelInfo, StepContext, StepOutcome
from warp_harness.daemon.steps.codegen import error_record
from warp_harness.daemon.steps.launching import block_dim_of
from warp_harness.record import Severity, Stage

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped


def resolve_devices(ctx: StepContext) -> list[tuple[str, Any]]:
    """The configured devices present, as (alias, warp Device); the others reported as skipped."""
    present: dict[str, Any] = {}
    cuda_count = wp.get_cuda_device_count()
    for name in ctx.options.devices:
        if name == "cpu":
            present["cpu"] = wp.get_device("cpu")
        elif name == "cuda":
            if cuda_count == 0:
                _skipped(ctx, name, "no CUDA device is present")
            for i in range(cuda_count):
                present[f"cuda:{i}"] = wp.get_device(f"cuda:{i}")
        else:
            index = int(name.split(":")[1])
            if index < cuda_count:
                present[name] = wp.get_device(name)
            else:
                _skipped(ctx, name, f"{cuda_count} CUDA device(s) present")
    return list(present.items())


def _skipped(ctx: StepContext, name: str, why: str) -> None:
    ctx.add(
        F.make_record(
            Stage.COMPILE,
            F.DEVICE_SKIPPED,
            Severity.INFO,
            ctx.display_path,
            1,
            f"device {name} skipped: {why}",
            hint="remove it from [tool.warp-harness.runtime] devices, or run where it exists",
        )
    )


def block_dim_for(device: Any) -> int | None:
    # CPU launches build with block_dim=1 (Module.load's default would be a different build)
    return 1 if getattr(device, "is_cpu", False) else None


def apply_module_options(ctx: StepContext, module: Any) -> None:
    """Options of [tool.warp-harness.runtime] that Warp keeps per module (fast_math ...)."""
    changed = False
    for key in ("fast_math", "lineinfo", "max_unroll", "enable_backward", "optimization_level"):
        value = getattr(ctx.options, key)
        if value is not None and module.options.get(key) != value:
            module.options[key] = value
            changed = True
    if ctx.options.mode == "debug" and module.options.get("mode") != "debug":
        module.options["mode"] = "debug"
        changed = True
    if changed:
        module.mark_modified()


def isolate(info: KernelInfo) -> Any:
    """A copy of the kernel in a Warp module of its own."""
    source_module = info.kernel.module
    iso = wp.get_module(f"{source_module.name}__wh_{info.name}")
    iso.options = dict(source_module.options)
    iso.mark_modified()
    return wp.Kernel(
        func=info.kernel.func, key=info.kernel.key, module=iso, options=dict(info.kernel.options)
    )


def unit_block_dim(infos: list[KernelInfo]) -> int | None:
    """The block_dim every contracted kernel of a unit launches with, when they agree on one
    they give explicitly (a tiled contract's ``block_dim``); None: the module default.

    Building with it saves a second build at launch (Warp keys a module's builds by block_dim;
    for a tile_matmul with MathDx a build is ~30 s)."""
    found: set[int | None] = set()
    for info in infos:
        contract = info.contract
        if contract is None:
            continue
        if not contract.tiled:
            return None
        try:
            found.add(block_dim_of(contract, contract.sizes[0], {}))
        except Exception:
            return None
    if len(found) != 1:
        return None
    return next(iter(found))


def load_into_cache(
    ctx: StepContext, module: Any, device: Any, *, salt: str = "", block_dim: int | None = None
) -> tuple[bool, float, str]:
    """Build (or find) ``module`` for ``device`` in the user's kernel cache (kernel_cache.py; never
    the workspace's .warp-harness/kernels, which a repository can ship); (compiled, ms, key).

    ``salt`` tells apart builds Warp hashes alike: Warp's module hash covers a kernel's
    source text, not an AST transformer applied to it (the bounds probe). ``block_dim``: the
    block size to build for on CUDA (None: the module default); the CPU always builds with 1.
    """
    block_dim = block_dim_for(device) if block_dim is None or getattr(device, "is_cpu", False) else block_dim
    resolved = module.resolve_options(wp.config, block_dim)
    if salt:
        resolved = {**resolved, "wh_variant": salt}
    module_hash = module.get_module_hash(block_dim)
    kind, arch = kernel_cache.describe_device(device)
    key = kernel_cache.build_key(module_hash, resolved, wp.config.version, kind, arch)
    folder = kernel_cache.folder_for(ctx.workspace, key)
    hit = kernel_cache.has_binary(folder)
    wp.config.kernel_cache_dir = str(folder)
    t0 = time.perf_counter()
    try:
        module.load(device, block_dim)
    except Exception as exc:
        if not hit:
            raise
        # Warp found a build in the folder and did not compile: the failure is the stored
        # build's (a write cut short by a full disk or a kill, a disk error), not the kernel's.
        # Build it again once; only a failure of that build is the kernel's verdict.
        wp.config.kernel_cache_dir = str(_discard_build(ctx, folder, key, device, exc))
        module.load(device, block_dim)
        hit = False
    return not hit, (time.perf_counter() - t0) * 1e3, key


def _discard_build(ctx: StepContext, folder: Path, key: str, device: Any, exc: Exception) -> Path:
    """Remove a build folder Warp could not load; the folder to build into instead (a private
    one when it cannot be removed). Says so in an info record and in the job's notes."""
    shutil.rmtree(folder, ignore_errors=True)
    target = kernel_cache.folder_for(ctx.workspace, key)
    if kernel_cache.has_binary(target):  # could not be removed (read-only): build elsewhere
        target = kernel_cache.private_root() / key
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True, exist_ok=True)
    text = str(exc).strip()
    why = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".strip(": ")
    ctx.notes.setdefault("rebuilt", []).append({"key": key, "device": str(device), "error": why})
    ctx.add(
        F.make_record(
            Stage.COMPILE,
            F.INTERNAL,
            Severity.INFO,
            ctx.display_path,
            1,
            f"the kernel cache held an unreadable build of this module for {device} "
            f"(build {key[:12]}…: {why}): discarded and rebuilt",
            hint="a build written incompletely (a full disk, a killed process) or damaged on disk; "
            "this result is not cached",
        )
    )
    return target


def run(ctx: StepContext, kernels: Mapping[str, KernelInfo]) -> StepOutcome:
    """Build the module (a broken module's good kernels each in a module of its own) for every
    device present: each kernel's ``compile`` verdict per device, the devices and the builds."""
    t0 = time.perf_counter()
    devices = resolve_devices(ctx)
    kernels = dict(kernels)

    def codegen(info: KernelInfo) -> str:
        return ctx.verdicts_of(info.name).codegen

    good = [k for k in kernels.values() if codegen(k) in ("ok", "generic")]
    broken = any(codegen(k) == "error" for k in kernels.values())
    units: list[tuple[Any, list[KernelInfo]]] = []
    if good and not broken:
        apply_module_options(ctx, good[0].kernel.module)
        units.append((good[0].kernel.module, [k for k in good if codegen(k) == "ok"]))
    elif good:
        for info in good:
            if codegen(info) != "ok":
                continue
            apply_module_options(ctx, info.kernel.module)
            info = kernels[info.name] = replace(info, runnable=isolate(info))
            apply_module_options(ctx, info.runnable.module)
            units.append((info.runnable.module, [info]))
    keys: list[str] = []
    build_keys: dict[str, str] = {}
    module_hash: str | None = None
    for alias, device in devices:
        for module, infos in units:
            if not infos:
                continue
            ctx.progress(
                stage=Step.COMPILE.value, device=alias, kernel=infos[0].name, budget_s=ctx.options.timeout_s
            )
            try:
                compiled, ms, key = load_into_cache(ctx, module, device, block_dim=unit_block_dim(infos))
            except Exception as exc:
                for info in infos:
                    ctx.set_build(info.name, alias, "error")
                error_record(ctx, infos[0], exc, Stage.COMPILE, F.COMPILE_ERROR)
                if isinstance(exc, OSError):  # the file system failed, not the code: not cached
                    ctx.notes["transient"] = f"{type(exc).__name__}: {exc}"
                continue
            keys.append(key)
            for info in infos:
                ctx.set_build(info.name, alias, "compiled" if compiled else "cached")
                build_keys[f"{info.name}@{alias}"] = key
            ctx.timings[f"compile_ms[{alias}]"] = ctx.timings.get(f"compile_ms[{alias}]", 0.0) + ms
    if units and units[0][1]:
        try:
            module_hash = units[0][0].get_module_hash(1).hex()
        except Exception:
            module_hash = None
    ctx.timings["compile_stage_ms"] = (time.perf_counter() - t0) * 1e3
    return ctx.outcome(Built(tuple(devices), build_keys, module_hash, kernels))
