"""What element type a host-side expression certainly has: NumPy and Warp arrays made at (or near) a
launch site.

A launch passes host objects to a kernel; Warp checks each array's element type against the
parameter's annotation when the launch runs. This module answers, for an argument expression, which
array it certainly is:

- a Warp array (`wp.zeros(n, dtype=wp.float64)`, `wp.array(np_data)`, `wp.empty_like(a)`, ...): its
  exact element type (`float32`, `vec3`, ...), or only its scalar when the shape decides the rest
  (`wp.from_numpy(x)` without `dtype`);
- an array Warp converts through the array interface (a NumPy array: `np.zeros(n)`, `np.linspace(...)`,
  `x.astype(np.float64)`): its scalar type (`float64`), which must equal the parameter's scalar.

Names are followed through the launching function's single assignments (`x = np.zeros(n)`), and
``self.<attr>`` through the assignments of the class (and of the file's classes related to it by
inheritance) when they all give the same type and nothing else in the file's classes or module-level
code stores ``<anything>.<attr>``. Stores inside top-level functions are not followed, as stores in
other modules are not: what is said about a launch must not depend on an unrelated host function (the
language server keeps it while such a function changes). Everything else (parameters, values from
other modules, arithmetic, platform-dependent integer defaults such as `np.array([1, 2])`) is not
certain: the answer is None.
"""

from __future__ import annotations

import ast
import weakref
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from warp_harness.model.annotations import AnnotationResolver
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import NodeIndex, around_body, child_nodes, full_body_index
from warp_harness.model.types import (
    FLOAT32,
    FLOAT64,
    INT32,
    UNKNOWN,
    Matrix,
    Quaternion,
    Scalar,
    Transform,
    Vector,
    WarpType,
)
from warp_harness.model.walk import walk, walk_all

N = TypeVar("N", bound=ast.AST)

_MAX_DEPTH = 8

# NumPy scalar type names (``np.float32``) and the scalar each is on every platform
_NUMPY_SCALARS = {
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "single": "float32",
    "float64": "float64",
    "double": "float64",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "intc": "int32",
    "uintc": "uint32",
    "longlong": "int64",
    "ulonglong": "uint64",
}
# NumPy dtype strings (``dtype="f4"``); ``"float"`` is float64 in NumPy
_NUMPY_STRINGS = {
    **{name: scalar for name, scalar in _NUMPY_SCALARS.items()},
    "float": "float64",
    "f2": "float16",
    "f4": "float32",
    "f8": "float64",
    "i1": "int8",
    "i2": "int16",
    "i4": "int32",
    "i8": "int64",
    "u1": "uint8",
    "u2": "uint16",
    "u4": "uint32",
    "u8": "uint64",
}
# NumPy calls whose result is float64 unless told otherwise (the legacy random functions always are)
_NUMPY_FLOAT64_RANDOM = {
    "random.rand",
    "random.randn",
    "random.random",
    "random.random_sample",
    "random.ranf",
    "random.sample",
    "random.uniform",
    "random.normal",
    "random.standard_normal",
}
# methods that keep the receiver's element type
_NUMPY_KEEPING = {"copy", "reshape", "ravel", "flatten", "squeeze", "transpose"}
_WARP_KEEPING = {"reshape", "flatten", "contiguous", "to", "transpose"}
_WARP_ALLOCATORS = {"zeros", "ones", "empty"}
_WARP_LIKE = {"zeros_like", "ones_like", "empty_like", "full_like", "clone"}


@dataclass(frozen=True)
class HostArrayType:
    """A host array whose element type is certain.

    ``interop``: an array Warp converts through the array interface (NumPy), checked by its scalar
    type only; otherwise a Warp array. ``dtype``: the exact element type of a Warp array (None when
    only ``scalar`` is certain). ``origin``: the expression that made the array."""

    interop: bool
    scalar: Scalar
    dtype: WarpType | None
    origin: ast.expr

    def describe(self) -> str:
        if self.interop:
            return f"a {self.scalar} NumPy array"
        return f"a Warp array of {self.dtype if self.dtype is not None else self.scalar}"


def element_scalar(t: WarpType) -> Scalar | None:
    """The scalar an element type is made of (``vec3`` -> float32); None for structs and unknowns."""
    if isinstance(t, Scalar):
        return t
    if isinstance(t, Vector | Matrix | Quaternion | Transform):
        return t.dtype
    return None


