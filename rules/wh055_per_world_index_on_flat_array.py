"""## WH055 per-world-index-on-flat-array

A kernel launched over worlds and their entities (`worldid, jntid = wp.tid()`) indexes one array of a
family with the flat index `joints_per_world * worldid + jntid`, and another array of the same family
(`joint_` ... the first word of the name) with the per-world index `jntid` alone, and the value it
reads there is an index it uses as it is: `child = joint_child[jntid]` ... `body_com[child]`.

The arrays of one family hold one entry per entity of *all* worlds (that is why the flat index is
needed for the first one), so the bare per-world index reads world 0's entry from every world, and the
index read there names world 0's body, shape or dof.

### Why it matters
Warp indexes the array without complaint and world 0 gives the right answer, so single-world tests
pass; every other world silently reads world 0's bodies (newton #2332: `joint_child[jntid]` beside
`joint_q_start[joints_per_world * worldid + jntid]` made every world after the first use world 0's
centre of mass; measured with Warp 1.19 on the CPU in
tests/corpus/real_bugs/index_space_warp_to_mj_coords). Reported as a warning.

Not reported: a value read with the per-world index that is only compared or computed with
(`joint_type[jntid] == FREE`: the worlds of a replicated model hold the same types, which newton
relies on, newton #2471), or that gets the world offset added before it indexes
(`worldid * bodies_per_world + joint_child[jntid]`); arrays of families the kernel never indexes with
the flat form (a per-world mapping such as `to_mjc_body_index[bodyid]`).

### Bad
```python
@wp.kernel
def com(joints_per_world: int, joint_child: wp.array(dtype=int), joint_q_start: wp.array(dtype=int),
        body_com: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    worldid, jntid = wp.tid()
    q_start = joint_q_start[joints_per_world * worldid + jntid]
    child = joint_child[jntid]
    out[worldid, jntid] = body_com[child] + float(q_start)
```

### Good
```python
@wp.kernel
def com(joints_per_world: int, joint_child: wp.array(dtype=int), joint_q_start: wp.array(dtype=int),
        body_com: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    worldid, jntid = wp.tid()
    joint_id = joints_per_world * worldid + jntid
    child = joint_child[joint_id]
    out[worldid, jntid] = body_com[child] + float(joint_q_start[joint_id])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index_spaces import FlatIndex, IndexSpaces, family, index_spaces
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


class PerWorldIndexOnFlatArray(Rule):
    id = "WH055"
    name = "per-world-index-on-flat-array"
    summary = "a per-world index into an array whose family the kernel indexes by the flat world index"
    severity = Severity.WARNING
    priority = 55
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        types = ctx.types(kernel)
        if len(types.tid_vars) < 2:
            return
        spaces = index_spaces(ctx.model, kernel, types)
        # family -> (the flat index, the access using it), first seen
        flat: dict[str, tuple[FlatIndex, ast.expr, str]] = {}
        for access in spaces.indexings:
            index = access.single
            if index is None or spaces.arrays[access.array].ndim != 1:
                continue
            form = spaces.flat_index(index)
            if form is not None:
                flat.setdefault(family(access.array), (form, index, access.array))
        if not flat:
            return
        for access in spaces.indexings:
            index = access.single
            if not isinstance(index, ast.Name) or spaces.arrays[access.array].ndim != 1:
                continue
            found = flat.get(family(access.array))
            if found is None:
                continue
            form, flat_index, flat_array = found
            if index.id != form.local or access.array == flat_array:
                continue
            use = self._bare_index_use(spaces, access.node)
            if use is None:
                continue
            yield self._report(
                ctx, kernel, access.node, index, form, flat_index, flat_array, access.array, use
            )

    @staticmethod
    def _bare_index_use(spaces: IndexSpaces, node: ast.expr) -> ast.expr | None:
        """Where the value read at ``node`` indexes another array as it is, with no world offset added: as
        the index itself (``body_com[joint_child[jntid]]``) or through a local bound to it once
        (``child = joint_child[jntid]`` ... ``body_com[child]``). A value compared or computed with
        (``joint_type[jntid] == FREE``) reads the same from every world where the worlds are replicas."""
        bound = {
            stmt.targets[0].id
            for stmt in spaces.assigns
            if stmt.value is node and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        }
        bound = {name for name in bound if spaces.value_of(name) is node}
        for other in spaces.indexings:
            index = other.single
            if index is node or (isinstance(index, ast.Name) and index.id in bound):
                return other.node
        return None

    def _report(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        node: ast.expr,
        index: ast.Name,
        form: FlatIndex,
        flat_index: ast.expr,
        flat_array: str,
        array: str,
        use: ast.expr,
    ) -> Record:
        flat_text = ctx.source_of(form.node)
        replacement = ctx.source_of(flat_index) if isinstance(flat_index, ast.Name) else f"({flat_text})"
        fix = Fix(f"Index `{array}` with `{replacement}`", (ctx.replace(index, replacement),))
        return self.report(
            ctx,
            node,
            f"`{array}` is indexed by the per-world index `{index.id}`, but `{flat_array}` of the same "
            f"family is indexed by the flat index `{flat_text}`: every world reads world 0's `{array}`, and "
            f"`{ctx.source_of(use)}` then reads world 0's entity",
            kernel=kernel.name,
            expected=f"`{array}[{replacement}]`",
            actual=ctx.source_of(node),
            hint=f"index the arrays of all worlds by the flat index: `{form.world}` selects the world, "
            f"`{form.local}` the entity inside it",
            fix=fix,
            related=(
                Related(ctx.location(flat_index), "the flat index"),
                Related(ctx.location(use), "the value indexes this array with no world offset"),
            ),
        )
