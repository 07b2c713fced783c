from __future__ import annotations

import ast

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.hardware import load_profile
from warp_harness.model.index import set_compiled
from warp_harness.model.module import build_model
from warp_harness.rules.base import RuleContext
from warp_harness.rules.queries import (
    derived_names,
    iter_statements,
    launch_kernel,
    mentions,
    name_is_rebound,
    uses_warp_builtin,
)

SOURCE = """
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


def plain(a):
    wp.launch(k, dim=1, inputs=[a])


def shadowed(a, k):
    wp.launch(k, dim=1, inputs=[a])


def assigned(a):
    global g
    k = other
    wp.launch(k, dim=1, inputs=[a])
    wp.launch(g, dim=1, inputs=[a])


wp.launch(k, dim=1, inputs=[x])
"""


def _context(text: str) -> RuleContext:
    settings = Settings()
    return RuleContext(build_model(text), load_profile(settings.target), load_table(), settings)


def test_rebound_names_per_scope_and_module() -> None:
    ctx = _context(SOURCE)
    verdicts = [
        (site.node.lineno, name_is_rebound(site, ctx, site.kernel_name or "")) for site in ctx.model.launches
    ]
    assert verdicts == [(11, False), (15, True), (21, True), (22, True), (25, False)]
    assert [launch_kernel(ctx, site) is not None for site in ctx.model.launches] == [
        True,
        False,
        False,
        False,
        True,
    ]
    # computed once per scope (and once for the module) in an analysis
    assert len(ctx.rebound) == 4


def test_rebound_names_are_per_analysis() -> None:
    first = _context(SOURCE)
    assert not any(name_is_rebound(s, first, "k") for s in first.model.launches[:1])
    # the module now binds `k` at top level: every launch of it is ambiguous, in a new analysis
    second = _context(SOURCE + "\nk = None\n")
    assert all(name_is_rebound(s, second, "k") for s in second.model.launches)
    assert not name_is_rebound(first.model.launches[0], first, "k")


DERIVED = """
import warp as wp

FLAG = wp.constant(False)


@wp.func
def spin(x: int) -> int:
    return wp.atomic_cas(x, 0, 1)


@wp.func
def twice(x: int) -> int:
    return spin(x) * 2


@wp.kernel
def k(a: wp.array(dtype=float)):
    i = wp.tid()
    j = i + 1
    if wp.static(FLAG):
        m = j * 2
    for t in range(j):
        s = t
    u = 0
    u += s
    a[(q := j)] = float(twice(0))
    a[0] = float(u + m + q)


@wp.kernel
def plain(a: wp.array(dtype=float)):
    a[0] = 1.0
"""


def test_derived_names_follow_the_body_warp_compiles() -> None:
    model = build_model(DERIVED)
    kernel = model.kernel_named("k")
    assert kernel is not None
    # assignments, a loop, an augmented assignment and a walrus carry `i` along; `if wp.static(False)`
    # is dropped
    assert derived_names(kernel, "i") == {"i", "j", "t", "s", "u", "q"}
    branch = next(s for s in kernel.node.body if isinstance(s, ast.If))
    # the same node modelled with the branch compiled (another constant): the answer follows
    set_compiled(kernel.node, None)
    assert derived_names(kernel, "i") == {"i", "j", "t", "s", "u", "q", "m"}
    set_compiled(kernel.node, frozenset({id(branch)}))
    assert derived_names(kernel, "j") == {"j", "t", "s", "u", "q"}
    assert mentions(branch, {"m"}) and not mentions(branch, {"i"})


def test_uses_warp_builtin_follows_the_funcs_a_kernel_calls() -> None:
    ctx = _context(DERIVED)
    k, plain = ctx.model.kernel_named("k"), ctx.model.kernel_named("plain")
    assert k is not None and plain is not None
    assert uses_warp_builtin(ctx, k, {"atomic_cas"})  # through twice() -> spin()
    assert not uses_warp_builtin(ctx, k, {"atomic_add"})
    assert not uses_warp_builtin(ctx, plain, {"atomic_cas"})


def test_iter_statements_order_and_skipped_blocks() -> None:
    tree = ast.parse(
        "try:\n    a = 1\nexcept ValueError:\n    b = 2\nexcept KeyError:\n    c = 3\n"
        "else:\n    d = 4\nfinally:\n    e = 5\n"
        "for x in y:\n    f = 6\nelse:\n    g = 7\n"
        "while w:\n    if v:\n        h = 8\n"
    )
    names = [
        s.targets[0].id if isinstance(s, ast.Assign) else type(s).__name__  # type: ignore[attr-defined]
        for s in iter_statements(tree.body)
    ]
    # the order the rules have always seen: handlers (last first), the body, finally, else
    assert names == ["Try", "c", "b", "a", "e", "d", "For", "f", "g", "While", "If", "h"]
    loop = tree.body[1]
    assert "f" not in [
        s.targets[0].id  # type: ignore[attr-defined]
        for s in iter_statements(tree.body, frozenset({id(loop)}))
        if isinstance(s, ast.Assign)
    ]