_SUFFIX = {"float32": "", "float64": "d", "float16": "h", "int32": "i"}


def warp_type_name(t: WarpType) -> str | None:
    """The name ``t`` has in the ``warp`` module (``float32``, ``vec3``, ``mat33d``, ``quat``), if any."""
    if isinstance(t, Scalar):
        return t.name
    if isinstance(t, Vector) and 2 <= t.length <= 4 and t.dtype.name in _SUFFIX:
        return f"vec{t.length}{_SUFFIX[t.dtype.name]}"
    if isinstance(t, Matrix) and t.rows == t.cols and 2 <= t.rows <= 4 and t.dtype.name in _SUFFIX:
        return f"mat{t.rows}{t.cols}{_SUFFIX[t.dtype.name]}"
    if isinstance(t, Quaternion | Transform) and t.dtype.name in ("float32", "float64", "float16"):
        return ("quat" if isinstance(t, Quaternion) else "transform") + _SUFFIX[t.dtype.name]
    return None


def type_text(t: WarpType) -> str:
    """``t`` as a message shows it: its ``warp`` name when it has one."""
    name = warp_type_name(t)
    return name if name is not None else str(t)


def _keyword(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if (
        position is not None
        and len(call.args) > position
        and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1])
    ):
        return call.args[position]
    return None


def _number_literal(node: ast.expr) -> int | float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _number_literal(node.operand)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        left, right = _number_literal(node.left), _number_literal(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Div):
            return 0.5  # a true division of numbers is a float
        return 0.5 if isinstance(left, float) or isinstance(right, float) else 1
    return None


def _literal_kind(node: ast.expr) -> str | None:
    """``"float"`` for a (nested) list or tuple of number literals holding a float, ``"int"`` for one of
    ints only, None for anything else (names may hold NumPy scalars of any type)."""
    if isinstance(node, ast.List | ast.Tuple):
        if not node.elts:
            return None
        kinds = {_literal_kind(e) for e in node.elts}
        if None in kinds:
            return None
        return "float" if "float" in kinds else "int"
    value = _number_literal(node)
    if value is None:
        return None
    return "float" if isinstance(value, float) else "int"


_Method = ast.FunctionDef | ast.AsyncFunctionDef

# scopes of their own, whose bindings are not the function's (nor looked into for them)
_NESTED_SCOPES: tuple[type[ast.AST], ...] = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)

# what depends on a function's or a class's subtree alone, kept with its node (the incremental analysis
# reuses the nodes of unchanged chunks)
_BINDINGS: weakref.WeakKeyDictionary[ast.AST, dict[str, ast.expr]] = weakref.WeakKeyDictionary()
_RECEIVER_STORES: weakref.WeakKeyDictionary[ast.AST, list[tuple[ast.Attribute, ast.expr | None]]] = (
    weakref.WeakKeyDictionary()
)


def _function_bindings(fn: _Method) -> dict[str, ast.expr]:
    """Names of ``fn`` bound exactly once, by a plain ``name = value`` (parameters excluded)."""
    found = _BINDINGS.get(fn)
    if found is None:
        found = _BINDINGS[fn] = _read_bindings(fn)
    return found


