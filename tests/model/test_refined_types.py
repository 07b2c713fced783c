"""RefinedTypes: the model's expression types, corrected where a module constant's Warp type is not its
Python value's (``wp.constant(wp.float64(2.0))``)."""

from __future__ import annotations

import ast

from warp_oracle import warp_error

from warp_harness.engine import _builtins
from warp_harness.model.inference import KernelTypes
from warp_harness.model.module import ModuleModel, build_model
from warp_harness.model.refined_types import ModuleTypeFacts, RefinedTypes
from warp_harness.model.types import Scalar

TYPED = """
import warp as wp

SCALE = wp.constant(wp.float64(2.0))
PLAIN = 2.0


@wp.kernel
def scale(x: wp.array(dtype=wp.float64), y: wp.array(dtype=float)):
    i = wp.tid()
    doubled = SCALE * x[i]
    y[i] = float(doubled) * PLAIN


@wp.kernel
def shadowed(x: wp.array(dtype=float)):
    i = wp.tid()
    SCALE = x[i]
    x[i] = SCALE
"""


def _refined(model: ModuleModel, name: str) -> tuple[RefinedTypes, KernelTypes, ast.FunctionDef]:
    """The refined types of kernel ``name``, the model's own, and the kernel's node."""
    kernel = model.kernel_named(name)
    assert kernel is not None
    inferred = model.types(kernel)
    return RefinedTypes(kernel, inferred, ModuleTypeFacts(model), _builtins()), inferred, kernel.node


def _expression(node: ast.FunctionDef, text: str) -> ast.expr:
    """The first expression ``text`` the kernel reads (not one it stores to)."""
    return next(
        n
        for n in ast.walk(node)
        if isinstance(n, ast.expr)
        and not isinstance(getattr(n, "ctx", None), ast.Store)
        and ast.unparse(n) == text
    )


def test_a_typed_constant_and_what_is_computed_from_it_take_its_warp_type() -> None:
    model = build_model(TYPED, "m.py", builtins=_builtins())
    types, _, node = _refined(model, "scale")
    assert types.constants == {"SCALE": Scalar("float64")}
    assert types.of(_expression(node, "SCALE")) == Scalar("float64")
    assert types.of(_expression(node, "doubled")) == Scalar("float64")
    assert {"i", "doubled", "x", "y"} <= types.local


def test_warp_builds_the_kernels() -> None:
    assert warp_error(TYPED) is None


def test_a_local_of_the_constants_name_is_not_corrected() -> None:
    model = build_model(TYPED, "m.py", builtins=_builtins())
    types, inferred, node = _refined(model, "shadowed")
    assert types.constants == {} and "SCALE" in types.local
    local = _expression(node, "SCALE")
    assert types.of(local) == inferred.of(local) == Scalar("float32")


def test_without_typed_constants_or_redefined_structs_the_inference_is_kept() -> None:
    source = TYPED.replace("wp.constant(wp.float64(2.0))", "2.0")
    model = build_model(source, "m.py", builtins=_builtins())
    types, inferred, node = _refined(model, "scale")
    assert types.constants == {} and types.redefined == set() and not types.suspicious
    constant = _expression(node, "SCALE")
    assert types.of(constant) == inferred.of(constant) == Scalar("float32")
    assert {"i", "doubled", "x", "y"} <= types.local
