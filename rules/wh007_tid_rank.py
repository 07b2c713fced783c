"""## WH007 tid-rank

`wp.tid()` is unpacked into a different number of names than the launch `dim` has dimensions:
`i, j = wp.tid()` in a kernel launched with `dim=n`, or `i = wp.tid()` in one launched with
`dim=(n, m)`. For `wp.launch_tiled`, which appends the block dimension to `dim`, both
`len(dim)` and `len(dim) + 1` names are correct.

The number of dimensions is read from the spellings real code uses (`warp_harness.model.shapes`):
literal tuples and folded constants, `a.shape` (the array's rank from its allocation, a `self.` field
allocated in the class, or the kernel parameter it is passed to: Warp raises at launch when those
differ), `a.shape[:2]`, `a.shape[0]`, `len(a)`, products of integers (`nx * ny` with `nx, ny =
img.shape`, `: int` parameters, shape elements of an allocation, `range()` bounds: one integer, a
1-D launch), locals and `self.` fields. Only launches whose number of dimensions is certain are
compared (`dim=p * q` with `p`, `q` of unknown type is not: `(n, m) * 1` is 2-D); launches
recorded for later (`record_cmd=True`, whose dims `set_dim` may change), empty launches
(`dim=0`), and extra names that are never read (`i, _j = wp.tid()` on a 1-D launch) are not
reported.

### Why it matters
Warp runs this silently. Launch dimensions beyond the names unpacked are folded away: with
`i = wp.tid()` on `dim=(n, m)`, `i` only runs over `0 .. n-1` and every value is given to `m`
threads at once (duplicated work, racing writes, the rest of a 2-D array never touched).
Names beyond the launch's rank are always 0: with `i, j = wp.tid()` on `dim=n` only column 0 is
processed (warp#1389). Measured with Warp 1.19 on the CPU.

### Bad
```python
@wp.kernel
def scale(a: wp.array2d(dtype=float)):
    i = wp.tid()
    a[i, 0] = 2.0 * a[i, 0]

wp.launch(scale, dim=(n, m), inputs=[a])
```

### Good
```python
@wp.kernel
def scale(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = 2.0 * a[i, j]

wp.launch(scale, dim=(n, m), inputs=[a])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.inference import thread_indices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launch_dims import dim_rank
from warp_harness.model.launches import LaunchSite
from warp_harness.model.shapes import argument_ranks, param_ranks
from warp_harness.record import QUOTED_LINE, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import (
    deferred_launch,
    empty_launch,
    kernel_location,
    kernel_model,
    launch_kernel,
    launched_elsewhere,
    launches_of,
)


def _dim_note(site: LaunchSite, rank: int) -> str:
    """Why a dim that is not a literal tuple has ``rank`` dimensions (`` `nx * ny` is one integer``)."""
    node = site.dim
    if node is None or isinstance(node, ast.Tuple | ast.List | ast.Constant):
        return ""
    text = ast.unparse(node)
    if len(text) > 60:
        return ""
    if rank == 1:
        return f" (`{text}` is one integer)"
    return f" (`{text}` has {rank} extents)"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _tid_statement(kernel: KernelDef, call: ast.Call) -> ast.stmt | None:
    for node in body_index(kernel.node).of(ast.Assign):
        if node.value is call:
            return node
    return None


def _target_names(stmt: ast.stmt | None) -> list[str | None] | None:
    """The names ``wp.tid()`` is unpacked into (None for anything but a plain name)."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    target = stmt.targets[0]
    elements = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
    return [e.id if isinstance(e, ast.Name) else None for e in elements]