def _read_bindings(fn: _Method) -> dict[str, ast.expr]:
    counts: dict[str, int] = {}
    args = fn.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            counts[a.arg] = counts.get(a.arg, 0) + 1
    names: list[ast.Name]
    assigns: list[ast.Assign]
    declared: list[ast.Global | ast.Nonlocal]
    if isinstance(fn, ast.FunctionDef):
        # the body's shared index, less what is inside the nested scopes
        index = full_body_index(fn)
        nested = [scope for kind in _NESTED_SCOPES for scope in index.of(kind)]
        hidden: set[int] = set()
        for scope in nested:
            if id(scope) in hidden:  # inside one seen already
                continue
            hidden.update(map(id, _inner_nodes(scope)))
            if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                counts[scope.name] = counts.get(scope.name, 0) + 1
        names = [name for name in index.of(ast.Name) if type(name.ctx) is not ast.Load]
        assigns = index.of(ast.Assign)
        declared = [*index.of(ast.Global), *index.of(ast.Nonlocal)]
        if hidden:
            names = [name for name in names if id(name) not in hidden]
            assigns = [assign for assign in assigns if id(assign) not in hidden]
            declared = [statement for statement in declared if id(statement) not in hidden]
    else:
        names, assigns, declared = [], [], []
        stack: list[ast.AST] = list(fn.body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                counts[node.name] = counts.get(node.name, 0) + 1
                continue
            if isinstance(node, _NESTED_SCOPES):
                continue
            if isinstance(node, ast.Name):
                if type(node.ctx) is not ast.Load:
                    names.append(node)
            elif isinstance(node, ast.Assign):
                assigns.append(node)
            elif isinstance(node, ast.Global | ast.Nonlocal):
                declared.append(node)
            stack.extend(child_nodes(node))
    for name in names:  # stored or deleted
        counts[name.id] = counts.get(name.id, 0) + 1
    for statement in declared:
        for declared_name in statement.names:
            counts[declared_name] = counts.get(declared_name, 0) + 2
    values: dict[str, ast.expr] = {}
    for assign in assigns:
        if len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name):
            values[assign.targets[0].id] = assign.value
    return {name: value for name, value in values.items() if counts.get(name) == 1}


def _inner_nodes(scope: ast.AST) -> list[ast.AST]:
    """Every node below ``scope`` (itself excluded)."""
    if isinstance(scope, ast.FunctionDef):
        before, after = around_body(scope)
        return [*walk_all([*before, *after]), *full_body_index(scope).nodes]
    return walk(scope)[1:]


def _expression_stores(index: NodeIndex) -> bool:
    """Whether an expression may store an attribute: a comprehension's target (``for self.i in ...``), the
    one place outside statements. When none does, the decorators, defaults and annotations of a function
    store nothing."""
    for comprehension in index.of(ast.comprehension):
        target = comprehension.target
        if type(target) is not ast.Name and any(isinstance(node, ast.Attribute) for node in walk(target)):
            return True
    return False


def _nodes_of(fn: _Method, kind: type[N], outside: bool = True) -> list[N]:
    """Every node of type ``kind`` in ``fn``, from the body's shared index; ``outside``: decorators,
    arguments and annotations included."""
    index = full_body_index(fn)
    if not isinstance(fn, ast.FunctionDef):
        return index.of(kind)  # an index of the whole function
    if not outside:
        return index.of(kind)
    before, after = around_body(fn)
    found = [node for node in walk_all([*before, *after]) if isinstance(node, kind)]
    return [*index.of(kind), *found] if found else index.of(kind)


def _statement_order(fn: _Method) -> dict[int, int]:
    """The position of each statement of ``fn``'s body in ``ast.walk``'s order (a statement in a field this
    Python has and `_BLOCKS` does not know is missing)."""
    order: dict[int, int] = {}
    queue: deque[ast.AST] = deque(fn.body)
    while queue:
        node = queue.popleft()
        order[id(node)] = len(order)
        for name in _BLOCKS.get(type(node), ()):
            queue.extend(getattr(node, name))
    return order


def _receiver_stores(method: _Method, outside: bool = True) -> list[tuple[ast.Attribute, ast.expr | None]]:
    """Each store (or deletion) of ``<receiver>.<attr>`` anywhere in a method, with the value when it is
    the single target of an assignment (None otherwise); [] for methods without a receiver. An attribute
    assigned more than once comes in ``ast.walk``'s order (the first is the origin a record names).
    ``outside``: look in the decorators, defaults and annotations too (False only when `_expression_stores`
    says nothing there can store an attribute: the answer is the same, kept with the method)."""
    found = _RECEIVER_STORES.get(method)
    if found is not None:
        return found
    found = []
    receiver = _self_receiver(method)
    stored = (
        []
        if receiver is None
        else [
            node
            for node in _nodes_of(method, ast.Attribute, outside)
            if type(node.ctx) is not ast.Load and type(node.value) is ast.Name and node.value.id == receiver
        ]
    )
    if stored:
        # assignments are statements: never outside the body
        simple = {id(a.targets[0]): a for a in _nodes_of(method, ast.Assign, False) if len(a.targets) == 1}
        assignments: dict[int, ast.Assign] = {}
        for node in stored:
            assignment = simple.get(id(node))
            if assignment is not None:
                assignments[id(node)] = assignment
            found.append((node, None if assignment is None else assignment.value))
        assigned = {node.attr for node, value in found if value is not None}
        if len(assigned) != len(assignments):
            # the assignments are statements, each one level above its target: their order is the targets'
            order = _statement_order(method)
            if all(id(a) in order for a in assignments.values()):
                # (the other stores' order does not matter)
                ranks = {target: order[id(a)] for target, a in assignments.items()}
                found.sort(key=lambda store: ranks.get(id(store[0]), -1))
            else:
                walked = {id(node): position for position, node in enumerate(walk(method))}
                found.sort(key=lambda store: walked[id(store[0])])
    _RECEIVER_STORES[method] = found
    return found


