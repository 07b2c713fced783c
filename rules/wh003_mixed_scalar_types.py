"""## WH003 mixed-scalar-types

Arithmetic on two values whose scalar types differ, where Warp has no overload and converts
nothing implicitly: `float16 * float32`, `float32 * int32`, `int32 + int64`, a vector or matrix
scaled by a scalar of another type, `min`/`max`/`clamp` of mixed scalars, a value stored into an
array element of another type (`a[i] = 2.0` into an `int32` array), and `+=` / `-=` into an array
element of another type (compiled as an atomic add / subtract).

Literals have fixed types in Warp: `2` is int32 and `2.0` is float32, with no promotion. So
`h * 2.0` fails when `h` is float16, `x * 2` fails when `x` is float32; `i / 2` on ints is fine.
Comparisons (`x < 1`) are not affected. Only values whose types are known are checked; types
follow values through calls, from Warp's own builtin registry and the file's `@wp.func` helpers:
`flags[i] = wp.where(c, 1.0, 0.0)` stores a float32 (`wp.where` has the type of its values) into an
int32 array, `wp.length(v)`, `wp.dot(a, b)` are float32 for vec3 arguments, `wp.vec3(...)`,
`wp.vector(..., dtype=wp.float64)`, `wp.identity(n=3, dtype=float)` have the type they construct,
`wp.atomic_add(a, i, v)` returns the array's element type.

The fix is an explicit conversion: a literal of the right type (`2.0` instead of `2`, both values of
a `wp.where` of literals), or a cast such as `wp.float16(2.0)`, `float(i)` or `wp.float32(h)`.

### Why it matters
Warp refuses the module at code generation with `Input types must be the same, got ['float16',
'float32']`, `Object and coefficient must have the same scalar type when multiplying by scalar`,
or `array_store() value argument type (float32) must be of the same type as the array (int32)`,
after importing the module and building everything before it.

### Bad
```python
@wp.kernel
def scale(x: wp.array(dtype=wp.float16), n: wp.array(dtype=int)):
    i = wp.tid()
    x[i] = x[i] * 2.0
    n[i] = 2.0
```

### Good
```python
@wp.kernel
def scale(x: wp.array(dtype=wp.float16), n: wp.array(dtype=int)):
    i = wp.tid()
    x[i] = x[i] * wp.float16(2.0)
    n[i] = 2
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.refined_types import ModuleTypeFacts, RefinedTypes, known
from warp_harness.model.types import (
    BOOL,
    FLOAT32,
    INT32,
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Transform,
    Vector,
    WarpType,
    warp_type_name,
)
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import OPERATOR_TEXT

_ARITHMETIC = {op: text for op, text in OPERATOR_TEXT.items() if op is not ast.MatMult}
_SUFFIX = {
    "float16": "h",
    "float32": "f",
    "float64": "d",
    "int32": "i",
    "uint32": "ui",
    "int8": "b",
    "uint8": "ub",
    "int16": "s",
    "uint16": "us",
    "int64": "l",
    "uint64": "ul",
}
# builtins whose scalar arguments must all have one type: generic over every scalar ...
_SAME_TYPE_SCALAR = {"min", "max", "clamp"}
# ... or over float types only (an int argument makes Warp find no overload at all)
_SAME_TYPE_FLOAT = {"atan2", "pow", "copysign", "lerp", "smoothstep"}
_SAME_TYPE = frozenset(_SAME_TYPE_SCALAR | _SAME_TYPE_FLOAT)
_PY_SAME_TYPE = {"min": "min", "max": "max", "pow": "pow"}


def _constructor_name(t: WarpType) -> str | None:
    """The ``warp`` attribute that converts a value to ``t`` (``float16``, ``vec3``, ``vec3h``)."""
    if isinstance(t, Scalar):
        return t.name if t.name != "bool" else None
    suffix = "" if isinstance(t, Vector | Matrix | Quaternion | Transform) and t.dtype == FLOAT32 else None
    if isinstance(t, Vector | Matrix | Quaternion | Transform):
        suffix = suffix if suffix is not None else _SUFFIX.get(t.dtype.name)
        if suffix is None:
            return None
    if isinstance(t, Vector) and 2 <= t.length <= 4:
        return f"vec{t.length}{suffix}"
    if isinstance(t, Matrix) and t.rows == t.cols and 2 <= t.rows <= 4:
        return f"mat{t.rows}{t.cols}{suffix}"
    if isinstance(t, Quaternion):
        return f"quat{suffix}"
    if isinstance(t, Transform):
        return f"transform{suffix}"
    return None


def _literal(node: ast.expr) -> int | float | None:
    """The value of a numeric literal (``2``, ``-1.5``), else None."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _literal(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def _float_text(value: int | float) -> str:
    text = repr(float(value))
    return text if "e" in text or "." in text or "n" in text else text + ".0"


