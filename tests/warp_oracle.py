"""Ask the real Warp whether it accepts a kernel: the tests' ground truth for the rules.

Runs Warp's own code generator (no C++ compile) on every kernel of a source text, in this process:
``kernel.adj.build(None, opts)`` with the module's resolved options, then the module builder's
``codegen("cpu")``, which adds module-level checks.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path

_counter = itertools.count()


def warp_error(source: str, launch: bool = False) -> str | None:
    """None when Warp builds every kernel of ``source``; else the error text Warp raised.

    With ``launch=True`` the module is executed as ``__main__``-less code that may launch on the CPU
    (for launch-time errors), which compiles for real (slow: seconds).
    """
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    folder = Path(tempfile.mkdtemp(prefix="wh_oracle_"))
    name = f"wh_oracle_{next(_counter)}"
    file = folder / f"{name}.py"
    file.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        from warp._src.context import ModuleBuilder

        modules = {}
        for value in list(vars(module).values()):
            if isinstance(value, wp.Kernel):
                opts = value.module.resolve_options(wp.config, 1)
                opts["output_arch"] = None
                value.adj.build(None, opts)
                modules[id(value.module)] = (value.module, opts)
        # module-level checks (e.g. "kernels cannot return values") happen in the builder's codegen
        for warp_module, opts in modules.values():
            ModuleBuilder(warp_module, opts, target="cpu").codegen("cpu")
        if launch and hasattr(module, "run"):
            wp.init()
            module.run()
    except Exception as exc:  # Warp raises RuntimeError, ValueError, TypeError, WarpCodegen*Error
        return f"{type(exc).__name__}: {exc}"
    finally:
        sys.modules.pop(name, None)
    return None
