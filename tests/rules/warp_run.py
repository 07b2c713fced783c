"""Run a source text's ``run()`` with the real Warp on the CPU (the tests' evidence for silent bugs)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

_counter = itertools.count()


def run_source(source: str) -> Any:
    """Import ``source`` as a module of its own (Warp reads kernels from the file); return its ``run()``."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    folder = Path(tempfile.mkdtemp(prefix="wh_run_"))
    name = f"wh_run_{next(_counter)}"
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        return module.run()
    finally:
        sys.modules.pop(name, None)
