from __future__ import annotations

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.hardware import load_profile
from warp_harness.model.module import build_model
from warp_harness.rules.base import RuleContext
from warp_harness.rules.queries import launch_kernel, name_is_rebound

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
