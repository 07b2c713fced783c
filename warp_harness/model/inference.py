"""A small, conservative type inference over a kernel or function body.

It follows Warp's own rules where they are strict: a literal ``1`` is int32 and ``1.0`` is
float32 (no promotion: ``float16 * 2.0`` does not compile), array elements have the array's
dtype, ``wp.tid()`` gives int32s. Whenever it is unsure it answers ``UNKNOWN``.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from warp_harness.model.annotations import AnnotationResolver
from warp_harness.model.constants import Value, fold
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import around_body, full_body_index
from warp_harness.model.kernel import KernelDef, StructDef
from warp_harness.model.types import (
    BOOL,
    FLOAT32,
    INT32,
    SCALAR_ALIASES,
    UNKNOWN,
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Struct,
    Tile,
    Transform,
    TupleType,
    TypeRef,
    Vector,
    WarpType,
    named_warp_type,
    python_value_type,
)
from warp_harness.model.walk import walk


class ReturnTypes(Protocol):
    """What inference needs from the builtin table."""

    def return_type(self, name: str, args: list[WarpType], kwargs: dict[str, WarpType]) -> WarpType: ...


class NoReturnTypes:
    def return_type(self, name: str, args: list[WarpType], kwargs: dict[str, WarpType]) -> WarpType:
        return UNKNOWN


# per file (its resolver) and @wp.func node: the type the function returns, inferred from its body
_FUNC_RETURNS: weakref.WeakKeyDictionary[AnnotationResolver, dict[int, tuple[ast.FunctionDef, WarpType]]] = (
    weakref.WeakKeyDictionary()
)

_COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# `python_value_type` of a literal, by its exact type
_LITERAL_TYPES: dict[type, WarpType] = {bool: BOOL, int: INT32, float: FLOAT32}
_TILE_CREATORS = {"tile_zeros", "tile_ones", "tile_full", "tile_empty", "tile_load", "tile_arange"}
_PY_BUILTIN_TO_WARP = {"min": "min", "max": "max", "abs": "abs", "round": "round", "pow": "pow"}


@dataclass
class KernelTypes:
    """Types of every expression node (by id) and of every local variable of one kernel."""

    kernel: KernelDef
    expr: dict[int, WarpType] = field(default_factory=dict)
    variables: dict[str, WarpType] = field(default_factory=dict)
    # names bound to the result of wp.tid(): name -> position in the unpacked tuple (0 = slowest axis)
    tid_vars: dict[str, int] = field(default_factory=dict)
    # each wp.tid() call's assignment: (call node, number of names it is unpacked into)
    tid_unpacks: list[tuple[ast.Call, int]] = field(default_factory=list)

    def of(self, node: ast.expr) -> WarpType:
        return self.expr.get(id(node), UNKNOWN)


# per file (its resolver) and function node: the node, what else its inference read, the result
_BODIES: weakref.WeakKeyDictionary[
    AnnotationResolver, dict[int, tuple[ast.FunctionDef, tuple[object, ...], KernelTypes]]
] = weakref.WeakKeyDictionary()


def _same(first: tuple[object, ...], second: tuple[object, ...]) -> bool:
    return all(a is b for a, b in zip(first, second, strict=True))


class Inference:
    def __init__(
        self,
        kernel: KernelDef,
        imports: ImportMap,
        constants: Mapping[str, Value],
        resolver: AnnotationResolver,
        structs: Mapping[str, StructDef],
        builtins: ReturnTypes,
        funcs: Mapping[str, KernelDef],
        overloaded: Collection[str] = (),
    ) -> None:
        self.kernel = kernel
        self.imports = imports
        self.constants = constants
        self.resolver = resolver
        self.structs = structs
        self.builtins = builtins
        self.funcs = funcs
        # names of the @wp.func defined more than once in the file: Warp picks among them by argument types
        self.overloaded = overloaded
        self.result = KernelTypes(kernel)
        self._types = self.result.expr
        self.env: dict[str, WarpType] = {p.name: p.type for p in kernel.params}
        self._conflicts: set[str] = set()

    def run(self) -> KernelTypes:
        # a @wp.func is inferred for its own check (`ModuleModel.types`) and for the calls of it
        # (`_func_return`) with the same arguments: the second run reuses the first's result
        memo = _BODIES.setdefault(self.resolver, {})
        node = self.kernel.node
        arguments = self._arguments()
        cached = memo.get(id(node))
        if cached is not None and cached[0] is node and _same(cached[1], arguments):
            return cached[2]
        self._block(node.body)
        self.result.variables = dict(self.env)
        memo[id(node)] = (node, arguments, self.result)
        return self.result

    def _arguments(self) -> tuple[object, ...]:
        """What the result depends on besides the body and the resolver (compared by identity)."""
        return (
            self.kernel,
            self.imports,
            self.constants,
            self.structs,
            self.builtins,
            self.funcs,
            self.overloaded,
        )

    # statements -------------------------------------------------------------------------------
    def _block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            try:
                self._stmt(stmt)
            except RecursionError:
                return

    def _bind(self, name: str, t: WarpType) -> None:
        if name in self._conflicts:
            return
        previous = self.env.get(name)
        if previous is None or previous == t:
            self.env[name] = t
        else:
            # Warp refuses a variable changing type; don't guess which one is meant
            self.env[name] = UNKNOWN
            self._conflicts.add(name)

    def _stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            value_type = self.expr(stmt.value)
            for target in stmt.targets:
                self._assign(target, stmt.value, value_type)
        elif isinstance(stmt, ast.AnnAssign):
            declared = self.resolver.resolve(stmt.annotation)
            if stmt.value is not None:
                self.expr(stmt.value)
            if isinstance(stmt.target, ast.Name):
                self._bind(stmt.target.id, declared)
            else:
                self.expr(stmt.target)
        elif isinstance(stmt, ast.AugAssign):
            self.expr(stmt.value)
            self.expr(stmt.target)
        elif isinstance(stmt, ast.For):
            self.expr(stmt.iter)
            loop_type: WarpType = UNKNOWN
            if (
                isinstance(stmt.iter, ast.Call)
                and isinstance(stmt.iter.func, ast.Name)
                and stmt.iter.func.id == "range"
            ):
                loop_type = INT32
            if isinstance(stmt.target, ast.Name):
                self._bind(stmt.target.id, loop_type)
            self._block(stmt.body)
            self._block(stmt.orelse)
        elif isinstance(stmt, ast.While):
            self.expr(stmt.test)
            self._block(stmt.body)
            self._block(stmt.orelse)
        elif isinstance(stmt, ast.If):
            self.expr(stmt.test)
            self._block(stmt.body)
            self._block(stmt.orelse)
        elif isinstance(stmt, ast.Expr | ast.Return):
            if stmt.value is not None:
                self.expr(stmt.value)
        elif isinstance(stmt, ast.With):
            for item in stmt.items:
                self.expr(item.context_expr)
            self._block(stmt.body)
        elif isinstance(stmt, ast.Try):
            self._block(stmt.body)
            for handler in stmt.handlers:
                self._block(handler.body)
            self._block(stmt.orelse)
            self._block(stmt.finalbody)
        elif isinstance(stmt, ast.Assert):
            self.expr(stmt.test)

    def _assign(self, target: ast.expr, value: ast.expr, value_type: WarpType) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, value_type)
            if self._is_tid_call(value):
                assert isinstance(value, ast.Call)
                self.result.tid_vars[target.id] = 0
                self.result.tid_unpacks.append((value, 1))
        elif isinstance(target, ast.Tuple | ast.List):
            if self._is_tid_call(value):
                assert isinstance(value, ast.Call)
                self.result.tid_unpacks.append((value, len(target.elts)))
                for position, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):
                        self._bind(element.id, INT32)
                        if element.id != "_":
                            self.result.tid_vars[element.id] = position
                return
            elements = value_type.elements if isinstance(value_type, TupleType) else ()
            for position, element in enumerate(target.elts):
                element_type = elements[position] if position < len(elements) else UNKNOWN
                if isinstance(element, ast.Name):
                    self._bind(element.id, element_type)
                else:
                    self.expr(element)
        else:
            self.expr(target)

    def _is_tid_call(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and self.imports.warp_name(node.func) == "tid"

    # expressions ------------------------------------------------------------------------------
    def expr(self, node: ast.expr) -> WarpType:
        # by exact type: the parser makes no subclasses of these
        handler = _EXPRESSIONS.get(type(node))
        t = handler(self, node) if handler is not None else self._other(node)
        self._types[id(node)] = t
        return t

    def _other(self, node: ast.expr) -> WarpType:
        """Any other expression: its children are typed, it is not."""
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return UNKNOWN

    def _constant(self, node: ast.Constant) -> WarpType:
        value = node.value
        found = _LITERAL_TYPES.get(type(value))
        return found if found is not None else python_value_type(value)

    def _unaryop(self, node: ast.UnaryOp) -> WarpType:
        operand = self.expr(node.operand)
        return BOOL if isinstance(node.op, ast.Not) else operand

    def _boolop(self, node: ast.BoolOp) -> WarpType:
        for v in node.values:
            self.expr(v)
        return BOOL

    def _compare(self, node: ast.Compare) -> WarpType:
        self.expr(node.left)
        for c in node.comparators:
            self.expr(c)
        return BOOL

    def _ifexp(self, node: ast.IfExp) -> WarpType:
        self.expr(node.test)
        body, orelse = self.expr(node.body), self.expr(node.orelse)
        return body if body == orelse else UNKNOWN

    def _sequence(self, node: ast.Tuple | ast.List) -> WarpType:
        return TupleType(tuple(self.expr(e) for e in node.elts))

    def _name(self, node: ast.Name) -> WarpType:
        bound = self.env.get(node.id)
        if bound is not None:
            return bound
        if node.id in self.constants:
            return python_value_type(self.constants[node.id])
        if node.id in self.structs:
            return TypeRef(Struct(node.id))
        warp = self.imports.warp_name(node)
        if warp is not None:
            named = named_warp_type(warp)
            return TypeRef(named) if named is not UNKNOWN else UNKNOWN
        if node.id in ("float", "int", "bool"):
            return TypeRef(Scalar(SCALAR_ALIASES[node.id]))
        return UNKNOWN

    def _attribute(self, node: ast.Attribute) -> WarpType:
        warp = self.imports.warp_name(node)
        if warp is not None:
            named = named_warp_type(warp)
            return TypeRef(named) if named is not UNKNOWN else UNKNOWN
        base = self.expr(node.value)
        if isinstance(base, Array) and node.attr == "shape":
            return TupleType(tuple(INT32 for _ in range(base.ndim)))
        if isinstance(base, Vector | Quaternion) and node.attr in _COMPONENTS:
            return (
                base.dtype
                if _COMPONENTS[node.attr] < (4 if isinstance(base, Quaternion) else base.length)
                else UNKNOWN
            )
        if isinstance(base, Transform) and node.attr == "p":
            return Vector(3, base.dtype)
        if isinstance(base, Transform) and node.attr == "q":
            return Quaternion(base.dtype)
        if isinstance(base, Struct) and base.name in self.structs:
            annotation = self.structs[base.name].fields.get(node.attr)
            return self.resolver.resolve(annotation)
        return UNKNOWN

    def _index_count(self, index: ast.expr) -> int:
        return len(index.elts) if isinstance(index, ast.Tuple) else 1

    def _subscript(self, node: ast.Subscript) -> WarpType:
        base = self.expr(node.value)
        self.expr(node.slice)
        has_slice = isinstance(node.slice, ast.Slice) or (
            isinstance(node.slice, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.slice.elts)
        )
        if isinstance(base, TupleType):
            index = fold(node.slice, self.constants, self.imports)
            if isinstance(index, int) and -len(base.elements) <= index < len(base.elements):
                return base.elements[index]
            return UNKNOWN
        if has_slice:
            return UNKNOWN
        count = self._index_count(node.slice)
        if isinstance(base, Array):
            if count == base.ndim:
                return base.dtype
            if count < base.ndim:
                return Array(base.dtype, base.ndim - count, base.kind)
            return UNKNOWN
        if isinstance(base, Vector | Quaternion):
            return base.dtype if count == 1 else UNKNOWN
        if isinstance(base, Matrix):
            if count == 1:
                return Vector(base.cols, base.dtype)
            return base.dtype if count == 2 else UNKNOWN
        if isinstance(base, Tile) and base.shape is not None and count == len(base.shape):
            return base.dtype
        return UNKNOWN

    def _binop(self, node: ast.BinOp) -> WarpType:
        left, right = self.expr(node.left), self.expr(node.right)
        return binop_result(node.op, left, right)

    def _call(self, node: ast.Call) -> WarpType:
        args = [self.expr(a) for a in node.args]
        kwargs = {kw.arg: self.expr(kw.value) for kw in node.keywords if kw.arg}
        func = node.func
        warp = self.imports.warp_name(func)
        if warp is None:
            warp = self.imports.math_name(func)
        if warp is None and isinstance(func, ast.Name):
            if func.id in self.env:
                return UNKNOWN  # a local or a parameter: nothing the model can call
            if func.id in self.funcs:
                return self._func_return(func.id)
            if func.id in ("float", "int", "bool"):
                return Scalar(SCALAR_ALIASES[func.id])
            if func.id in self.structs:
                return Struct(func.id)
            alias = self.resolver.aliases.get(func.id)
            if isinstance(alias, Scalar | Vector | Matrix | Quaternion | Transform):
                return alias  # `vec6f = wp.types.vector(length=6, dtype=float)`: `vec6f(...)` makes one
            warp = _PY_BUILTIN_TO_WARP.get(func.id)
        if warp is None:
            if isinstance(func, ast.Attribute):
                self.expr(func.value)
            return UNKNOWN
        if warp == "tid":
            return INT32
        constructed = named_warp_type(warp)
        if constructed is not UNKNOWN:
            return constructed
        if warp in _TILE_CREATORS:
            return self._tile(node, warp, args, kwargs)
        if warp in ("static", "constant"):
            return UNKNOWN
        if warp in ("vector", "matrix", "identity") and not any(
            isinstance(a, ast.Starred) for a in node.args
        ):
            if any(kw.arg is None for kw in node.keywords):
                return UNKNOWN
            built = self._constructed(node, warp, args)
            if built is not UNKNOWN or warp == "identity":
                return built
        return self.builtins.return_type(warp, args, kwargs)

    # generic constructors: Warp's value_funcs read the constant `length`, `shape`, `n` and `dtype` ------
    def _keyword(self, node: ast.Call, name: str) -> ast.expr | None:
        return next((kw.value for kw in node.keywords if kw.arg == name), None)

    def _folded(self, node: ast.expr | None) -> Value | None:
        """``node``'s constant value, when it names no local (a local may shadow a module constant)."""
        if node is None or any(isinstance(n, ast.Name) and n.id in self.env for n in walk(node)):
            return None
        return fold(node, self.constants, self.imports)

    def _folded_int(self, node: ast.expr | None) -> int | None:
        value = self._folded(node)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _dtype(self, node: ast.expr | None) -> Scalar | None:
        resolved = self.resolver.resolve(node) if node is not None else UNKNOWN
        return resolved if isinstance(resolved, Scalar) else None

    def _constructed(self, node: ast.Call, name: str, args: list[WarpType]) -> WarpType:
        """``wp.vector(...)``, ``wp.matrix(...)``, ``wp.identity(...)`` (UNKNOWN when unsure)."""
        if name == "identity":
            size = self._folded_int(self._keyword(node, "n") or (node.args[0] if node.args else None))
            dtype_node = self._keyword(node, "dtype") or (node.args[1] if len(node.args) > 1 else None)
            dtype = self._dtype(dtype_node)
            return (
                Matrix(size, size, dtype) if size is not None and size > 0 and dtype is not None else UNKNOWN
            )
        extent_node = self._keyword(node, "length" if name == "vector" else "shape")
        dtype_node = self._keyword(node, "dtype")
        if set(kw.arg for kw in node.keywords) - {"length", "shape", "dtype"}:
            return UNKNOWN
        dtype = self._dtype(dtype_node) if dtype_node is not None else None
        if dtype_node is not None and dtype is None:
            return UNKNOWN
        copied = args[0] if len(args) == 1 and isinstance(args[0], Vector | Matrix) else None
        if dtype is None:
            if not args:
                dtype = FLOAT32
            elif copied is not None:
                dtype = copied.dtype
            elif all(isinstance(a, Scalar) and a == args[0] for a in args):
                first = args[0]
                assert isinstance(first, Scalar)
                dtype = first
            else:
                return UNKNOWN
        if name == "vector":
            length = self._folded_int(extent_node) if extent_node is not None else None
            if extent_node is not None and length is None:
                return UNKNOWN
            if length is None:
                if isinstance(copied, Vector):
                    length = copied.length
                elif len(args) > 1:
                    length = len(args)
            if length is None or length <= 0 or (len(args) > 1 and length != len(args)):
                return UNKNOWN
            return Vector(length, dtype)
        shape = self._folded(extent_node)
        if extent_node is None and isinstance(copied, Matrix):
            shape = (copied.rows, copied.cols)
        if not (
            isinstance(shape, tuple)
            and len(shape) == 2
            and all(isinstance(e, int) and not isinstance(e, bool) and e > 0 for e in shape)
        ):
            return UNKNOWN
        rows, cols = shape
        assert isinstance(rows, int) and isinstance(cols, int)
        if len(args) > 1 and rows * cols != len(args):
            return UNKNOWN
        return Matrix(rows, cols, dtype)

    # user functions ---------------------------------------------------------------------------
    def _func_return(self, name: str) -> WarpType:
        """The type a call of the file's ``@wp.func`` ``name`` returns: its return annotation, else what
        every ``return`` of its body gives (Warp infers it so); UNKNOWN for an overloaded name."""
        if name in self.overloaded:
            return UNKNOWN
        func = self.funcs[name]
        if func.return_annotation is not None:
            return self.resolver.resolve(func.return_annotation)
        memo = _FUNC_RETURNS.setdefault(self.resolver, {})
        key = id(func.node)
        cached = memo.get(key)
        if cached is not None and cached[0] is func.node:
            return cached[1]
        memo[key] = (func.node, UNKNOWN)  # a recursive call sees UNKNOWN
        body = Inference(
            func,
            self.imports,
            self.constants,
            self.resolver,
            self.structs,
            self.builtins,
            self.funcs,
            self.overloaded,
        ).run()
        found: WarpType | None = None
        local = set(body.variables)
        # the body's nodes from its index (kept with the module's); the rest of the function is small
        index = full_body_index(func.node)
        before, after = around_body(func.node)
        outside = [node for part in (*before, *after) for node in walk(part)]
        constants = self.constants
        for read in (*index.of(ast.Name), *(n for n in outside if isinstance(n, ast.Name))):
            if read.id in constants and read.id not in local:
                # a module constant may have a Warp type its Python value does not show
                # (`wp.constant(wp.uint32(7))`, see `refined_types`): not followed through a call
                memo[key] = (func.node, UNKNOWN)
                return UNKNOWN
        if index.of_any(*_NESTED) or any(isinstance(node, _NESTED) for node in outside):
            found = UNKNOWN  # a nested function's returns are not this function's
        else:
            for stmt in index.of(ast.Return):
                returned = body.of(stmt.value) if stmt.value is not None else UNKNOWN
                found = returned if found is None or found == returned else UNKNOWN
        result = found if found is not None else UNKNOWN
        memo[key] = (func.node, result)
        return result

    def _tile(self, node: ast.Call, name: str, args: list[WarpType], kwargs: dict[str, WarpType]) -> WarpType:
        shape_node = next((kw.value for kw in node.keywords if kw.arg == "shape"), None)
        if (
            shape_node is None
            and name in ("tile_zeros", "tile_ones", "tile_full", "tile_empty")
            and node.args
        ):
            shape_node = node.args[0]
        if shape_node is None and name == "tile_load" and len(node.args) > 1:
            shape_node = node.args[1]
        shape: tuple[int | None, ...] | None = None
        if shape_node is not None:
            folded = fold(shape_node, self.constants, self.imports)
            if isinstance(folded, int) and not isinstance(folded, bool):
                shape = (folded,)
            elif isinstance(folded, tuple):
                shape = tuple(v if isinstance(v, int) and not isinstance(v, bool) else None for v in folded)
            elif isinstance(shape_node, ast.Tuple):
                shape = tuple(None for _ in shape_node.elts)
        dtype: WarpType = UNKNOWN
        dtype_node = next((kw.value for kw in node.keywords if kw.arg == "dtype"), None)
        if dtype_node is not None:
            dtype = self.resolver.resolve(dtype_node)
        elif name == "tile_load" and args and isinstance(args[0], Array):
            dtype = args[0].dtype
        elif name in ("tile_zeros", "tile_ones", "tile_empty"):
            dtype = FLOAT32
        storage = "register"
        storage_node = next((kw.value for kw in node.keywords if kw.arg == "storage"), None)
        if isinstance(storage_node, ast.Constant) and isinstance(storage_node.value, str):
            storage = storage_node.value
        return Tile(dtype, shape, storage)


