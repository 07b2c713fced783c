"""Nodes under a root collected once, in source order and grouped by type.

Rules ask the same questions of every kernel ("every call", "every subscript"); walking the AST
again for each rule dominated the analysis time, so each body is walked once and the lists kept.
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

N = TypeVar("N", bound=ast.AST)

# field types of the ASDL grammar that never hold a node worth indexing: names, literals, and the
# context/operator singletons (Load, Store, Add, ...) that are always reached as `node.ctx`/`node.op`
_NOT_CHILDREN = {
    "identifier",
    "string",
    "constant",
    "int",
    "expr_context",
    "operator",
    "unaryop",
    "boolop",
    "cmpop",
    "type_ignore",
}
_FIELD = re.compile(r"(\w+)([*?]?) (\w+)")


_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _child_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        fields = _CHILD_FIELDS[cls] = _read_child_fields(cls)
    return fields


def _read_child_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    """Fields of an AST class that can hold child nodes, read from its ASDL signature (``__doc__``)."""
    return tuple(name for name, _ in _read_walk_fields(cls))


# how `NodeIndex` reaches a field: a node or None, a list of nodes (or None, as in `Dict.keys`), or
# anything (a signature not understood: each value is checked)
_ONE, _MANY, _ANY = 0, 1, 2
_WALK_FIELDS: dict[type[ast.AST], tuple[tuple[str, int], ...]] = {}


def _walk_fields(cls: type[ast.AST]) -> tuple[tuple[str, int], ...]:
    """`_read_walk_fields` last-first (children are pushed that way so that they pop in source order)."""
    fields = _WALK_FIELDS.get(cls)
    if fields is None:
        fields = _WALK_FIELDS[cls] = tuple(reversed(_read_walk_fields(cls)))
    return fields


def _read_walk_fields(cls: type[ast.AST]) -> tuple[tuple[str, int], ...]:
    doc = cls.__doc__ or ""
    start, end = doc.find("("), doc.rfind(")")
    fields = getattr(cls, "_fields", ())
    if start < 0 or end < start:
        return tuple((f, _ANY) for f in fields)
    typed = {name: (kind, mark) for kind, mark, name in _FIELD.findall(doc[start + 1 : end])}
    if set(typed) != set(fields):  # not the signature we expect: keep every field
        return tuple((f, _ANY) for f in fields)
    return tuple(
        (f, _MANY if typed[f][1] == "*" else _ONE) for f in fields if typed[f][0] not in _NOT_CHILDREN
    )


# node classes that are statements (found in statement lists only, never inside an expression)
_STATEMENT_KINDS: frozenset[type[ast.AST]] = frozenset(
    c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.stmt) and c is not ast.stmt
)
# ASDL types of the fields that hold statements, directly or through a handler or a match case
_BLOCK_TYPES = frozenset({"stmt", "excepthandler", "match_case"})
_BLOCK_NAMES = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
_BLOCK_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}
# what a statement list holds besides statements (`statement_buckets` drops them)
_NOT_STATEMENTS = (ast.ExceptHandler, ast.match_case)


def _block_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    """The fields of ``cls`` that hold statements (or handlers, match cases), last first."""
    fields = _BLOCK_FIELDS.get(cls)
    if fields is None:
        doc = cls.__doc__ or ""
        start, end = doc.find("("), doc.rfind(")")
        typed = {name: kind for kind, _, name in _FIELD.findall(doc[start + 1 : end])} if start >= 0 else {}
        names: tuple[str, ...] = getattr(cls, "_fields", ())
        if set(typed) == set(names):
            fields = tuple(name for name in reversed(names) if typed[name] in _BLOCK_TYPES)
        else:  # not the signature we expect: the fields that hold blocks in the grammar
            fields = tuple(name for name in reversed(names) if name in _BLOCK_NAMES)
        _BLOCK_FIELDS[cls] = fields
    return fields


def statement_buckets(roots: Sequence[ast.AST]) -> dict[type[ast.AST], list[ast.AST]]:
    """The statements under ``roots`` (statements, handlers or match cases), grouped by type, each group
    in source order (as `NodeIndex.of` lists them): the statement lists are walked, no expression.

    Its own copy of the walk loop of `walk.preorder`, which would cost 1.2x here (it reads every field)."""
    by_type: dict[type[ast.AST], list[ast.AST]] = {}
    stack: list[ast.AST] = list(reversed(roots))
    pop = stack.pop
    push_all = stack.extend
    block_fields = _BLOCK_FIELDS
    while stack:
        node = pop()
        kind = type(node)
        # handlers and match cases too (cheaper than asking each node whether it is a statement)
        bucket = by_type.get(kind)
        if bucket is None:
            by_type[kind] = [node]
        else:
            bucket.append(node)
        fields = block_fields.get(kind)
        if fields is None:
            fields = _block_fields(kind)
        if fields:
            for name in fields:
                value = getattr(node, name, None)
                if type(value) is list:  # of statements, handlers or cases (never a None)
                    push_all(reversed(value))
    for kind in _NOT_STATEMENTS:
        by_type.pop(kind, None)
    return by_type


def around_body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[ast.AST], list[ast.AST]]:
    """A function's child nodes before its body and after it (arguments; decorators, return annotation,
    type parameters), each in field order."""
    before: list[ast.AST] = []
    after: list[ast.AST] = []
    side = before
    for name in _child_fields(type(node)):
        if name == "body":
            side = after
            continue
        value = getattr(node, name, None)
        if type(value) is list:
            side.extend(child for child in value if isinstance(child, ast.AST))
        elif isinstance(value, ast.AST):
            side.append(value)
    return before, after


# marks of `NodeIndex._collect` (an end mark's kind is where its body started: 0 or more)
_START, _END, _SPLICE = -1, -2, -3


def _function_parts(node: ast.FunctionDef) -> tuple[list[ast.AST], list[ast.AST]]:
    """`around_body`, each part last-first (as `NodeIndex` pushes them)."""
    before, after = around_body(node)
    before.reverse()
    after.reverse()
    return before, after


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes`` without the context and operator singletons (they hold no nodes)."""
    children: list[ast.AST] = []
    for name in _child_fields(type(node)):
        value = getattr(node, name, None)
        if type(value) is list:
            children.extend(child for child in value if isinstance(child, ast.AST))
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


