"""## WH022 array-index-count

An array indexed inside a kernel or `@wp.func` with a number of indices that Warp refuses for it:

- more indices than the array has dimensions: `a[i, j, k]` on a `wp.array2d`, `v[i, 0]` on a
  1-D `wp.array(dtype=wp.vec3)` (the component is `v[i][0]`);
- fewer indices in a store: `a[i] = x` or `a[i] += x` on a 2-D array;
- fewer indices where a value is needed: `a[i]` of a 2-D array is a 1-D view (a row), not an
  element, so `a[i] * 2.0`, `-a[i]`, `a[i] > 0.0`, `out[i] = a[i]`, `s += a[i]` and `return a[i]`
  from a function annotated to return a scalar are all refused.

A row view used as one (`row = a[i]` then `row[j]`, `a[i][j]`, `a[i].shape[0]`, `len(a[i])`, passed
to a function taking an array) is legal and left alone, and so are slices, vector and matrix
elements (`v[i][0]`, `m[i][0, 1]`) and arrays of unknown rank. Calls of builtins with a row are
judged by WH004.

### Why it matters
Warp refuses the module when it builds it: `Incorrect number of indices specified for array
indexing, got 3 indices for a 2 dimensional array`, `The number of indices provided (1) does not
match the array dimensions (2) for array store`, `Couldn't find function overload for 'mul' that
matched inputs with types: [array(ndim=1, dtype=float32), float32]`, `array_store() value argument
type (array(ndim=1, dtype=float32)) must be of the same type as the array (float32)`; a comparison
such as `a[i] > 0.0` passes code generation and fails in the C++ compiler (`invalid operands to
binary expression ('wp::array_t<float>' and 'const float')`).

The fix for a vector or matrix component written as an extra index (`v[i, 0]`) indexes the
element instead: `v[i][0]`.

### Bad
```python
@wp.kernel
def blur(img: wp.array2d(dtype=float), out: wp.array2d(dtype=float), pts: wp.array(dtype=wp.vec3)):
    i, j = wp.tid()
    out[i] = 0.5 * img[i]
    x = pts[i, 0]
```

### Good
```python
@wp.kernel
def blur(img: wp.array2d(dtype=float), out: wp.array2d(dtype=float), pts: wp.array(dtype=wp.vec3)):
    i, j = wp.tid()
    out[i, j] = 0.5 * img[i, j]
    x = pts[i][0]
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.host_dtypes import type_text
from warp_harness.model.index import body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import (
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Struct,
    Tile,
    Transform,
    TupleType,
    UnknownType,
    Vector,
)
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import OPERATOR_TEXT, kernel_model

# array kinds whose indexing Warp checks the same way (measured with Warp 1.19)
_KINDS = ("array", "indexedarray")
_ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _indices(n: int) -> str:
    return "1 index" if n == 1 else f"{n} indices"


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _row(base: Array, count: int) -> str:
    rest = base.ndim - count
    return f"a {rest}-D view" + (" (a row)" if rest == 1 else "")


class ArrayIndexCount(Rule):
    id = "WH022"
    name = "array-index-count"
    summary = (
        "an array indexed with more indices than it has dimensions, or too few where an element is needed"
    )
    severity = Severity.ERROR
    priority = 72
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        model = kernel_model(ctx, kernel)
        types = model.types(kernel)
        parents: dict[int, ast.AST] | None = None
        for sub in body_index(kernel.node).of(ast.Subscript):
            base = types.of(sub.value)
            if not isinstance(base, Array) or base.kind not in _KINDS:
                continue
            elements = list(sub.slice.elts) if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            if any(isinstance(e, ast.Slice | ast.Starred) for e in elements):
                continue
            if any(isinstance(types.of(e), TupleType | Vector | Matrix | Array | Tile) for e in elements):
                continue  # Warp refuses these for another reason
            count = len(elements)
            if count > base.ndim:
                yield self._too_many(ctx, kernel, sub, base, elements)
            elif count < base.ndim:
                if parents is None:
                    parents = {id(c): p for p in walk_body(kernel.node) for c in ast.iter_child_nodes(p)}
                if isinstance(sub.ctx, ast.Store):
                    augmented = isinstance(parents.get(id(sub)), ast.AugAssign)
                    yield self._store(ctx, kernel, sub, base, count, augmented)
                    continue
                record = self._value_use(ctx, kernel, types, parents, sub, base, count)
                if record is not None:
                    yield record

    def _too_many(
        self, ctx: RuleContext, kernel: KernelDef, sub: ast.Subscript, base: Array, elements: list[ast.expr]
    ) -> Record:
        count = len(elements)
        name = _short(ctx.source_of(sub.value))
        fix: Fix | None = None
        hint = f"`{name}` takes {_indices(base.ndim)}"
        extra = count - base.ndim
        element = base.dtype
        # a component written as an extra index: `v[i, 0]`, `m[i, r, c]` (one extra index on a matrix
        # array could mean a row or a typo for another array's rank: no fix)
        if (isinstance(element, Vector | Quaternion) and extra == 1) or (
            isinstance(element, Matrix) and extra == 2
        ):
            inner = ", ".join(ctx.source_of(e) for e in elements[: base.ndim])
            rest = ", ".join(ctx.source_of(e) for e in elements[base.ndim :])
            text = f"{ctx.source_of(sub.value)}[{inner}][{rest}]"
            kind = "vector" if isinstance(element, Vector | Quaternion) else "matrix"
            hint = f"to reach a component of a {kind} element, index the element: `{_short(text, 60)}`"
            fix = Fix(f"index the element: `{_short(text, 60)}`", (ctx.replace(sub, text),))
        return self.report(
            ctx,
            sub,
            f"`{_short(ctx.source_of(sub))}` indexes `{name}` with {_indices(count)}, but it is a "
            f"{base.ndim}-D array of {type_text(base.dtype)}: Warp refuses it (`Incorrect number of indices "
            f"specified for array indexing, got {count} indices for a {base.ndim} dimensional array`)",
            kernel=kernel.name,
            expected=base.ndim,
            actual=count,
            hint=hint,
            fix=fix,
        )

    def _store(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        sub: ast.Subscript,
        base: Array,
        count: int,
        augmented: bool,
    ) -> Record:
        name = _short(ctx.source_of(sub.value))
        says = (
            "`Num indices < num dimensions for atomic_add()`"
            if augmented
            else f"`The number of indices provided ({count}) does not match the array dimensions "
            f"({base.ndim}) for array store`"
        )
        hint = ", ".join(["i", "j", "k", "l"][: base.ndim])
        return self.report(
            ctx,
            sub,
            f"store into `{_short(ctx.source_of(sub))}` with {_indices(count)} on the {base.ndim}-D array "
            f"`{name}`: `{_short(ctx.source_of(sub))}` is {_row(base, count)}, not an element, and Warp "
            f"refuses the store ({says})",
            kernel=kernel.name,
            expected=base.ndim,
            actual=count,
            hint=f"index every dimension of `{name}` ({_indices(base.ndim)}), e.g. `{name}[{hint}] = ...`",
        )

    def _value_use(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        parents: dict[int, ast.AST],
        sub: ast.Subscript,
        base: Array,
        count: int,
    ) -> Record | None:
        parent = parents.get(id(sub))
        use: str | None = None
        if isinstance(parent, ast.BinOp):
            use = f"the operand of `{OPERATOR_TEXT.get(type(parent.op), '?')}`"
        elif isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub | ast.UAdd | ast.Invert):
            use = "negated" if isinstance(parent.op, ast.USub) else "the operand of a unary operator"
        elif isinstance(parent, ast.Compare) and all(isinstance(op, _ORDERINGS) for op in parent.ops):
            use = "compared (the C++ compiler refuses it)"
        elif isinstance(parent, ast.Assign) and parent.value is sub:
            if any(
                isinstance(t, ast.Subscript) and isinstance(types.of(t.value), Array) for t in parent.targets
            ):
                use = "stored into an array element"
        elif isinstance(parent, ast.AugAssign) and parent.value is sub:
            use = f"the operand of `{OPERATOR_TEXT.get(type(parent.op), '?')}=`"
        elif isinstance(parent, ast.Return) and kernel.kind == "func":
            returned = kernel_model(ctx, kernel).resolver.resolve(kernel.return_annotation)
            if isinstance(returned, Scalar | Vector | Matrix | Quaternion | Transform | Struct):
                use = f"returned from a function annotated to return {returned}"
        if use is None:
            return None
        name = _short(ctx.source_of(sub.value))
        return self.report(
            ctx,
            sub,
            f"`{_short(ctx.source_of(sub))}` indexes the {base.ndim}-D array `{name}` with "
            f"{_indices(count)}: it is {_row(base, count)}, not {_element(base)}, and is {use}; Warp refuses "
            "the module",
            kernel=kernel.name,
            expected=base.ndim,
            actual=count,
            hint=f"index every dimension of `{name}` ({_indices(base.ndim)}) to read one element",
        )


def _element(base: Array) -> str:
    if isinstance(base.dtype, UnknownType):
        return "an element"
    return f"a {type_text(base.dtype)} element"