@dataclass(frozen=True)
class ThreadIndices:
    """What `KernelTypes` says of ``wp.tid()`` (``tid_vars``, ``tid_unpacks``), read from the statements
    alone: the same, without typing every expression (rules that need nothing else of the kernel, or a
    kernel of another module). Inference visits the same statements; it would differ only where inference
    gives up a block on a `RecursionError` (an expression nested hundreds deep)."""

    tid_vars: dict[str, int]
    tid_unpacks: list[tuple[ast.Call, int]]


# per kernel node: the imports it was read with, the answer
_THREAD_INDICES: weakref.WeakKeyDictionary[ast.AST, tuple[ImportMap, ThreadIndices]] = (
    weakref.WeakKeyDictionary()
)


def thread_indices(kernel: KernelDef, imports: ImportMap) -> ThreadIndices:
    """The ``wp.tid()`` assignments of ``kernel`` (``imports``: those of the module defining it)."""
    node = kernel.node
    cached = _THREAD_INDICES.get(node)
    if cached is not None and cached[0] is imports:
        return cached[1]
    found = ThreadIndices({}, [])
    _thread_block(node.body, imports, found)
    _THREAD_INDICES[node] = (imports, found)
    return found


def _thread_block(body: list[ast.stmt], imports: ImportMap, found: ThreadIndices) -> None:
    """`Inference._stmt`'s walk over the statements, with what `Inference._assign` records of tids."""
    for stmt in body:
        if isinstance(stmt, ast.Assign):
            value = stmt.value
            if not (isinstance(value, ast.Call) and imports.warp_name(value.func) == "tid"):
                continue
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    found.tid_vars[target.id] = 0
                    found.tid_unpacks.append((value, 1))
                elif isinstance(target, ast.Tuple | ast.List):
                    found.tid_unpacks.append((value, len(target.elts)))
                    for position, element in enumerate(target.elts):
                        if isinstance(element, ast.Name) and element.id != "_":
                            found.tid_vars[element.id] = position
        elif isinstance(stmt, ast.For | ast.While | ast.If):
            _thread_block(stmt.body, imports, found)
            _thread_block(stmt.orelse, imports, found)
        elif isinstance(stmt, ast.With):
            _thread_block(stmt.body, imports, found)
        elif isinstance(stmt, ast.Try):
            _thread_block(stmt.body, imports, found)
            for handler in stmt.handlers:
                _thread_block(handler.body, imports, found)
            _thread_block(stmt.orelse, imports, found)
            _thread_block(stmt.finalbody, imports, found)


