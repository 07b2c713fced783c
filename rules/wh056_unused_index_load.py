"""## WH056 unused-index-load

A kernel loads an index from an index array (`particle_index = contact_particle[tid]`), never uses
it, and indexes an array of another family (`particle_v_out`) with the index it loaded with
(`tid`, the contact): the loaded index was meant there.

An index array maps one space of ids to another (a contact to its particle, a geom to its height
field). The index it is read with stays in the array's own space; an array of another family is
indexed by the space the index array maps to. A load nobody uses, beside an access of another family
through the source index, is that access in the wrong space.

### Why it matters
Warp compiles and runs it: the contact index is a valid particle index as long as there are fewer
contacts than particles, so nothing traps and the velocity change lands on the wrong particle
(newton #1557, `wp.atomic_add(particle_v_out, tid, dv)`); a geom id used for the height-field arrays
reads another height field, or past their end (mujoco_warp #825). Measured with Warp 1.19 on the CPU in
tests/corpus/real_bugs/index_space_restitution and index_space_hfield_geom_vs_dataid. Reported as a
warning, with the loaded index as the fix.

### Bad
```python
@wp.kernel
def restitution(contact_particle: wp.array(dtype=int), contact_normal: wp.array(dtype=wp.vec3),
                particle_v_out: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    particle_index = contact_particle[tid]
    wp.atomic_add(particle_v_out, tid, contact_normal[tid])
```

### Good
```python
@wp.kernel
def restitution(contact_particle: wp.array(dtype=int), contact_normal: wp.array(dtype=wp.vec3),
                particle_v_out: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    particle_index = contact_particle[tid]
    wp.atomic_add(particle_v_out, particle_index, contact_normal[tid])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index_spaces import family, index_spaces
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


class UnusedIndexLoad(Rule):
    id = "WH056"
    name = "unused-index-load"
    summary = "an index loaded and never used, while its source index reaches an array of another family"
    severity = Severity.WARNING
    priority = 55
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        types = ctx.types(kernel)
        spaces = index_spaces(ctx.model, kernel, types)
        for load in spaces.index_loads():
            if load.name in spaces.loaded or spaces.value_of(load.name) is None:
                continue  # used, or bound more than once
            if (
                spaces.assigned(load.index)
                and spaces.value_of(load.index) is None
                and load.index not in spaces.tid_vars
            ):
                continue  # the source index changes: which value the access sees is not known
            source = family(load.array)
            for access in spaces.indexings:
                index = access.single
                if (
                    not isinstance(index, ast.Name)
                    or index.id != load.index
                    or access.array == load.array
                    or family(access.array) == source
                ):
                    continue
                yield self.report(
                    ctx,
                    access.node,
                    f"`{access.array}` is indexed by `{load.index}`, the index into `{load.array}`, while "
                    f"`{load.name} = {ctx.source_of(load.stmt.value)}` is loaded and never used: "
                    f"`{access.array}` is not of `{load.array}`'s family, `{load.name}` was probably meant",
                    kernel=kernel.name,
                    expected=f"an index of `{access.array}`'s space (`{load.name}`)",
                    actual=ctx.source_of(access.node),
                    hint=f"index `{access.array}` with `{load.name}` (or drop the unused load)",
                    fix=Fix(f"Index `{access.array}` with `{load.name}`", (ctx.replace(index, load.name),)),
                    related=(Related(ctx.location(load.stmt), "the unused index"),),
                )
