"""model/func_calls.py: which ``@wp.func`` a bare-name call runs, and what its per-file cache keeps alive."""

from __future__ import annotations

import ast
import gc
import weakref

from warp_harness.engine import analyse_source
from warp_harness.model import func_calls
from warp_harness.model.module import ModuleModel

SOURCE = """
import warp as wp

@wp.func
def twice(x: float):
    return 2.0 * x

@wp.kernel
def scale(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = twice(a[i])

def host():
    def twice(x):
        return x
    return twice
"""


def _model() -> ModuleModel:
    model = analyse_source(SOURCE, "m.py").model
    assert model is not None
    return model


def test_a_call_resolves_to_the_module_level_func() -> None:
    model = _model()
    kernel = next(k for k in model.kernels if k.name == "scale")
    call = next(
        n for n in ast.walk(kernel.node) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "twice"
    )
    func = func_calls.called_func(model, kernel, call)
    assert func is not None and func.name == "twice"


def test_the_per_file_cache_does_not_keep_syntax_trees_alive() -> None:
    """The cache is keyed weakly by the tree; an entry holding its own tree kept every file checked in
    memory for the life of the process (newton: 25 -> 651 MiB in one `check` worker)."""
    model = _model()
    kernel = next(k for k in model.kernels if k.name == "scale")
    call = next(n for n in ast.walk(kernel.node) if isinstance(n, ast.Call))
    func_calls.called_func(model, kernel, call)
    tree = weakref.ref(model.tree)
    assert model.tree in func_calls._FILES
    del model, kernel, call
    gc.collect()
    assert tree() is None
