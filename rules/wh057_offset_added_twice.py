"""## WH057 offset-added-twice

An index adds the same loaded offset twice: `flex_vertbodyid[flex_vertadr[f] + v[i]]` where `v` was
built as `wp.vec2i(flex_vertadr[f] + e0, flex_vertadr[f] + e1)`.

An address array (`flex_vertadr`, `joint_q_start`, `offsets`) moves an index local to one object into
the global numbering of all objects. An index that already went through it is global; adding the
offset again lands on another object's entry, and past the end of the array for the last object.

The offset is followed through locals bound once and through the components of an index vector built
with `wp.vec2i`/`vec3i`/`vec4i`; an offset added and subtracted again cancels.

### Why it matters
Warp compiles and runs it. With the first object's offset 0 the result is right, so single-object
tests pass; with several objects the kernel reads the wrong entries, and the last object's reads run
past the end (a bounds trap in Warp's debug mode, garbage or a crash otherwise): mujoco_warp #1019,
measured with Warp 1.19 on the CPU in tests/corpus/real_bugs/index_space_flex_vert_double_offset.
Reported as a warning.

### Bad
```python
@wp.kernel
def bodies(vertadr: wp.array(dtype=int), edge: wp.array(dtype=wp.vec2i),
           vert_body: wp.array(dtype=int), out: wp.array(dtype=int)):
    e = wp.tid()
    v = wp.vec2i(vertadr[0] + edge[e][0], vertadr[0] + edge[e][1])
    out[e] = vert_body[vertadr[0] + v[0]]
```

### Good
```python
@wp.kernel
def bodies(vertadr: wp.array(dtype=int), edge: wp.array(dtype=wp.vec2i),
           vert_body: wp.array(dtype=int), out: wp.array(dtype=int)):
    e = wp.tid()
    v = wp.vec2i(vertadr[0] + edge[e][0], vertadr[0] + edge[e][1])
    out[e] = vert_body[v[0]]
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index_spaces import index_spaces
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


class OffsetAddedTwice(Rule):
    id = "WH057"
    name = "offset-added-twice"
    summary = "an index adds the same loaded offset twice (directly or through a local it was built from)"
    severity = Severity.WARNING
    priority = 55

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        types = ctx.types(kernel)
        spaces = index_spaces(ctx.model, kernel, types)
        for access in spaces.indexings:
            for index in access.indices:
                if not isinstance(index, ast.BinOp):
                    continue  # a name alone: its own definition is where an offset would be added twice
                terms = spaces.additive_terms(index)
                twice = sorted(term for term, count in terms.items() if count >= 2)
                if not twice:
                    continue
                offset = next(
                    (n for n in ast.walk(index) if isinstance(n, ast.Subscript) and ast.dump(n) == twice[0]),
                    None,
                )
                offset_text = ctx.source_of(offset) if offset is not None else "the offset"
                yield self.report(
                    ctx,
                    index,
                    f"`{ctx.source_of(index)}` adds `{offset_text}` twice: one of its terms already "
                    f"includes it, so the index leaves `{access.array}`'s numbering",
                    kernel=kernel.name,
                    expected=f"`{offset_text}` added once",
                    actual=ctx.source_of(access.node),
                    hint=f"drop the second `{offset_text}` (the term built from it is already global)",
                )