class NodeIndex:
    __slots__ = ("_by_type", "nodes")

    def __init__(self, roots: Sequence[ast.AST], hidden: AbstractSet[int] = frozenset()) -> None:
        """The preorder of ``roots``, without the nodes whose id is in ``hidden`` and what is below them."""
        self.nodes: list[ast.AST] = []
        self._by_type: dict[type[ast.AST], list[ast.AST]] = {}
        if hidden:
            self._collect_visible(roots, hidden)
        else:
            self._collect(roots)

    def _collect(self, roots: Sequence[ast.AST]) -> None:
        """Append the preorder of ``roots``. A function's body is walked in the same pass and its index
        (`full_body_index`) made a slice of this one, so the rules' per-kernel indexes cost no second walk;
        a body whose index exists already is spliced in instead of walked.

        Its own copy of the loop of `walk.preorder`: the hottest walk of all, with the marks of bodies in it
        (a call per node, to share one loop, cost about 3x in `walk`)."""
        nodes = self.nodes
        by_type = self._by_type
        stack: list[ast.AST | None] = list(reversed(roots))
        append = nodes.append
        pop = stack.pop
        push = stack.append
        push_all = stack.extend
        walk_fields = _WALK_FIELDS
        function_def = ast.FunctionDef
        # where a function's body starts and ends, and a body to splice in: a None pushed on the stack,
        # with its place there and what to do (an empty slot of a list field is a None too, elsewhere);
        # an end mark holds where its body started, once known
        marks: list[tuple[int, int, ast.FunctionDef, NodeIndex | None]] = []
        while stack:
            node = pop()
            if node is None:
                if marks and marks[-1][0] == len(stack):
                    _, what, function, part = marks.pop()
                    if what == _SPLICE:
                        assert part is not None
                        self._extend(part)
                    elif what == _START:  # the body's end is the mark below: tell it where the body starts
                        marks[-1] = (marks[-1][0], len(nodes), function, None)
                    else:  # the end of a body: `what` is where it started
                        _BODIES[function] = _Slice(nodes[what:])
                continue
            append(node)
            kind: type[ast.AST] = type(node)
            bucket = by_type.get(kind)
            if bucket is None:
                by_type[kind] = [node]
            else:
                bucket.append(node)
            if kind is function_def:
                before, after = _function_parts(node)  # type: ignore[arg-type]
                push_all(after)
                push(None)
                body = _BODIES.get(node)
                if body is not None:
                    marks.append((len(stack) - 1, _SPLICE, node, body))  # type: ignore[arg-type]
                else:
                    marks.append((len(stack) - 1, _END, node, None))  # type: ignore[arg-type]
                    push_all(reversed(node.body))  # type: ignore[attr-defined]
                    push(None)
                    marks.append((len(stack) - 1, _START, node, None))  # type: ignore[arg-type]
                push_all(before)
                continue
            fields = walk_fields.get(kind)
            if fields is None:
                fields = _walk_fields(kind)
            for name, how in fields:
                value = getattr(node, name, None)
                if how == _MANY:
                    if value:
                        push_all(reversed(value))
                elif how == _ONE:
                    if value is not None:
                        push(value)
                elif type(value) is list:
                    push_all(child for child in reversed(value) if isinstance(child, ast.AST))
                elif isinstance(value, ast.AST):
                    push(value)

    def _collect_visible(self, roots: Sequence[ast.AST], hidden: AbstractSet[int]) -> None:
        """`_collect` leaving out the subtrees whose root's id is in ``hidden`` (outside nested functions: a
        nested function's body is its whole `full_body_index`)."""
        nodes = self.nodes
        by_type = self._by_type
        stack: list[ast.AST | None] = list(reversed(roots))
        while stack:
            node = stack.pop()
            if node is None or id(node) in hidden:
                continue
            nodes.append(node)
            kind: type[ast.AST] = type(node)
            by_type.setdefault(kind, []).append(node)
            if kind is ast.FunctionDef:
                before, after = around_body(node)  # type: ignore[arg-type]
                self._collect(before)
                self._extend(full_body_index(node))
                self._collect(after)
                continue
            stack.extend(reversed(child_nodes(node)))

    def _extend(self, part: NodeIndex) -> None:
        self.nodes.extend(part.nodes)
        by_type = self._by_type
        for kind, bucket in part._by_type.items():
            current = by_type.get(kind)
            if current is None:
                by_type[kind] = list(bucket)
            else:
                current.extend(bucket)

    @classmethod
    def concat(cls, root: ast.AST, parts: Sequence[NodeIndex]) -> NodeIndex:
        """The index of ``root`` whose children are exactly the roots of ``parts``, in order, without a walk
        (a module from its top-level statements: the preorder of the whole is the parts one after another)."""
        index = cls.__new__(cls)
        index.nodes = [root]
        index._by_type = {type(root): [root]}
        for part in parts:
            index._extend(part)
        return index

    @classmethod
    def deferred(cls, root: ast.Module) -> NodeIndex:
        """The index of the module ``root``, walked on first use; its statements are found at once (a
        fraction of the nodes) and asking for a kind of statement walks nothing more."""
        return _Deferred(root)

    @classmethod
    def lazy(cls, build: Callable[[], NodeIndex]) -> NodeIndex:
        """The index ``build()`` returns, built on first use (a model's index no one may ask for)."""
        return _Lazy(build)

    def rerooted(self, root: ast.AST) -> NodeIndex:
        """This index of a module with ``root`` in the place of its root node (the same statements under
        another module node): the buckets are shared, the list of every node is copied on first use."""
        return _Rerooted(self, root)

    def of(self, kind: type[N]) -> list[N]:
        """Every node of exactly this type, in source order (operators and contexts are not indexed)."""
        return self._by_type.get(kind, [])  # type: ignore[return-value]

    def of_any(self, *kinds: type[ast.AST]) -> list[ast.AST]:
        if len(kinds) == 1:
            return self._by_type.get(kinds[0], [])
        wanted = set(kinds)
        return [n for n in self.nodes if type(n) in wanted]