_Stores = dict[str, list[tuple[ast.expr, _Method, dict[str, ast.expr]]]]

_CLASS_STORES: weakref.WeakKeyDictionary[ast.ClassDef, tuple[_Stores, set[str]]] = weakref.WeakKeyDictionary()


@dataclass(eq=False, repr=False)
class _ClassFacts:
    """What the file's classes store in ``self.<attr>``, each part worked out when first asked: a class's
    own stores only when a question is about it, the module-wide stores only for an answer that would
    otherwise be certain."""

    tree: ast.Module
    # the index of `tree`
    index: NodeIndex
    # every class of the file, in source order
    classes: list[ast.ClassDef]
    # each method's class (methods directly in a class body)
    method_class: dict[int, ast.ClassDef]
    # class -> attribute -> (value, method, the method's single assignments) of each `self.attr = value`,
    # and the attributes it stores in `self` some other way (augmented, unpacked, deleted)
    _stores: dict[int, tuple[_Stores, set[str]]]
    # class -> the classes of the file it inherits from or that inherit from it, itself included; as
    # `_related` gives them from the classes in source order, and (when a class has related ones, whose
    # order is the order of their stores) in `ast.walk`'s order
    _related: dict[int, list[ast.ClassDef]] | None = None
    _related_walked: dict[int, list[ast.ClassDef]] | None = None
    # attributes stored on anything but a method's `self` (`sim.x = ...`), or through setattr
    _foreign: set[str] | None = None
    # whether an expression may store an attribute (`_expression_stores`)
    _outside: bool | None = None

    def outside(self) -> bool:
        if self._outside is None:
            self._outside = _expression_stores(self.index)
        return self._outside

    def related(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        if self._related is None:
            self._related = _related(self.classes)
        found = self._related[id(cls)]
        if len(found) == 1:
            return found
        if self._related_walked is None:
            self._related_walked = _related(_classes_breadth_first(self.tree, self.classes))
        return self._related_walked[id(cls)]

    def stores(self, cls: ast.ClassDef) -> tuple[_Stores, set[str]]:
        """(values, opaque) of ``cls``: see the fields' comments."""
        found = self._stores.get(id(cls))
        if found is None:
            # the answer is the same either way (see `_receiver_stores`): the flag saves walking the methods'
            # signatures, but asking it walks the whole file; asked only when `foreign` has
            outside = self._outside if self._outside is not None else True
            found = self._stores[id(cls)] = _class_stores(cls, outside)
        return found

    def foreign(self) -> set[str]:
        """The attributes stored on anything but a method's `self`, ``"*"`` for a `setattr` of any name."""
        if self._foreign is None:
            self._foreign = _foreign_stores(self.tree, self.index, self.classes, self.outside())
        return self._foreign


def _self_receiver(method: _Method) -> str | None:
    """The name of a method's receiver (its first positional parameter), None for static and class
    methods and methods without one."""
    positional = [*method.args.posonlyargs, *method.args.args]
    if not positional or not _is_self(method, positional[0].arg):
        return None
    return positional[0].arg


def _class_stores(cls: ast.ClassDef, outside: bool = True) -> tuple[_Stores, set[str]]:
    """``outside``: as for `_receiver_stores`."""
    found = _CLASS_STORES.get(cls)
    if found is not None:
        return found
    values: _Stores = {}
    opaque: set[str] = set()
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        bindings: dict[str, ast.expr] | None = None
        for node, value in _receiver_stores(method, outside):
            if value is None:
                opaque.add(node.attr)
                continue
            if bindings is None:
                bindings = _function_bindings(method)
            values.setdefault(node.attr, []).append((value, method, bindings))
    found = _CLASS_STORES[cls] = (values, opaque)
    return found


# the fields of a node that hold statements (or the handlers and cases holding them), in field order
_BLOCKS: dict[type[ast.AST], tuple[str, ...]] = {
    ast.FunctionDef: ("body",),
    ast.AsyncFunctionDef: ("body",),
    ast.ClassDef: ("body",),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.If: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "handlers", "orelse", "finalbody"),
    ast.ExceptHandler: ("body",),
    ast.Match: ("cases",),
    ast.match_case: ("body",),
}
_TRY_STAR: type[ast.AST] | None = getattr(ast, "TryStar", None)
if _TRY_STAR is not None:
    _BLOCKS[_TRY_STAR] = ("body", "handlers", "orelse", "finalbody")


