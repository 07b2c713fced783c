"""## WH048 swapped-arguments

A call of a `@wp.func` passes two variables in each other's places: the argument in position *i* is
named exactly like parameter *j* and the argument in position *j* exactly like parameter *i*, as in
`_frame_axis(ximat_in, xmat_in, ...)` for `def _frame_axis(xmat_in, ximat_in, ...)`.

### Why it matters
Arguments of the same type in the wrong order type-check, so Warp compiles the call and the function
computes with the wrong data (google-deepmind/mujoco_warp#1016 read body frames as inertia frames;
the test in tests/corpus/real_bugs shows the wrong result). Names that match the other parameter's
name exactly are a strong sign that the order is wrong; the finding is a warning, since a deliberate
swap is possible. Not reported: names of two operands of one kind (`a`/`b`, `p0`/`p2`,
`face1`/`face2`), which code passes both ways on purpose (clip each face by the other), and a callee
the same function also calls with either of the two variables in its own place.

The fix swaps the two arguments back (offered, not applied by `check --fix`).

### Bad
```python
@wp.func
def frame_axis(xmat: wp.mat33, ximat: wp.mat33, use_inertia: int) -> wp.vec3:
    m = xmat
    if use_inertia != 0:
        m = ximat
    return wp.vec3(m[0, 2], m[1, 2], m[2, 2])


@wp.kernel
def sensor(xmat: wp.array(dtype=wp.mat33), ximat: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = frame_axis(ximat[i], xmat[i], 0)
```

### Good
```python
@wp.func
def frame_axis(xmat: wp.mat33, ximat: wp.mat33, use_inertia: int) -> wp.vec3:
    m = xmat
    if use_inertia != 0:
        m = ximat
    return wp.vec3(m[0, 2], m[1, 2], m[2, 2])


@wp.kernel
def sensor(xmat: wp.array(dtype=wp.mat33), ximat: wp.array(dtype=wp.mat33), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = frame_axis(xmat[i], ximat[i], 0)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


def _variable(arg: ast.expr) -> str | None:
    """The variable an argument passes: ``x``, or the array of an element ``x[i]`` / ``x[i, j]``."""
    if isinstance(arg, ast.Subscript):
        arg = arg.value
    return arg.id if isinstance(arg, ast.Name) else None


def _interchangeable(first: str, second: str) -> bool:
    """Names of two operands of one kind (``a``/``b``, ``p0``/``p2``, ``face1``/``face2``): a function of
    such a pair is often called both ways on purpose (both sides of a test, each face clipped by the
    other)."""
    if len(first) <= 1 and len(second) <= 1:
        return True
    return first.rstrip("0123456789") == second.rstrip("0123456789")


def _straight_pairs(calls: list[ast.Call], funcs: Mapping[str, KernelDef]) -> set[tuple[str, str, str]]:
    """(callee, parameter i, parameter j) for every pair of arguments some call passes in parameter order:
    a function that calls the callee both ways does so on purpose."""
    pairs: set[tuple[str, str, str]] = set()
    for call in calls:
        if not isinstance(call.func, ast.Name) or call.func.id not in funcs:
            continue
        names = [p.name for p in funcs[call.func.id].params]
        passed = [_variable(a) for a in call.args]
        for i, name in enumerate(passed[: len(names)]):
            if name == names[i]:
                pairs.update((call.func.id, names[i], other) for other in names if other != name)
                pairs.update((call.func.id, other, names[i]) for other in names if other != name)
    return pairs


class SwappedArguments(Rule):
    id = "WH048"
    name = "swapped-arguments"
    summary = "two arguments of a @wp.func call named like each other's parameters: passed in swapped order"
    severity = Severity.WARNING
    priority = 45
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        funcs = ctx.funcs
        if not funcs:
            return
        overloaded = ctx.overloaded_funcs
        calls = body_index(kernel.node).of(ast.Call)
        straight = _straight_pairs(calls, funcs)
        for call in calls:
            func = call.func
            if not isinstance(func, ast.Name) or func.id not in funcs or func.id in overloaded:
                continue
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            callee = funcs[func.id]
            names = [p.name for p in callee.params][: len(call.args)]
            passed = [_variable(a) for a in call.args]
            position = {name: i for i, name in enumerate(names)}
            for i, name in enumerate(passed):
                j = position.get(name) if name is not None else None
                if j is None or j <= i or passed[j] != names[i] or names[i] == names[j]:
                    continue
                if _interchangeable(names[i], names[j]) or (func.id, names[i], names[j]) in straight:
                    continue
                first, second = call.args[i], call.args[j]
                yield self.report(
                    ctx,
                    first,
                    f"`{ctx.source_of(first)}` and `{ctx.source_of(second)}` are passed to `{func.id}` in "
                    f"each other's places: its parameter `{names[i]}` gets `{name}` and `{names[j]}` gets "
                    f"`{passed[j]}`",
                    kernel=kernel.name,
                    expected=f"`{names[i]}` first, then `{names[j]}`",
                    actual=f"`{name}` first, then `{passed[j]}`",
                    hint="swap the two arguments",
                    fix=Fix(
                        "Swap the two arguments",
                        (
                            ctx.replace(first, ctx.source_of(second)),
                            ctx.replace(second, ctx.source_of(first)),
                        ),
                        safe=False,
                    ),
                    related=[
                        Related(ctx.location(callee.params[i].node), f"parameter `{names[i]}` of `{func.id}`")
                    ],
                )