class _Deferred(NodeIndex):
    """The index of a module, walked when a node other than a statement is first asked for (`of` answers a
    statement kind from `statement_buckets`, collected at once: all a model of a file without kernels and
    launches reads)."""

    __slots__ = ("_root", "_statements")

    def __init__(self, root: ast.Module) -> None:
        self._root = root
        self._statements = statement_buckets(root.body)

    def __getattr__(self, name: str) -> object:  # only called for an attribute not set yet
        if name not in ("nodes", "_by_type"):
            raise AttributeError(name)
        built = NodeIndex([self._root])  # set once whole: a reader never sees a walk half done
        self._by_type = built._by_type
        self.nodes = built.nodes
        return getattr(self, name)

    def of(self, kind: type[N]) -> list[N]:
        if kind in _STATEMENT_KINDS:
            return self._statements.get(kind, [])  # type: ignore[return-value]
        return self._by_type.get(kind, [])  # type: ignore[return-value]


class _Lazy(NodeIndex):
    """An index whose node lists are filled from ``build()`` when first read (until then they are unset)."""

    __slots__ = ("_build",)

    def __init__(self, build: Callable[[], NodeIndex]) -> None:
        self._build = build

    def __getattr__(self, name: str) -> object:  # only called for an attribute not set yet
        if name not in ("nodes", "_by_type"):
            raise AttributeError(name)
        built = self._build()
        self.nodes = built.nodes
        self._by_type = built._by_type
        return getattr(self, name)


class _Rerooted(NodeIndex):
    __slots__ = ("_base", "_root")

    def __init__(self, base: NodeIndex, root: ast.AST) -> None:
        self._base = base
        self._root = root
        old = base.nodes[0]
        by_type = dict(base._by_type)
        by_type[type(old)] = [n for n in by_type[type(old)] if n is not old]
        by_type[type(root)] = [root, *by_type.get(type(root), [])]
        self._by_type = by_type

    def __getattr__(self, name: str) -> object:  # only called for an attribute not set yet
        if name != "nodes":
            raise AttributeError(name)
        self.nodes = [self._root, *self._base.nodes[1:]]
        return self.nodes