class TidRank(Rule):
    id = "WH007"
    name = "tid-rank"
    summary = "wp.tid() unpacked into a different rank than the launch dim"
    severity = Severity.ERROR
    priority = 60

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES, Fact.KERNELS})
    foreign_launches = True

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        constants = ctx.constants.values
        imports = ctx.imports
        if not kernel.is_kernel:
            return
        sites = launches_of(ctx, kernel)
        if not sites:
            return
        unpacks = thread_indices(kernel, kernel_model(ctx, kernel).imports).tid_unpacks
        kernel_ranks = param_ranks(kernel)
        used: set[str] | None = None  # names the kernel reads, computed when first needed
        for call, names in unpacks:
            stmt = _tid_statement(kernel, call)
            targets = _target_names(stmt)
            mismatched: list[tuple[int, bool, ast.Call, str]] = []
            for site in sites:
                if launch_kernel(ctx, site) is not kernel or deferred_launch(site) or empty_launch(ctx, site):
                    continue  # another kernel, dims set later (record_cmd), or no thread at all
                if any(isinstance(a, ast.Starred) for a in site.node.args) or any(
                    kw.arg is None for kw in site.node.keywords
                ):
                    continue
                # the arrays passed have their parameters' ranks (Warp raises at launch otherwise)
                rank = dim_rank(site, constants, imports, argument_ranks(site, kernel_ranks))
                if rank is None or rank < 1:
                    continue
                valid = (rank, rank + 1) if site.tiled else (rank,)
                if names in valid:
                    continue
                if names > max(valid):
                    if used is None:
                        used = {
                            n.id for n in body_index(kernel.node).of(ast.Name) if isinstance(n.ctx, ast.Load)
                        }
                    extra = targets[max(valid) :] if targets is not None else []
                    if targets is None or not any(t in used for t in extra if t is not None):
                        continue  # the names that would always be 0 are never read: harmless
                mismatched.append((rank, site.tiled, site.node, _dim_note(site, rank)))
            if not mismatched:
                continue
            anchor: ast.AST = stmt if stmt is not None else call
            rank, tiled, _, _ = mismatched[0]
            ranks = sorted({r for r, _, _, _ in mismatched})
            launch_word = "wp.launch_tiled" if tiled else "wp.launch"
            valid_text = f"{rank} or {rank + 1}" if tiled else f"{rank}"
            # the dims the kernel actually runs over (launch_tiled appends the block's)
            total = rank + 1 if tiled else rank
            if names < rank:
                missing = total - names
                folded = "the last dimension" if missing == 1 else f"the last {missing} dimensions"
                effect = (
                    f"Warp folds {folded} away and hands each index to several threads at once "
                    f"(duplicated work, racing writes)"
                )
            else:
                surplus = names - total
                effect = (
                    f"the {'extra name is' if surplus == 1 else f'{surplus} extra names are'} always 0"
                    + (
                        " (launch_tiled gives the one after the grid's names the thread's lane)"
                        if tiled
                        else ""
                    )
                )
            related = [
                Related(
                    ctx.location(node, kernel.name),
                    f"launched here with a {r}-D dim{note}"
                    + (" (launch_tiled adds the block dimension)" if t else ""),
                )
                for r, t, node, note in mismatched
            ]
            example = ", ".join(f"i{k}" for k in range(rank)) if rank > 1 else "i"
            if launched_elsewhere(ctx):  # the kernel may be in another file: report at the launch
                unpacked = Related(kernel_location(ctx, kernel, anchor), "`wp.tid()` is unpacked here")
                related = [unpacked, *related[1:]]
                anchor = mismatched[0][2]
            yield self.report(
                ctx,
                anchor,
                f"`wp.tid()` is unpacked into {_plural(names, 'name')} but `{kernel.name}` is launched "
                f"with {'a ' if len(ranks) == 1 else ''}{'/'.join(map(str, ranks))}-D dim; {effect}",
                kernel=kernel.name,
                expected=valid_text if len(ranks) == 1 else ranks,
                actual=names,
                hint=f"unpack {valid_text} names (`{example} = wp.tid()`) or launch with a {names}-D dim"
                f" ({launch_word} at line {QUOTED_LINE})",
                related=related,
                lines=(mismatched[0][2].lineno,),
            )
