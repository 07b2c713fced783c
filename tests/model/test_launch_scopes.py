"""What the launch model finds in each kind of scope: a function with or without nested scopes (lambdas in
its defaults included), the module, launches spelled through a plain imported name."""

from __future__ import annotations

import ast

from warp_harness.model.launches import scope_aliases, scope_nodes
from warp_harness.model.module import build_model

SOURCE = """
import pytest
import warp as wp
from warp import launch as go
from other import launch


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


def with_lambda_default(a, key=lambda x: (h := x)):
    n = 4
    a, m = make()
    m = 2
    go(k, dim=n, inputs=[a])
    launch(k, dim=n, inputs=[a])


def methods_only(a: wp.array(dtype=float), n: int = 3):
    b = wp.zeros(n, dtype=float)
    with wp.ScopedDevice("cpu") as device:
        wp.launch(k, dim=n, inputs=[b])


size = 8
out = wp.zeros(size, dtype=float)
wp.launch(k, dim=size, inputs=[out])
with pytest.raises(RuntimeError):
    wp.launch(k, dim=size, inputs=[None])
apply = lambda: wp.launch(k, dim=size, inputs=[out])
"""


def test_launch_sites_in_every_kind_of_scope() -> None:
    sites = build_model(SOURCE).launches
    # `go` is Warp's launch, `launch` from another package is not; the launch meant to fail is left out,
    # and so is the one in a module-level lambda, since the module has a launch of its own
    assert [(s.node.lineno, type(s.scope).__name__) for s in sites] == [
        (17, "FunctionDef"),
        (24, "FunctionDef"),
        (29, "Module"),
    ]
    first, second, module_level = sites
    # the walrus in a default's lambda is not the function's; `m` is bound twice, `a` by a tuple target
    assert list(first.local_aliases) == ["n"] and first.local_values == {"n": 4}
    assert list(second.local_aliases) == ["b"] and set(second.host_arrays) == {"b"}
    # the last binding first; `device` (a with-target) is bound, but to no value
    assert list(module_level.local_aliases) == ["apply", "out", "size"]
    assert module_level.local_values == {"size": 8} and set(module_level.host_arrays) == {"out"}


def test_a_launch_only_inside_a_lambda_is_kept() -> None:
    source = "import warp as wp\nsize = 8\napply = lambda out: wp.launch(k, dim=size, inputs=[out])\n"
    (site,) = build_model(source).launches
    assert site.node.lineno == 3 and isinstance(site.scope, ast.Module) and site.local_values == {"size": 8}


def test_scope_nodes_are_the_preorder_of_the_scope_without_nested_scopes() -> None:
    model = build_model(SOURCE)
    for function in model.index.of(ast.FunctionDef):
        if function.name == "k":
            continue
        expected = _own_preorder(function)
        assert scope_nodes(function) == expected, function.name
    module_nodes = scope_nodes(model.tree)
    assert module_nodes == _own_preorder(model.tree)
    assert scope_nodes(model.tree) is module_nodes  # kept with the module for its analysis
    assert "device" not in scope_aliases(model.tree)


def _own_preorder(scope: ast.AST) -> list[ast.AST]:
    """The reference: a recursive preorder, skipping nested functions, classes and lambdas and the
    context and operator singletons."""
    found: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr_context | ast.operator | ast.unaryop | ast.boolop | ast.cmpop):
                continue
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                continue
            found.append(child)
            visit(child)

    visit(scope)
    return found