_EXPRESSIONS: dict[type[ast.AST], Callable[[Inference, Any], WarpType]] = {
    ast.Constant: Inference._constant,
    ast.Name: Inference._name,
    ast.Attribute: Inference._attribute,
    ast.Subscript: Inference._subscript,
    ast.BinOp: Inference._binop,
    ast.UnaryOp: Inference._unaryop,
    ast.BoolOp: Inference._boolop,
    ast.Compare: Inference._compare,
    ast.IfExp: Inference._ifexp,
    ast.Call: Inference._call,
    ast.Tuple: Inference._sequence,
    ast.List: Inference._sequence,
}


def binop_result(op: ast.operator, left: WarpType, right: WarpType) -> WarpType:
    """Result type of ``left op right`` under Warp's no-promotion rules (UNKNOWN if not derivable)."""
    if isinstance(op, ast.MatMult):
        return UNKNOWN
    if isinstance(left, Scalar) and isinstance(right, Scalar):
        return left if left.name == right.name else UNKNOWN  # (cheaper than the dataclass's `==`)
    if isinstance(left, Vector | Matrix | Quaternion) and isinstance(right, Scalar):
        return left if left.dtype == right and isinstance(op, ast.Mult | ast.Div) else UNKNOWN
    if isinstance(left, Scalar) and isinstance(right, Vector | Matrix | Quaternion):
        return right if right.dtype == left and isinstance(op, ast.Mult) else UNKNOWN
    if isinstance(left, Vector) and left == right and isinstance(op, ast.Add | ast.Sub):
        return left
    if isinstance(left, Matrix) and isinstance(right, Vector) and isinstance(op, ast.Mult):
        if left.cols == right.length and left.dtype == right.dtype:
            return Vector(left.rows, left.dtype)
    if isinstance(left, Matrix) and left == right and isinstance(op, ast.Add | ast.Sub):
        return left
    return UNKNOWN


__all__ = [
    "FLOAT32",
    "Inference",
    "KernelTypes",
    "NoReturnTypes",
    "ReturnTypes",
    "ThreadIndices",
    "binop_result",
    "thread_indices",
]