class _Slice(NodeIndex):
    """The index of a run of another index's preorder (a function's body walked with the module): its
    nodes, grouped by type when first asked for (most bodies never are). Holds no node above the run: an
    entry of `_BODIES` must not keep its function alive."""

    __slots__ = ()

    def __init__(self, nodes: list[ast.AST]) -> None:
        self.nodes = nodes

    def __getattr__(self, name: str) -> object:  # only called for an attribute not set yet
        if name != "_by_type":
            raise AttributeError(name)
        by_type: dict[type[ast.AST], list[ast.AST]] = {}
        get = by_type.get
        for node in self.nodes:
            bucket = get(type(node))
            if bucket is None:
                by_type[type(node)] = [node]
            else:
                bucket.append(node)
        self._by_type = by_type
        return by_type


_BODIES: weakref.WeakKeyDictionary[ast.AST, NodeIndex] = weakref.WeakKeyDictionary()


class _View:
    """What `set_compiled` said of one function: the roots left out of `body_index` (``hidden``) and of
    `possible_body_index` (``dropped``), each index built on first use. Holds the body, never the function
    node (the key of `_VIEWS`, which must stay collectable)."""

    __slots__ = ("_certain", "_possible", "body", "dropped", "hidden")

    def __init__(self, body: list[ast.stmt], hidden: frozenset[int], dropped: frozenset[int]) -> None:
        self.body = body
        self.hidden = hidden
        self.dropped = dropped
        self._certain: NodeIndex | None = None
        self._possible: NodeIndex | None = None

    @property
    def certain(self) -> NodeIndex:
        if self._certain is None:
            self._certain = NodeIndex(self.body, self.hidden)
        return self._certain

    @property
    def possible(self) -> NodeIndex:
        if self._possible is None:
            self._possible = NodeIndex(self.body, self.dropped)
        return self._possible


_VIEWS: weakref.WeakKeyDictionary[ast.AST, _View] = weakref.WeakKeyDictionary()


def full_body_index(node: ast.AST) -> NodeIndex:
    """The index of a function's whole body (decorators and annotations excluded), or of any node."""
    index = _BODIES.get(node)
    if index is None:
        roots: Sequence[ast.AST] = node.body if isinstance(node, ast.FunctionDef) else [node]
        index = NodeIndex(roots)
        _BODIES[node] = index
    return index


def body_index(node: ast.AST) -> NodeIndex:
    """The index of a function's body as Warp compiles it for certain: for a kernel or Warp function, without
    the branches Warp drops or may drop (`static_branches`: the untaken branch of ``if wp.static(...)``, both
    when the checker cannot tell which is taken, an abstract function's body), once the model has said which
    (`set_compiled`); else the whole body (`full_body_index`). What the rules walk, and what a rule claiming
    Warp rejects some code must walk."""
    view = _VIEWS.get(node)
    if view is not None:
        return view.certain
    return full_body_index(node)


def possible_body_index(node: ast.AST) -> NodeIndex:
    """The index of what Warp may compile of a function's body: without the branches it certainly drops, with
    those the checker cannot decide (either may run). For rules about silent bugs or performance, which may
    look at code that runs in some specialisation of a kernel."""
    view = _VIEWS.get(node)
    if view is not None and view.dropped:
        return view.possible
    return full_body_index(node)


def set_compiled(
    node: ast.FunctionDef, hidden: frozenset[int] | None, dropped: frozenset[int] | None = None
) -> None:
    """Make `body_index` of ``node`` leave out the nodes whose id is in ``hidden`` and `possible_body_index`
    those in ``dropped`` (a subset: the parts Warp certainly drops), each with what is below them (None or
    empty: nothing). Set by `model.module.build_model` for every Warp function of the file, each time it
    models it (a constant's value may have changed)."""
    if not hidden:
        _VIEWS.pop(node, None)
        return
    dropped = dropped or frozenset()
    current = _VIEWS.get(node)
    if current is not None and current.hidden == hidden and current.dropped == dropped:
        return
    _VIEWS[node] = _View(node.body, hidden, dropped)


def hidden_nodes(node: ast.AST) -> frozenset[int]:
    """The ids of the roots of what `body_index` leaves out of ``node``'s body."""
    view = _VIEWS.get(node)
    return view.hidden if view is not None else frozenset()


def dropped_nodes(node: ast.AST) -> frozenset[int]:
    """The ids of the roots of what `possible_body_index` leaves out: the parts Warp certainly drops (what a
    silent-bug rule that walks statements itself must skip; it may still look into undecided branches)."""
    view = _VIEWS.get(node)
    return view.dropped if view is not None else frozenset()