def _classes_breadth_first(tree: ast.Module, classes: list[ast.ClassDef]) -> list[ast.ClassDef]:
    """``classes`` (every class of ``tree``, in source order) in ``ast.walk``'s order."""
    if sum(isinstance(stmt, ast.ClassDef) for stmt in tree.body) == len(classes):
        return list(classes)  # all at the top level: the same order
    # a class is a statement: a walk of the statements alone meets the classes as the full walk does
    found: list[ast.ClassDef] = []
    queue: deque[ast.AST] = deque(tree.body)
    while queue:
        node = queue.popleft()
        if isinstance(node, ast.ClassDef):
            found.append(node)
        for name in _BLOCKS.get(type(node), ()):
            queue.extend(getattr(node, name))
    if len(found) != len(classes):  # a statement field this Python has and `_BLOCKS` does not know
        found = [node for node in walk(tree) if isinstance(node, ast.ClassDef)]
    return found


_SET_ATTRIBUTE = ("setattr", "delattr")


def _is_setattr(call: ast.Call) -> bool:
    return type(call.func) is ast.Name and call.func.id in _SET_ATTRIBUTE


def _class_facts(tree: ast.Module, index: NodeIndex) -> _ClassFacts:
    classes = index.of(ast.ClassDef)
    method_class: dict[int, ast.ClassDef] = {}
    for cls in classes:
        for method in cls.body:
            if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                method_class[id(method)] = cls
    return _ClassFacts(tree, index, classes, method_class, {})


