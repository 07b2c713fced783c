"""Step ``codegen``: Warp's own code generator, kernel by kernel.

``Module.load`` stops at the first failing kernel (not in source order) and then fails every
kernel of the module. ``kernel.adj.build(None, opts)`` with the module's resolved options
and ``output_arch=None`` generates one kernel alone, without compiling, in well under a
millisecond: every kernel gets its own verdict and its own first error.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Mapping
from typing import Any

import warp as _warp

from warp_harness.daemon import findings as F
from warp_harness.daemon.codegen_errors import exception_text, kernel_return_error, parse_codegen_error
from warp_harness.daemon.steps import KernelInfo, StepContext, StepOutcome
from warp_harness.record import Location, Related, Severity, Stage

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped
WarpCodegenTypeError: Any = importlib.import_module("warp._src.codegen").WarpCodegenTypeError


def codegen_options(module: Any) -> dict[str, Any]:
    opts: dict[str, Any] = module.resolve_options(wp.config, 1)
    opts["output_arch"] = None
    return opts


def error_record(ctx: StepContext, info: KernelInfo, exc: BaseException, stage: Stage, rule: str) -> None:
    text = exception_text(exc)
    parsed = parse_codegen_error(text, type(exc).__name__)
    if parsed is None or parsed.primary(ctx.path) is None:
        first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        ctx.add(
            F.make_record(
                stage,
                rule,
                Severity.ERROR,
                ctx.display_path,
                info.line,
                f"kernel `{info.name}`: {type(exc).__name__}: {first}",
                col=info.col,
                end_col=info.end_col,
                kernel=info.name,
            )
        )
        return
    primary = parsed.primary(ctx.path)
    assert primary is not None
    related = tuple(
        Related(
            Location(f.path, f.line, f.col, f.line, f.end_col, kernel=f.function),
            f"in `{f.function}`" + (" (called from here)" if i < len(parsed.frames) - 1 else ""),
        )
        for i, f in enumerate(parsed.frames)
        if f is not primary
    )
    chain = " -> ".join(f.function for f in parsed.frames)
    where = f" (in {chain})" if len(parsed.frames) > 1 else ""
    same_file = str(ctx.path) == primary.path or primary.path.endswith(ctx.path.name)
    ctx.add(
        F.make_record(
            stage,
            rule,
            Severity.ERROR,
            ctx.display_path,
            primary.line if same_file else info.line,
            f"kernel `{info.name}`{where}: {parsed.message}",
            col=primary.col if same_file else info.col,
            end_col=primary.end_col if same_file else info.end_col,
            kernel=info.name,
            related=related,
        )
    )


def run(ctx: StepContext, kernels: Mapping[str, KernelInfo]) -> StepOutcome:
    """Each kernel's code generated alone: its ``codegen`` verdict and first error."""
    t0 = time.perf_counter()
    for info in kernels.values():
        kernel = info.kernel
        if getattr(kernel, "is_generic", False):
            ctx.set_codegen(info.name, "generic")  # types come from each launch's overload
            continue
        try:
            kernel.adj.build(None, codegen_options(kernel.module))
            refused = kernel_return_error(kernel)  # Warp checks it only when the module loads
            if refused is not None:
                raise WarpCodegenTypeError(refused)
        except Exception as exc:  # Warp raises many classes: catch broadly, parse the text
            ctx.set_codegen(info.name, "error")
            error_record(ctx, info, exc, Stage.COMPILE, F.CODEGEN_ERROR)
        else:
            ctx.set_codegen(info.name, "ok")
    ctx.timings["codegen_ms"] = (time.perf_counter() - t0) * 1e3
    return ctx.outcome()
