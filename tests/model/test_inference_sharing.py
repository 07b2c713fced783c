"""What inference shares: a @wp.func's body is typed once per file (its own check and the calls of it), and
`thread_indices` reads the ``wp.tid()`` facts of `KernelTypes` without typing the kernel."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import warp

from warp_harness.engine import _builtins
from warp_harness.model import inference
from warp_harness.model.inference import Inference, thread_indices
from warp_harness.model.module import build_model

SOURCE = """
import warp as wp


@wp.func
def scale(x: float):
    y = x * 2.0
    return y


@wp.kernel
def k(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = scale(a[i])


@wp.kernel
def grid(a: wp.array2d(dtype=float)):
    for _ in range(3):
        if True:
            with wp.ScopedDevice("cuda"):
                try:
                    i, _, j = wp.tid()
                except Exception:
                    pass
    k = wp.tid()
    m = n = wp.tid()
    a[i, j] = 0.0
"""


def test_a_func_body_is_typed_once_for_its_check_and_its_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    model = build_model(SOURCE, "m.py", builtins=_builtins())
    typed: list[str] = []
    block = Inference._block

    def counting(self: Inference, body: list[ast.stmt]) -> None:
        if body is self.kernel.node.body:
            typed.append(self.kernel.name)
        block(self, body)

    monkeypatch.setattr(Inference, "_block", counting)
    kernel = model.kernel_named("k")
    func = model.funcs["scale"]
    assert kernel is not None
    model.types(kernel)  # types the call: infers `scale`'s body for its return type
    types = model.types(func)
    assert typed == ["k", "scale"]
    assert str(types.variables["y"]) == "float32"


def test_a_body_is_typed_again_when_what_it_reads_differs() -> None:
    model = build_model(SOURCE, "m.py", builtins=_builtins())
    func = model.funcs["scale"]
    first = model.types(func)
    other = Inference(
        func,
        model.imports,
        {},
        model.resolver,
        model.structs,
        model.builtins,
        model.funcs,
        model.overloaded_funcs,
    ).run()
    assert other is not first and other.variables == first.variables


def test_thread_indices_are_what_inference_records() -> None:
    model = build_model(SOURCE, "m.py", builtins=_builtins())
    grid = model.kernel_named("grid")
    assert grid is not None
    found = thread_indices(grid, model.imports)
    assert found.tid_vars == {"i": 0, "j": 2, "k": 0, "m": 0, "n": 0}
    assert [count for _, count in found.tid_unpacks] == [3, 1, 1, 1]
    assert thread_indices(grid, model.imports) is found


WARP = Path(warp.__file__).parent


@pytest.mark.parametrize("tree", ["examples", "tests"])
def test_thread_indices_agree_with_inference_over_warp(tree: str) -> None:
    """Over Warp's own examples and tests: `thread_indices` gives every kernel's and function's
    ``tid_vars`` and ``tid_unpacks`` exactly as the full inference does."""
    kernels = with_tids = 0
    for path in sorted((WARP / tree).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "wp.tid" not in text:
            continue
        model = build_model(text, str(path), builtins=_builtins())
        for kernel in model.kernels:
            if not kernel.has_python_body:
                continue
            inference._THREAD_INDICES.pop(kernel.node, None)
            types = model.types(kernel)
            found = thread_indices(kernel, model.imports)
            assert found.tid_vars == types.tid_vars, (path, kernel.name)
            assert [(id(c), n) for c, n in found.tid_unpacks] == [(id(c), n) for c, n in types.tid_unpacks]
            kernels += 1
            with_tids += bool(types.tid_unpacks)
    assert kernels > 100 and with_tids > 50


def test_a_named_warp_type_is_made_once() -> None:
    from warp_harness.model.types import Vector, named_warp_type

    first = named_warp_type("vec3d")
    assert first == Vector(3, named_warp_type("float64"))
    assert named_warp_type("vec3d") is first
