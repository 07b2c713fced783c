"""`module.with_kernel_replaced`: the model of a file in which one top-level kernel changed, from the model of
the file before, is the model `build_model` makes of the new file."""

from __future__ import annotations

import ast

from warp_harness.builtins import load_table
from warp_harness.model.index import NodeIndex, body_index
from warp_harness.model.module import ModuleModel, build_model, with_kernel_replaced
from warp_harness.model.source import parse_source

_BEFORE = """
import warp as wp

FLAG = wp.constant(True)
N = 4


@wp.func
def helper(a: float) -> float:
    return a * 2.0


@wp.kernel
def first(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = helper(x[i])


@wp.kernel
def second(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s


def run(n: int):
    x = wp.zeros(n, dtype=float)
    wp.launch(first, dim=n, inputs=[x])
    wp.launch(second, dim=N, inputs=[x, 2.0])
"""
# `second` with other parameters, a static branch and a call of the @wp.func, on the same lines
_AFTER = _BEFORE.replace(
    """def second(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s
""",
    """def second(x: wp.array(dtype=wp.vec3), s: int):
    i = wp.tid(); y = helper(1.0)
    if wp.static(FLAG): x[i] = x[i] * float(s)
""",
)


def _summary(model: ModuleModel) -> list[object]:
    """What the rules read of a model, as plain values."""
    return [
        [
            (
                k.name,
                k.kind,
                [(p.name, p.type) for p in k.params],
                sorted(k.options),
                k.abstract,
                [(b.node.lineno, b.taken) for b in k.static_branches],
                [type(n).__name__ for n in body_index(k.node).nodes],
            )
            for k in model.kernels
        ],
        [
            (s.kernel_name, s.node.lineno, sorted(s.local_values), sorted(s.host_arrays))
            for s in model.launches
        ],
        model.constants.values,
        sorted(model.structs),
        sorted(model.funcs),
        sorted(model.overloaded_funcs),
        [type(n).__name__ for n in model.index.nodes],
        model.lines,
    ]


def test_a_kernel_replaced_gives_the_model_of_the_new_file() -> None:
    table = load_table()
    assert _AFTER != _BEFORE and _AFTER.count("\n") == _BEFORE.count("\n")
    before = build_model(_BEFORE, "m.py", table)
    before.kernel_named("second")  # the lookups by name exist, to be carried over
    before.launches_of(before.kernels[2])
    parsed = parse_source(_AFTER)
    node = next(s for s in parsed.tree.body if isinstance(s, ast.FunctionDef) and s.name == "second")
    position = next(i for i, k in enumerate(before.kernels) if k.name == "second")
    expected = build_model(_AFTER, "m.py", table)
    spliced = with_kernel_replaced(before, position, node, parsed, NodeIndex([parsed.tree]))
    assert spliced is not None
    assert _summary(spliced) == _summary(expected)
    assert spliced.kernel_named("second") is spliced.kernels[position]
    assert [s.kernel_name for s in spliced.launches_of(spliced.kernels[position])] == ["second"]
    assert spliced.types(spliced.kernels[position]) is not None
    # the model it came from still describes the old file
    assert [p.name for p in before.kernels[position].params] == ["x", "s"]
    assert before.kernel_named("second") is before.kernels[position]


def test_not_a_warp_function_is_not_spliced() -> None:
    table = load_table()
    before = build_model(_BEFORE, "m.py", table)
    parsed = parse_source(_BEFORE.replace("@wp.kernel\ndef second(", "@other\ndef second("))
    node = next(s for s in parsed.tree.body if isinstance(s, ast.FunctionDef) and s.name == "second")
    assert with_kernel_replaced(before, 2, node, parsed, NodeIndex([parsed.tree])) is None