def _a(word: str) -> str:
    return f"an {word}" if word.startswith("int") else f"a {word}"


def _is_number(t: WarpType) -> bool:
    return isinstance(t, Scalar) and t.name != BOOL.name  # (by name: cheaper than the dataclass's `!=`)


def _rank(t: Scalar) -> tuple[int, int, int]:
    """Order for picking the wider of two scalar types: floats above ints, then by size."""
    return (1 if t.is_float else 0, t.byte_size, 0 if t.name.startswith("u") else 1)


@dataclass
class _Edit:
    """A replacement of one expression's text in a fix."""

    node: ast.expr
    text: str
    safe: bool


class MixedScalarTypes(Rule):
    id = "WH003"
    name = "mixed-scalar-types"
    summary = "arithmetic or a store mixing scalar types Warp does not convert implicitly"
    severity = Severity.ERROR
    priority = 75
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        facts = ctx.once((self.id, "facts"), lambda: ModuleTypeFacts(ctx.model))
        types = RefinedTypes(kernel, ctx.types(kernel), facts, ctx.builtins)
        for node in body_index(kernel.node).of_any(ast.BinOp, ast.AugAssign, ast.Assign, ast.Call):
            record: Record | None = None
            if isinstance(node, ast.BinOp):
                record = self._binop(ctx, kernel, types, node)
            elif isinstance(node, ast.AugAssign):
                record = self._augassign(ctx, kernel, types, node)
            elif isinstance(node, ast.Assign):
                record = self._store(ctx, kernel, types, node)
            elif isinstance(node, ast.Call):
                record = self._call(ctx, kernel, types, node)
            if record is not None:
                yield record

    # conversions --------------------------------------------------------------------------------
    def _warp_ref(self, ctx: RuleContext, name: str) -> str | None:
        """How this file spells ``warp.<name>`` (``wp.float16``, ``warp.float16``, ``float16``)."""
        modules = ctx.imports.modules
        aliases = sorted(local for local, module in modules.items() if module == "warp")
        if aliases:
            return f"{'wp' if 'wp' in aliases else aliases[0]}.{name}"
        for local, path in ctx.imports.objects.items():
            if path == f"warp.{name}":
                return local
        return None

    def _cast(self, ctx: RuleContext, node: ast.expr, target: WarpType) -> _Edit | None:
        """An edit that turns ``node`` into a value of type ``target``."""
        value = _literal(node)
        if value is not None and isinstance(target, Scalar):
            if target == FLOAT32:
                return _Edit(node, _float_text(value), True)
            if target == INT32 and float(value).is_integer():
                return _Edit(node, str(int(value)), True)
            ref = self._warp_ref(ctx, target.name)
            if ref is None:
                return None
            if target.is_float:
                return _Edit(node, f"{ref}({_float_text(value)})", True)
            if float(value).is_integer():
                return _Edit(node, f"{ref}({int(value)})", True)
            return None
        source = ctx.source_of(node)
        if target == FLOAT32:
            return _Edit(node, f"float({source})", False)
        if target == INT32:
            return _Edit(node, f"int({source})", False)
        ctor = _constructor_name(target)
        ref = self._warp_ref(ctx, ctor) if ctor else None
        return _Edit(node, f"{ref}({source})", False) if ref else None

    def _fix(self, ctx: RuleContext, edit: _Edit | None) -> Fix | None:
        if edit is None:
            return None
        title = f"Write `{edit.text}`" if edit.safe else f"Convert with `{edit.text}`"
        return Fix(title, (ctx.replace(edit.node, edit.text),), safe=edit.safe)

    def _pick(
        self, ctx: RuleContext, left: ast.expr, lt: Scalar, right: ast.expr, rt: Scalar
    ) -> _Edit | None:
        """Convert one side of a scalar/scalar mix: a literal adapts to the variable, except a float
        literal next to an int (then the int becomes a float); else the narrower side is widened."""
        ll, rl = _literal(left), _literal(right)
        if (ll is None) != (rl is None):
            lit, lit_t, other, other_t = (left, lt, right, rt) if ll is not None else (right, rt, left, lt)
            if lit_t.is_float and other_t.is_int:
                return self._cast(ctx, other, lit_t)
            return self._cast(ctx, lit, other_t)
        if _rank(lt) >= _rank(rt):
            return self._cast(ctx, right, lt)
        return self._cast(ctx, left, rt)

    # checks -------------------------------------------------------------------------------------
    def _mismatch(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        node: ast.expr,
        op: ast.operator,
        left: ast.expr,
        lt: WarpType,
        right: ast.expr,
        rt: WarpType,
        anchor: ast.AST,
    ) -> Record | None:
        if type(op) not in _ARITHMETIC or not (known(lt) and known(rt)):
            return None
        if _is_number(lt) and _is_number(rt):
            assert isinstance(lt, Scalar) and isinstance(rt, Scalar)
            if lt.name == rt.name:
                return None
            if isinstance(op, ast.Pow):
                warp = (
                    f"Couldn't find function overload for 'pow' that matched inputs with types: [{lt}, {rt}]"
                )
            else:
                warp = f"Input types must be the same, got ['{lt}', '{rt}']"
            edit = self._pick(ctx, left, lt, right, rt)
            text = ctx.source_of(anchor)  # only when there is a record to write
            return self.report(
                ctx,
                anchor,
                f'`{text}` mixes {lt} and {rt}; Warp has no implicit conversion: "{warp}"',
                kernel=kernel.name,
                expected=str(lt if edit is None or edit.node is right else rt),
                actual=f"{lt} {_ARITHMETIC[type(op)]} {rt}",
                hint=self._hint(edit, lt, rt),
                fix=self._fix(ctx, edit),
            )
        vec = (Vector, Matrix, Quaternion)
        scaled: tuple[ast.expr, WarpType, ast.expr, Scalar] | None = None
        if isinstance(lt, vec) and _is_number(rt) and isinstance(op, ast.Mult | ast.Div):
            assert isinstance(rt, Scalar)
            scaled = (left, lt, right, rt)
        elif isinstance(rt, vec) and _is_number(lt) and isinstance(op, ast.Mult | ast.Div):
            assert isinstance(lt, Scalar)
            scaled = (right, rt, left, lt)
        if scaled is not None:
            _obj, obj_t, coeff, coeff_t = scaled
            assert isinstance(obj_t, Vector | Matrix | Quaternion)
            if obj_t.dtype == coeff_t:
                return None
            edit = self._cast(ctx, coeff, obj_t.dtype)
            text = ctx.source_of(anchor)
            return self.report(
                ctx,
                anchor,
                f"`{text}` scales {_a(warp_type_name(obj_t))} by {_a(str(coeff_t))}; "
                f'Warp: "Object and coefficient must '
                f'have the same scalar type when multiplying by scalar"',
                kernel=kernel.name,
                expected=str(obj_t.dtype),
                actual=str(coeff_t),
                hint=f"make the coefficient a {obj_t.dtype}" + (f": `{edit.text}`" if edit else ""),
                fix=self._fix(ctx, edit),
            )
        same_kind = (isinstance(lt, Vector) and isinstance(rt, Vector) and lt.length == rt.length) or (
            isinstance(lt, Matrix) and isinstance(rt, Matrix) and (lt.rows, lt.cols) == (rt.rows, rt.cols)
        )
        if same_kind and isinstance(op, ast.Add | ast.Sub):
            assert isinstance(lt, Vector | Matrix) and isinstance(rt, Vector | Matrix)
            if lt.dtype == rt.dtype:
                return None
            wide_left = _rank(lt.dtype) >= _rank(rt.dtype)
            edit = self._cast(ctx, right if wide_left else left, lt if wide_left else rt)
            ln, rn = warp_type_name(lt), warp_type_name(rt)
            text = ctx.source_of(anchor)
            return self.report(
                ctx,
                anchor,
                f"`{text}` mixes {ln} and {rn}; Warp: \"Input types must be the same, got ['{ln}', '{rn}']\"",
                kernel=kernel.name,
                expected=ln if wide_left else rn,
                actual=f"{ln} {_ARITHMETIC[type(op)]} {rn}",
                hint=self._hint(edit, lt, rt),
                fix=self._fix(ctx, edit),
            )
        return None

    def _hint(self, edit: _Edit | None, lt: WarpType, rt: WarpType) -> str:
        if edit is None:
            return (
                f"convert one side explicitly so both are {warp_type_name(lt)} or both {warp_type_name(rt)}"
            )
        return f"convert explicitly: `{edit.text}`"

    def _binop(
        self, ctx: RuleContext, kernel: KernelDef, types: RefinedTypes, node: ast.BinOp
    ) -> Record | None:
        return self._mismatch(
            ctx, kernel, node, node.op, node.left, types.of(node.left), node.right, types.of(node.right), node
        )

    def _array_element(self, types: RefinedTypes, target: ast.expr) -> Array | None:
        """The array when ``target`` is one element of it (``a[i]``, ``a[i, j]`` with all indices)."""
        if not isinstance(target, ast.Subscript):
            return None
        base = types.of(target.value)
        if not isinstance(base, Array) or base.kind != "array" or not known(base.dtype):
            return None
        index = target.slice
        if isinstance(index, ast.Slice) or (
            isinstance(index, ast.Tuple) and any(isinstance(e, ast.Slice | ast.Starred) for e in index.elts)
        ):
            return None
        count = len(index.elts) if isinstance(index, ast.Tuple) else 1
        return base if count == base.ndim else None

    def _comparable(self, a: WarpType, b: WarpType) -> bool:
        return isinstance(a, Scalar | Vector | Matrix | Quaternion | Transform) and isinstance(
            b, Scalar | Vector | Matrix | Quaternion | Transform
        )

    def _store_mismatch(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        array: Array,
        value: ast.expr,
        value_t: WarpType,
        anchor: ast.AST,
        builtin: str,
    ) -> Record | None:
        dtype = array.dtype
        if not self._comparable(dtype, value_t) or dtype == value_t:
            return None
        if (isinstance(value_t, Scalar) and value_t == BOOL) or (isinstance(dtype, Scalar) and dtype == BOOL):
            return None
        vn, dn = warp_type_name(value_t), warp_type_name(dtype)
        edits = self._where_literals(ctx, value, dtype)
        edit = (
            self._cast(ctx, value, dtype)
            if edits is None and isinstance(dtype, Scalar) == isinstance(value_t, Scalar)
            else None
        )
        what, preposition = {"array_store": ("stores", "into"), "atomic_add": ("adds", "to")}.get(
            builtin, ("subtracts", "from")
        )
        return self.report(
            ctx,
            anchor,
            f"`{ctx.source_of(anchor)}` {what} {_a(vn)} {preposition} an element of {_a(dn)} array; "
            f'Warp: "{builtin}() value argument type ({vn}) must be of the same type as the array ({dn})"',
            kernel=kernel.name,
            expected=dn,
            actual=vn,
            hint=(
                f"convert the value: `{edit.text}`"
                if edit
                else "write the values as " + " and ".join(f"`{e.text}`" for e in edits)
                if edits
                else f"give the value the array's type, {dn}"
            ),
            fix=self._fix(ctx, edit) if edits is None else self._fix_all(ctx, edits, dn),
        )

    def _where_literals(self, ctx: RuleContext, value: ast.expr, dtype: WarpType) -> list[_Edit] | None:
        """``wp.where(c, 1.0, 0.0)`` stored into an int32 array: both values as int32 literals."""
        if not (
            isinstance(value, ast.Call)
            and ctx.imports.warp_name(value.func) == "where"
            and len(value.args) == 3
            and not value.keywords
            and isinstance(dtype, Scalar)
        ):
            return None
        edits = []
        for branch in value.args[1:]:
            if _literal(branch) is None:
                return None
            edit = self._cast(ctx, branch, dtype)
            if edit is None or not edit.safe:
                return None
            edits.append(edit)
        return edits

    def _fix_all(self, ctx: RuleContext, edits: list[_Edit], type_name: str) -> Fix:
        return Fix(
            f"Write the values as {type_name}: " + ", ".join(f"`{e.text}`" for e in edits),
            tuple(ctx.replace(e.node, e.text) for e in edits),
            safe=all(e.safe for e in edits),
        )

    def _store(
        self, ctx: RuleContext, kernel: KernelDef, types: RefinedTypes, node: ast.Assign
    ) -> Record | None:
        if len(node.targets) != 1:
            return None
        array = self._array_element(types, node.targets[0])
        if array is None:
            return None
        return self._store_mismatch(ctx, kernel, array, node.value, types.of(node.value), node, "array_store")

    def _augassign(
        self, ctx: RuleContext, kernel: KernelDef, types: RefinedTypes, node: ast.AugAssign
    ) -> Record | None:
        array = self._array_element(types, node.target)
        value_t = types.of(node.value)
        if array is not None and isinstance(node.op, ast.Add | ast.Sub):
            builtin = "atomic_add" if isinstance(node.op, ast.Add) else "atomic_sub"
            return self._store_mismatch(ctx, kernel, array, node.value, value_t, node, builtin)
        if array is None and not isinstance(node.target, ast.Name):
            return None
        target_t = array.dtype if array is not None else types.of(node.target)
        if _is_number(target_t) and _is_number(value_t) and target_t != value_t:
            assert isinstance(target_t, Scalar) and isinstance(value_t, Scalar)
            if type(node.op) not in _ARITHMETIC:
                return None
            edit = self._cast(ctx, node.value, target_t)
            op = _ARITHMETIC[type(node.op)]
            warp = (
                f"Couldn't find function overload for 'pow' that matched inputs with types: "
                f"[{target_t}, {value_t}]"
                if isinstance(node.op, ast.Pow)
                else f"Input types must be the same, got ['{target_t}', '{value_t}']"
            )
            return self.report(
                ctx,
                node,
                f"`{ctx.source_of(node)}` mixes {target_t} and {value_t}; "
                f"Warp has no implicit conversion: "
                f'"{warp}"',
                kernel=kernel.name,
                expected=str(target_t),
                actual=f"{target_t} {op}= {value_t}",
                hint=self._hint(edit, target_t, value_t),
                fix=self._fix(ctx, edit),
            )
        if isinstance(node.target, ast.Name):
            return self._mismatch(
                ctx, kernel, node.target, node.op, node.target, target_t, node.value, value_t, node
            )
        return None

    def _call(
        self, ctx: RuleContext, kernel: KernelDef, types: RefinedTypes, node: ast.Call
    ) -> Record | None:
        if node.keywords or len(node.args) < 2:
            return None
        imports = ctx.imports
        name = imports.warp_name(node.func) or imports.math_name(node.func)
        if (
            name is None
            and isinstance(node.func, ast.Name)
            and node.func.id not in types.local
            and node.func.id not in ctx.funcs
        ):
            name = _PY_SAME_TYPE.get(node.func.id)
        if name not in _SAME_TYPE:
            return None
        if any(isinstance(a, ast.Starred) for a in node.args):
            return None
        arg_types = [types.of(a) for a in node.args]
        if not all(_is_number(t) for t in arg_types):
            return None
        scalars = [t for t in arg_types if isinstance(t, Scalar)]
        if len(set(scalars)) == 1:
            return None
        if name in _SAME_TYPE_FLOAT and not all(s.is_float for s in scalars):
            warp = (
                f"Couldn't find function overload for '{name}' that matched inputs with types: "
                f"[{', '.join(map(str, scalars))}]"
            )
        else:
            warp = f"Input types must be the same, got {[str(s) for s in scalars]}"
        # the type to convert to: the first argument that is not a literal (or the widest)
        non_literal = [t for a, t in zip(node.args, scalars, strict=True) if _literal(a) is None]
        target = non_literal[0] if non_literal else max(scalars, key=_rank)
        if name in _SAME_TYPE_FLOAT and not target.is_float:
            target = next((s for s in scalars if s.is_float), FLOAT32)
        edits = [self._cast(ctx, a, target) for a, t in zip(node.args, scalars, strict=True) if t != target]
        fix: Fix | None = None
        if edits and all(e is not None for e in edits):
            done = [e for e in edits if e is not None]
            fix = Fix(
                f"Convert the arguments to {target}",
                tuple(ctx.replace(e.node, e.text) for e in done),
                safe=all(e.safe for e in done),
            )
        shown = ", ".join(str(s) for s in scalars)
        return self.report(
            ctx,
            node,
            f'`{ctx.source_of(node)}` passes mixed scalar types ({shown}) to {name}; Warp: "{warp}"',
            kernel=kernel.name,
            expected=str(target),
            actual=f"({shown})",
            hint=f"convert the arguments to {target}"
            + (": " + ", ".join(f"`{e.text}`" for e in edits if e is not None) if fix else ""),
            fix=fix,
        )
