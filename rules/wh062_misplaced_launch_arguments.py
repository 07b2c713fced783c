"""## WH062 misplaced-launch-arguments

A launch passes variables named exactly like the kernel's parameters, rotated out of place: an
argument named like parameter *j* sits at another parameter of the same type, and parameter *j*
gets a variable named like a third parameter, as in `inputs=[lr, momentum, dampening, weight_decay]`
for `def sgd_step(lr: float, weight_decay: float, momentum: float, damping: float)` (`weight_decay`
goes to `damping`, and `weight_decay`'s place holds `momentum`).

### Why it matters
Arguments of the same type in the wrong order pass Warp's checks, so the kernel runs with the wrong
data: momentum used as weight decay, weight decay as damping (NVIDIA/warp#1143; the test in
tests/corpus/real_bugs shows the wrong result). One misplaced name can be deliberate (an output
buffer named like the input it replaces), and so can two passed in each other's places (a ping-pong
step alternates its buffers that way); a rotation of names is a strong sign the list follows an
older parameter order. Not reported either: names of two operands of one kind (`a`/`b`, `x0`/`x1`), and
arguments that are not plain variables.

A warning, since the order may be deliberate.

### Bad
```python
@wp.kernel
def sgd_step(g: wp.array(dtype=float), lr: float, weight_decay: float, momentum: float, damping: float,
             params: wp.array(dtype=float)):
    i = wp.tid()
    gt = g[i] + weight_decay * params[i]
    params[i] = params[i] - lr * gt * (1.0 + momentum) * (1.0 - damping)


def step(g, params, lr, momentum, damping, weight_decay):
    wp.launch(sgd_step, dim=len(params), inputs=[g, lr, momentum, damping, weight_decay, params])
```

### Good
```python
@wp.kernel
def sgd_step(g: wp.array(dtype=float), lr: float, weight_decay: float, momentum: float, damping: float,
             params: wp.array(dtype=float)):
    i = wp.tid()
    gt = g[i] + weight_decay * params[i]
    params[i] = params[i] - lr * gt * (1.0 + momentum) * (1.0 - damping)


def step(g, params, lr, momentum, damping, weight_decay):
    wp.launch(sgd_step, dim=len(params), inputs=[g, lr, weight_decay, momentum, damping, params])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.launches import LaunchSite
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import definition_location, launch_kernel


def _interchangeable(first: str, second: str) -> bool:
    """Names of two operands of one kind (``a``/``b``, ``x0``/``x1``): passed both ways on purpose."""
    if len(first) <= 1 and len(second) <= 1:
        return True
    return first.rstrip("0123456789") == second.rstrip("0123456789")


def _argument_list(site: LaunchSite, node: ast.expr | None) -> list[ast.expr] | None:
    """A literal list or tuple, directly or through a name the launch's scope binds to one."""
    if node is None:
        return []
    if isinstance(node, ast.Name) and node.id in site.local_aliases:
        node = site.local_aliases[node.id]
    if isinstance(node, ast.List | ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return list(node.elts)
    return None


class MisplacedLaunchArguments(Rule):
    id = "WH062"
    name = "misplaced-launch-arguments"
    summary = "launch arguments named like other parameters of the same type, rotated: passed out of order"
    severity = Severity.WARNING
    priority = 45

    scope = Scope.LAUNCH
    reads = frozenset({Fact.IMPORTS, Fact.KERNELS, Fact.SCOPES, Fact.CONSTANTS})

    def check_launch(self, ctx: RuleContext, site: LaunchSite) -> Iterator[Record]:
        call = site.node
        if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
            return
        kernel = launch_kernel(ctx, site)
        if kernel is None:
            return
        inputs = _argument_list(site, site.inputs)
        outputs = _argument_list(site, site.outputs)
        if inputs is None or outputs is None:
            return
        args = [*inputs, *outputs]
        params = kernel.params
        if len(args) != len(params):
            return
        names = [p.name for p in params]
        position = {name: i for i, name in enumerate(names)}
        passed = [a.id if isinstance(a, ast.Name) else None for a in args]
        misplaced: list[tuple[int, int]] = []
        for i, name in enumerate(passed):
            j = position.get(name) if name is not None else None
            if j is None or j == i or passed[j] == names[j]:
                continue
            if str(params[i].type) != str(params[j].type) or _interchangeable(names[i], names[j]):
                continue
            misplaced.append((i, j))
        # two buffers passed in each other's places is how a ping-pong step alternates
        swapped = {(i, j) for i, j in misplaced if (j, i) in misplaced}
        misplaced = [pair for pair in misplaced if pair not in swapped]
        # a rotation: the place a misplaced name belongs to holds another misplaced name
        sources = {i for i, _ in misplaced}
        if not any(j in sources for _, j in misplaced):
            return
        places = ", ".join(f"`{passed[i]}` goes to `{names[i]}`" for i, _ in misplaced)
        first = args[misplaced[0][0]]
        yield self.report(
            ctx,
            first,
            f"the launch of `{kernel.name}` passes arguments named like its parameters in other places: "
            f"{places}",
            kernel=kernel.name,
            expected=", ".join(f"`{names[j]}` at position {j + 1}" for _, j in misplaced),
            actual=", ".join(f"`{passed[i]}` at position {i + 1}" for i, _ in misplaced),
            hint=f"pass the arguments in the order `{kernel.name}` declares its parameters",
            related=[Related(definition_location(ctx, kernel), f"kernel `{kernel.name}` is defined here")],
        )