def _foreign_stores(
    tree: ast.Module, index: NodeIndex, classes: list[ast.ClassDef], outside: bool
) -> set[str]:
    """Attributes stored (or deleted) outside top-level functions on anything but the receiver of an
    enclosing method, or named by a `setattr`/`delattr` there (``"*"``: a name not literal).

    Not inside top-level functions: the language server's caches keep what is said about a launch while a
    plain host function elsewhere changes, so nothing may depend on them (stores in other modules are not
    seen either). A store on the receiver of an enclosing method is that class's own."""
    stores = [node for node in index.of(ast.Attribute) if type(node.ctx) is not ast.Load]
    setattrs = [
        call
        for call in index.of(ast.Call)
        if type(call.func) is ast.Name and call.func.id in _SET_ATTRIBUTE  # `_is_setattr`, inlined
    ]
    top_functions = [stmt for stmt in tree.body if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)]
    foreign: set[str] = set()
    if stores:
        left_out = {
            id(node)
            for fn in top_functions
            for node in _nodes_of(fn, ast.Attribute, outside)
            if type(node.ctx) is not ast.Load
        }
        for cls in classes:
            for method in cls.body:
                if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                    left_out.update(id(node) for node, _ in _receiver_stores(method, outside))
        foreign.update(node.attr for node in stores if id(node) not in left_out)
    if setattrs:
        in_top = {id(call) for fn in top_functions for call in _nodes_of(fn, ast.Call) if _is_setattr(call)}
        for call in setattrs:
            if id(call) in in_top:
                continue
            name = call.args[1] if len(call.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                foreign.add(name.value)
            else:
                foreign.add("*")
    return foreign


def _related(classes: list[ast.ClassDef]) -> dict[int, list[ast.ClassDef]]:
    """Each class with its bases and subclasses among the file's classes (transitively); a class whose
    name is defined twice relates to every class of that name."""
    by_name: dict[str, list[ast.ClassDef]] = {}
    for cls in classes:
        by_name.setdefault(cls.name, []).append(cls)
    edges: dict[int, set[int]] = {id(cls): set() for cls in classes}
    for cls in classes:
        for base in cls.bases:
            name = (
                base.id
                if isinstance(base, ast.Name)
                else base.attr
                if isinstance(base, ast.Attribute)
                else None
            )
            for other in by_name.get(name or "", []):
                edges[id(cls)].add(id(other))
                edges[id(other)].add(id(cls))
    by_id = {id(cls): cls for cls in classes}
    related: dict[int, list[ast.ClassDef]] = {}
    for cls in classes:
        seen = {id(cls)}
        stack = [id(cls)]
        while stack:
            for linked in edges[stack.pop()]:
                if linked not in seen:
                    seen.add(linked)
                    stack.append(linked)
        related[id(cls)] = [by_id[i] for i in seen]
    return related


class HostDtypes:
    """Answers `array_type` for the host expressions of one module (build once per analysis)."""

    def __init__(
        self,
        tree: ast.Module,
        imports: ImportMap,
        resolver: AnnotationResolver,
        index: NodeIndex | None = None,
    ) -> None:
        """``index``: the model's index of ``tree`` (built when needed if not given)."""
        self.tree = tree
        self.imports = imports
        self.resolver = resolver
        self._index = index
        self._facts: _ClassFacts | None = None
        # (class id, attribute, depth) -> `_self_attribute`'s answer
        self._attributes: dict[tuple[int, str, int], HostArrayType | None] = {}

    # the question -------------------------------------------------------------------------------
    def array_type(
        self, node: ast.expr, scope: ast.AST, aliases: Mapping[str, ast.expr]
    ) -> HostArrayType | None:
        """The array ``node`` certainly is, evaluated in ``scope`` (the launching function, or the
        module) whose single assignments are ``aliases``; None when not certain."""
        return self._of(node, scope, aliases, 0)

    def _of(
        self, node: ast.expr, scope: ast.AST, aliases: Mapping[str, ast.expr], depth: int
    ) -> HostArrayType | None:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.Name):
            value = aliases.get(node.id)
            return None if value is None else self._of(value, scope, aliases, depth + 1)
        if isinstance(node, ast.Attribute):
            if node.attr == "T":
                inner = self._of(node.value, scope, aliases, depth + 1)
                return inner if inner is not None and inner.interop else None
            return self._self_attribute(node, scope, depth)
        if isinstance(node, ast.Call):
            return self._call(node, scope, aliases, depth)
        return None

    # calls ---------------------------------------------------------------------------------------
    def _call(
        self, call: ast.Call, scope: ast.AST, aliases: Mapping[str, ast.expr], depth: int
    ) -> HostArrayType | None:
        warp = self.imports.warp_name(call.func)
        if warp is not None:
            return self._warp_call(warp, call, scope, aliases, depth)
        path = self.imports.dotted(call.func)
        if path is not None and path.startswith("numpy."):
            return self._numpy_call(path[len("numpy.") :], call, scope, aliases, depth)
        if isinstance(call.func, ast.Attribute):
            return self._method(call.func.attr, call, scope, aliases, depth)
        return None

    def _method(
        self, name: str, call: ast.Call, scope: ast.AST, aliases: Mapping[str, ast.expr], depth: int
    ) -> HostArrayType | None:
        assert isinstance(call.func, ast.Attribute)
        if name == "astype":
            # any receiver: whatever has `astype` (NumPy, CuPy, ...) goes through the array interface
            scalar = self._numpy_dtype(_keyword(call, "dtype", 0))
            return None if scalar is None else HostArrayType(True, scalar, None, call)
        receiver = self._of(call.func.value, scope, aliases, depth + 1)
        if receiver is None:
            return None
        if name == "numpy" and not receiver.interop and not call.args:
            return HostArrayType(True, receiver.scalar, None, call)
        keeping = _NUMPY_KEEPING if receiver.interop else _WARP_KEEPING
        if name in keeping:
            return receiver
        return None

    def _numpy_call(
        self, name: str, call: ast.Call, scope: ast.AST, aliases: Mapping[str, ast.expr], depth: int
    ) -> HostArrayType | None:
        def explicit(position: int | None) -> tuple[bool, HostArrayType | None]:
            """(whether a ``dtype`` is given, the array it makes)."""
            node = _keyword(call, "dtype", position)
            if node is None or (isinstance(node, ast.Constant) and node.value is None):
                return False, None
            scalar = self._numpy_dtype(node)
            return True, None if scalar is None else HostArrayType(True, scalar, None, call)

        def default(scalar: Scalar | None) -> HostArrayType | None:
            return None if scalar is None else HostArrayType(True, scalar, None, call)

        if name in ("zeros", "ones", "empty", "identity", "eye"):
            given, made = explicit(3 if name == "eye" else 1)
            return made if given else default(FLOAT64)
        if name == "full":
            given, made = explicit(2)
            if given:
                return made
            fill = _keyword(call, "fill_value", 1)
            return default(FLOAT64) if fill is not None and _literal_kind(fill) == "float" else None
        if name == "linspace":
            retstep = _keyword(call, "retstep", 4)
            if retstep is not None and not (isinstance(retstep, ast.Constant) and retstep.value is False):
                return None
            given, made = explicit(5)
            if given:
                return made
            bounds = [_keyword(call, "start", 0), _keyword(call, "stop", 1)]
            if all(b is not None and _literal_kind(b) is not None for b in bounds):
                return default(FLOAT64)
            return None
        if name == "arange":
            given, made = explicit(3)
            if given:
                return made
            if call.keywords or not call.args:
                return None
            kinds = {_literal_kind(a) for a in call.args}
            return default(FLOAT64) if kinds in ({"float"}, {"float", "int"}) else None
        if name in ("array", "asarray", "ascontiguousarray"):
            given, made = explicit(1)
            if given:
                return made
            data = _keyword(call, "object", 0) if name == "array" else _keyword(call, "a", 0)
            if data is None:
                return None
            if _literal_kind(data) == "float":
                return default(FLOAT64)
            inner = self._of(data, scope, aliases, depth + 1)
            return default(inner.scalar) if inner is not None else None
        if name in ("zeros_like", "ones_like", "empty_like", "full_like"):
            given, made = explicit(2 if name == "full_like" else 1)
            if given:
                return made
            source = _keyword(call, "a", 0)
            inner = self._of(source, scope, aliases, depth + 1) if source is not None else None
            return default(inner.scalar) if inner is not None and inner.interop else None
        if name in _NUMPY_FLOAT64_RANDOM:
            return default(FLOAT64)
        if name in ("concatenate", "stack", "vstack", "hstack"):
            given, made = explicit(None)
            if given:
                return made
            parts = call.args[0] if call.args else None
            if not isinstance(parts, ast.List | ast.Tuple) or not parts.elts:
                return None
            found = [self._of(p, scope, aliases, depth + 1) for p in parts.elts]
            scalars = {f.scalar for f in found if f is not None and f.interop}
            if len(scalars) == 1 and all(f is not None and f.interop for f in found):
                return default(scalars.pop())
            return None
        return None

    def _numpy_dtype(self, node: ast.expr | None) -> Scalar | None:
        """The scalar a NumPy ``dtype=`` argument certainly means (``np.float32``, ``"f8"``, ``float``)."""
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.lstrip("<=")
            return Scalar(_NUMPY_STRINGS[text]) if text in _NUMPY_STRINGS else None
        if isinstance(node, ast.Name) and node.id == "float" and node.id not in self.imports.objects:
            return FLOAT64
        path = self.imports.dotted(node)
        if path is not None and path.startswith("numpy.") and path.count(".") == 1:
            name = path[len("numpy.") :]
            return Scalar(_NUMPY_SCALARS[name]) if name in _NUMPY_SCALARS else None
        if isinstance(node, ast.Call) and self.imports.dotted(node.func) == "numpy.dtype" and node.args:
            return self._numpy_dtype(node.args[0])
        return None

    def _warp_call(
        self, name: str, call: ast.Call, scope: ast.AST, aliases: Mapping[str, ast.expr], depth: int
    ) -> HostArrayType | None:
        if name in _WARP_ALLOCATORS:
            node = _keyword(call, "dtype", 1)
            return self._warp_typed(FLOAT32 if node is None else self._warp_dtype(node), call)
        if name == "full":
            node = _keyword(call, "dtype", 2)
            if node is not None:
                return self._warp_typed(self._warp_dtype(node), call)
            value = _keyword(call, "value", 1)
            kind = (
                _literal_kind(value)
                if value is not None and not isinstance(value, ast.List | ast.Tuple)
                else None
            )
            return self._warp_typed(FLOAT32 if kind == "float" else INT32 if kind == "int" else UNKNOWN, call)
        if name in _WARP_LIKE:
            source = _keyword(call, "src", 0)
            inner = self._of(source, scope, aliases, depth + 1) if source is not None else None
            return inner if inner is not None and not inner.interop else None
        if name in ("array", "from_numpy"):
            node = _keyword(call, "dtype", 1)
            if node is not None:
                if isinstance(node, ast.Constant) and node.value is None:
                    node = None
                else:
                    return self._warp_typed(self._warp_dtype(node), call)
            data = _keyword(call, "data" if name == "array" else "arr", 0)
            if data is None:
                return None
            if name == "array" and _literal_kind(data) == "float":
                return self._warp_typed(FLOAT64, call)
            inner = self._of(data, scope, aliases, depth + 1)
            if inner is None or not inner.interop:
                return None
            # `wp.array` keeps the NumPy scalar as the dtype; `from_numpy` makes vectors of trailing axes
            return HostArrayType(False, inner.scalar, inner.scalar if name == "array" else None, call)
        return None

    def _warp_dtype(self, node: ast.expr) -> WarpType:
        return self.resolver.resolve(node)

    @staticmethod
    def _warp_typed(dtype: WarpType, call: ast.Call) -> HostArrayType | None:
        scalar = element_scalar(dtype)
        return None if scalar is None else HostArrayType(False, scalar, dtype, call)

    # self.<attr> ---------------------------------------------------------------------------------
    def _self_attribute(self, node: ast.Attribute, scope: ast.AST, depth: int) -> HostArrayType | None:
        """``self.<attr>`` in a method: the type every ``self.<attr> = value`` of the class (and of the
        file's classes related to it by inheritance) gives, when no other store may change it."""
        if not isinstance(node.value, ast.Name) or not isinstance(
            scope, ast.FunctionDef | ast.AsyncFunctionDef
        ):
            return None
        if (
            not _is_self(scope, node.value.id)
            or [*scope.args.posonlyargs, *scope.args.args][0].arg != node.value.id
        ):
            return None
        if self._facts is None:
            index = self._index if self._index is not None else NodeIndex([self.tree])
            self._facts = _class_facts(self.tree, index)
        cls = self._facts.method_class.get(id(scope))
        if cls is None:
            return None
        # the same attribute is asked of many launches of a class
        key = (id(cls), node.attr, depth)
        if key in self._attributes:
            return self._attributes[key]
        found = self._attributes[key] = self._stored_type(self._facts, cls, node.attr, depth)
        return found

    def _stored_type(
        self, facts: _ClassFacts, cls: ast.ClassDef, attr: str, depth: int
    ) -> HostArrayType | None:
        """The type every ``self.<attr> = value`` of ``cls`` and its related classes gives, if certain."""
        assigned: list[tuple[ast.expr, _Method, dict[str, ast.expr]]] = []
        for other in facts.related(cls):
            values, opaque = facts.stores(other)
            if attr in opaque:
                return None
            assigned.extend(values.get(attr, []))
        if not assigned:
            return None
        found: list[HostArrayType] = []
        for value, method, method_aliases in assigned:
            t = self._of(value, method, method_aliases, depth + 1)
            if t is None:
                return None
            found.append(t)
        first = found[0]
        if any((t.interop, t.scalar, t.dtype) != (first.interop, first.scalar, first.dtype) for t in found):
            return None
        # last: the one module-wide question, asked only of an answer otherwise certain
        foreign = facts.foreign()
        if attr in foreign or "*" in foreign:
            return None
        return first


def _is_self(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    positional = [*fn.args.posonlyargs, *fn.args.args]
    if not positional or positional[0].arg != name:
        return False
    # static methods have no receiver
    return not any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list
    )
