"""Every ``wp.launch`` / ``wp.launch_tiled`` call site in a module.

Launches inside ``with self.assertRaises(...)`` / ``with pytest.raises(...)`` are meant to fail (a test
suite checking Warp's own errors) and are left out.
"""

from __future__ import annotations

import ast
import bisect
import re
import unicodedata
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

from warp_harness.model.constants import Value, fold
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import N, NodeIndex, around_body, body_index, child_nodes
from warp_harness.model.walk import preorder, walk

_LAUNCH_POSITIONAL = (
    "kernel",
    "dim",
    "inputs",
    "outputs",
    "adj_inputs",
    "adj_outputs",
    "device",
    "stream",
    "adjoint",
    "record_tape",
    "record_cmd",
    "max_blocks",
    "block_dim",
)
_LAUNCH_NAMES = ("launch", "launch_tiled")
_LAUNCH_NAME_SET = frozenset(_LAUNCH_NAMES)
_ALLOCATORS = {
    "zeros",
    "empty",
    "ones",
    "full",
    "zeros_like",
    "empty_like",
    "ones_like",
    "full_like",
    "array",
}


@dataclass
class HostArray:
    """A host-side ``x = wp.zeros(n, ...)`` (or ``wp.empty_like(y)``, ``wp.array(data)``) single-assigned in
    the launching scope, whose extents the model can compare with a launch dim.

    ``shape``: the shape as spelled: the elements of a literal tuple (``wp.zeros((n, m))``: ``n``, ``m``), or
    the single argument (``wp.zeros(n)``: ``(n,)``, one axis only when ``n`` is an integer, which
    `warp_harness.model.shapes` decides); None for ``_like``, ``wp.array(data)`` without ``shape=``.
    ``like``: the array a ``*_like`` copies its shape from; ``data``: what ``wp.array(data)`` wraps (its
    shape is the data's unless ``shape=`` is given).
    ``extent``: the first axis's extent expression (``shape[0]``), or None."""

    name: str
    extent: ast.expr | None
    node: ast.Call
    shape: tuple[ast.expr, ...] | None = None
    like: ast.expr | None = None
    data: ast.expr | None = None
    # the allocator's name in Warp's namespace (zeros, empty_like, array, ...)
    allocator: str = ""


@dataclass
class LaunchSite:
    node: ast.Call
    tiled: bool
    kernel_expr: ast.expr | None
    dim: ast.expr | None
    inputs: ast.expr | None
    outputs: ast.expr | None
    block_dim: ast.expr | None
    # the function (or module) the call sits in; locals there are visible to folding
    scope: ast.AST
    local_values: dict[str, Value] = field(default_factory=dict)
    local_aliases: dict[str, ast.expr] = field(default_factory=dict)
    host_arrays: dict[str, HostArray] = field(default_factory=dict)
    # the class whose method holds the launch (for ``self.`` fields), None elsewhere
    owner: ast.ClassDef | None = None

    @property
    def kernel_name(self) -> str | None:
        if isinstance(self.kernel_expr, ast.Name):
            return self.kernel_expr.id
        return None

    def argument_list(self, which: str) -> list[ast.expr] | None:
        """The literal list of ``inputs`` / ``outputs`` (None when it is not a literal list or tuple)."""
        node = self.inputs if which == "inputs" else self.outputs
        if node is None:
            return []
        if isinstance(node, ast.List | ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return list(node.elts)
        return None

    def fold(self, node: ast.expr | None, constants: Mapping[str, Value], imports: ImportMap) -> Value | None:
        if node is None:
            return None
        return fold(node, {**constants, **self.local_values}, imports)

    def plain_dim_rank(self, constants: Mapping[str, Value], imports: ImportMap) -> int | None:
        """`launch_dims.dim_rank` without the symbolic shapes: literal tuples and folded values."""
        node = self.dim
        if node is None:
            return None
        if isinstance(node, ast.Name) and node.id in self.local_aliases:
            node = self.local_aliases[node.id]
        if isinstance(node, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return None
            return len(node.elts)
        value = self.fold(node, constants, imports)
        if isinstance(value, int) and not isinstance(value, bool):
            return 1
        if isinstance(value, tuple):
            return len(value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("len", "int"):
            return 1
        # `n + 1`, `n // 2`: arithmetic with a number is a scalar (`*` is not: a tuple can be repeated)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.FloorDiv | ast.Mod):
            for side in (node.left, node.right):
                value = self.fold(side, constants, imports)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    return 1
        return None


def _expects_failure(item: ast.withitem) -> bool:
    """``with self.assertRaises(...)``, ``with pytest.raises(...)``: the body is meant to fail."""
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name.startswith("assertRaises") or name == "raises"


def _expected_failures(withs: list[ast.With]) -> set[int]:
    """ids of the calls inside the body of a with-block (one of ``withs``) that expects an exception."""
    inside: set[int] = set()
    for node in withs:
        if any(_expects_failure(i) for i in node.items):
            for stmt in node.body:
                inside.update(id(n) for n in walk(stmt) if type(n) is ast.Call)
    return inside


class _Scopes:
    """The innermost function whose lines contain a line (the module when none does), by bisection:
    function spans nest or are disjoint, so it is the last function starting at or before the line,
    or the innermost one around that, and so on outwards."""

    def __init__(self, functions: list[ast.FunctionDef | ast.AsyncFunctionDef], tree: ast.Module) -> None:
        ordered = sorted(functions, key=lambda fn: fn.lineno)
        self._functions = ordered
        self._starts = [fn.lineno for fn in ordered]
        self._ends = [fn.end_lineno or fn.lineno for fn in ordered]
        self._tree = tree
        self._parents: list[int] = []
        open_: list[int] = []
        for i, start in enumerate(self._starts):
            while open_ and self._ends[open_[-1]] < start:
                open_.pop()
            self._parents.append(open_[-1] if open_ else -1)
            open_.append(i)

    def of(self, call: ast.Call) -> ast.AST:
        i = bisect.bisect_right(self._starts, call.lineno) - 1
        while i >= 0 and self._ends[i] < call.lineno:
            i = self._parents[i]
        return self._functions[i] if i >= 0 else self._tree


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_NESTED_SCOPE_TYPES: frozenset[type[ast.AST]] = frozenset(_NESTED_SCOPES)


def _own_nodes(scope: ast.AST) -> tuple[list[ast.AST], NodeIndex | None, list[ast.AST]]:
    """Nodes of ``scope`` not inside a nested function or class (contexts and operators left out), in
    preorder. For a function with no nested scope, also its body's shared index (built with the module's)
    and the nodes around the body: the own nodes of a kind are then found without a scan."""
    if isinstance(scope, ast.FunctionDef):
        body = body_index(scope)
        if not any(body.of(kind) for kind in _NESTED_SCOPES):
            before, after = around_body(scope)
            head, pruned_head = _preorder_without_scopes(before)
            tail, pruned_tail = _preorder_without_scopes(after)
            if not (pruned_head or pruned_tail):
                return [*head, *body.nodes, *tail], body, [*head, *tail]
    nodes, _ = _preorder_without_scopes(child_nodes(scope))
    return nodes, None, nodes


def _preorder_without_scopes(roots: list[ast.AST]) -> tuple[list[ast.AST], bool]:
    """The preorder of ``roots`` without nested functions, classes and lambdas (nor what is below them),
    and whether there was one."""
    return preorder(roots, _NESTED_SCOPE_TYPES)


_BINDINGS = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.NamedExpr, ast.With})


def _single_assignments(nodes: list[ast.AST]) -> dict[str, ast.expr]:
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    bindings = _BINDINGS
    # last binding first: the order `_derived` has always folded values in (a value does not see the
    # locals assigned before it)
    for node in reversed(nodes):
        kind = type(node)
        if kind not in bindings:
            continue
        value: ast.expr | None = None
        if kind is ast.Assign:
            targets: list[ast.expr] = node.targets  # type: ignore[attr-defined]
            value = node.value  # type: ignore[attr-defined]
        elif kind is ast.With:
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]  # type: ignore[attr-defined]
        else:  # AnnAssign, AugAssign, For, NamedExpr
            targets = [node.target]  # type: ignore[attr-defined]
        for target in targets:
            if type(target) is ast.Name:
                counts[target.id] = counts.get(target.id, 0) + 1
                if value is not None:
                    values[target.id] = value
                continue
            for n in walk(target):
                if type(n) is ast.Name:
                    counts[n.id] = counts.get(n.id, 0) + 1
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def allocation(call: ast.Call, imports: ImportMap, name: str = "") -> HostArray | None:
    """What ``call`` allocates when it is one of Warp's array allocators (``name``: the variable)."""
    allocator = imports.warp_name(call.func)
    if allocator not in _ALLOCATORS:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return HostArray(name, None, call, allocator=allocator)
    keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    first = call.args[0] if call.args else None
    if allocator.endswith("_like"):
        like = keywords.get("src", first)
        return HostArray(name, None, call, like=like, allocator=allocator)
    shape_node = keywords.get("shape")
    data = None
    if allocator == "array":
        data = keywords.get("data", first)
    elif shape_node is None:
        shape_node = first
    shape: tuple[ast.expr, ...] | None = None
    if isinstance(shape_node, ast.Tuple | ast.List):
        if shape_node.elts and not any(isinstance(e, ast.Starred) for e in shape_node.elts):
            shape = tuple(shape_node.elts)
    elif shape_node is not None and allocator != "array":
        # `wp.zeros(n)`: n may still be a tuple; a number or an integer expression gives one axis
        shape = (shape_node,)
    extent = shape[0] if shape else None
    wrapped = data if shape is None else None
    return HostArray(name, extent, call, shape=shape, data=wrapped, allocator=allocator)


class _ScopeFacts:
    """What depends on a scope's subtree alone; all but its nodes made when first asked for (the shape
    model asks only for the nodes of every method of a class)."""

    __slots__ = ("_aliases", "_body", "_expected", "_others", "_own_calls", "derived", "nodes")

    def __init__(self, scope: ast.AST) -> None:
        # `_body`: the body's index when all of it is the scope's own; `_others`: the own nodes outside it
        self.nodes, self._body, self._others = _own_nodes(scope)
        self._expected: set[int] | None = None
        self._own_calls: set[int] | None = None
        self._aliases: dict[str, ast.expr] | None = None
        # (key of the imports and constants, local values, host arrays) of the latest call that gave a key
        self.derived: tuple[object, dict[str, Value], dict[str, HostArray]] | None = None

    def _of(self, kind: type[N]) -> list[N]:
        """The own nodes of one kind (in no particular order)."""
        found: list[N] = [node for node in self._others if type(node) is kind]
        if self._body is not None:
            found += self._body.of(kind)
        return found

    @property
    def expected(self) -> set[int]:
        """ids of the calls inside a with-block that expects an exception."""
        if self._expected is None:
            self._expected = _expected_failures(self._of(ast.With))
        return self._expected

    @property
    def own_calls(self) -> set[int]:
        """ids of the calls among the scope's own nodes."""
        if self._own_calls is None:
            self._own_calls = {id(call) for call in self._of(ast.Call)}
        return self._own_calls

    @property
    def aliases(self) -> dict[str, ast.expr]:
        if self._aliases is None:
            self._aliases = _single_assignments(self.nodes)
        return self._aliases


# per scope node: what depends on its subtree alone (kept while the node lives: the incremental
# analysis reuses the nodes of unchanged functions; a module's serve the rules of its own analysis)
_SCOPES: weakref.WeakKeyDictionary[ast.AST, _ScopeFacts] = weakref.WeakKeyDictionary()


def _scope_facts(scope: ast.AST) -> _ScopeFacts:
    facts = _SCOPES.get(scope)
    if facts is None:
        facts = _SCOPES[scope] = _ScopeFacts(scope)
    return facts


def _derived(
    aliases: dict[str, ast.expr], constants: Mapping[str, Value], imports: ImportMap
) -> tuple[dict[str, Value], dict[str, HostArray]]:
    """Local values folded and host arrays found among a scope's single assignments."""
    local_values: dict[str, Value] = {}
    env = dict(constants)  # the constants with the local values found so far over them
    for name, value_node in aliases.items():
        value = fold(value_node, env, imports)
        if value is not None:
            local_values[name] = value
            env[name] = value
    host_arrays = {}
    for name, value_node in aliases.items():
        if isinstance(value_node, ast.Call):
            found = allocation(value_node, imports, name)
            if found is not None:
                host_arrays[name] = found
    return local_values, host_arrays


def scope_aliases(scope: ast.AST) -> dict[str, ast.expr]:
    """Names assigned exactly once in ``scope`` (a function or the module; nested scopes left out), with
    the value assigned; parameters of a function are left out."""
    aliases = dict(_scope_facts(scope).aliases)
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        args = scope.args
        params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        aliases = {k: v for k, v in aliases.items() if k not in params}
    return aliases


def scope_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` not inside a nested function or class, in preorder (kept with the scope)."""
    return _scope_facts(scope).nodes


def _owner_class(scope: ast.AST, classes: list[ast.ClassDef]) -> ast.ClassDef | None:
    """The class whose body defines the function ``scope`` (a method), if any."""
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    for cls in classes:
        if any(stmt is scope for stmt in cls.body):
            return cls
    return None


def _launch_calls(calls: list[ast.Call], imports: ImportMap) -> list[ast.Call]:
    """The calls of ``wp.launch`` / ``wp.launch_tiled`` (however Warp is imported) among ``calls``."""
    objects = imports.objects
    modules = imports.modules
    warp_name = imports.warp_name
    wanted = _LAUNCH_NAME_SET
    attribute, name_node = ast.Attribute, ast.Name
    # whether a plain name is Warp's launch depends on the name alone: asked once per name
    names: dict[str, bool] = {}
    found: list[ast.Call] = []
    for call in calls:
        func = call.func
        kind = type(func)
        if kind is attribute:
            # a cheap necessary condition first: `imports.warp_name` is cached, but per node
            if func.attr in wanted and warp_name(func) in wanted:  # type: ignore[attr-defined]
                found.append(call)
        elif kind is name_node:
            name: str = func.id  # type: ignore[attr-defined]
            launches = names.get(name)
            if launches is None:
                imported = name in objects or name in modules
                launches = names[name] = imported and warp_name(func) in wanted
            if launches:
                found.append(call)
    return found


# ``launch`` or ``launch_tiled`` with no identifier character after it (Python takes every non-ASCII one for
# a possible one); the one before is looked at for each match (a look-behind makes the search crawl)
_LAUNCH_WORD = re.compile(r"launch(?:_tiled)?(?![0-9A-Za-z_\x80-\U0010ffff])")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# per non-ASCII character: whether its compatibility decomposition has a letter of ``launch_tiled``
_LAUNCH_LETTER: dict[str, bool] = {}


def may_name_launch(text: str) -> bool:
    """Whether ``text`` may hold a call of Warp's ``launch`` or ``launch_tiled``: the last name of the path
    such a call resolves to (``wp.launch``, ``from warp import launch as go``) is an identifier of the file,
    as Python reads it: NFKC-normalised (``wp.ｌaunch`` is ``wp.launch``). Comments and strings count too.

    An identifier is a run of ASCII letters, digits, underscores and non-ASCII characters; one that reads
    ``launch`` is ``launch`` in the normalised text, between the same ASCII characters (no ASCII letter is the
    second of a composed pair, and no character composes with an ASCII one that follows it). Its non-ASCII
    characters decompose into letters of ``launch_tiled``: a text without such a character is read as is."""
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        if any(_launch_letter(c) for c in set(_NON_ASCII.findall(text))):
            text = unicodedata.normalize("NFKC", text)
    if "launch" not in text:
        return False
    for match in _LAUNCH_WORD.finditer(text):
        start = match.start()
        before = text[start - 1] if start else " "
        if not (before.isascii() and (before.isalpha() or before == "_")) and before < "\x80":
            return True
    return False


def _launch_letter(char: str) -> bool:
    found = _LAUNCH_LETTER.get(char)
    if found is None:
        found = _LAUNCH_LETTER[char] = any(c in "launch_tiled" for c in unicodedata.normalize("NFKD", char))
    return found


def _launch_names(imports: ImportMap) -> set[str]:
    """The names a call of Warp's launch may spell at the call site: an attribute ``launch`` or
    ``launch_tiled`` (``wp.launch``), or a local name imported as one (``from warp import launch as go``)."""
    names = set(_LAUNCH_NAMES)
    for table in (imports.modules, imports.objects):
        names.update(local for local, path in table.items() if path.rpartition(".")[2] in _LAUNCH_NAME_SET)
    return names


def _lines_naming(text: str, names: set[str]) -> list[int] | None:
    """The lines (1-based, sorted) where one of ``names`` stands as a whole identifier; None when the text's
    lines or identifiers may not be what they look like (a ``\\r``, a non-ASCII character that may read as a
    letter of one of the names)."""
    if "\r" in text:  # Python's lines end at each \r as well (a text parsed whole: no other break counts)
        return None
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        letters = set(unicodedata.normalize("NFKD", "".join(names)))
        if any(
            any(c in letters for c in unicodedata.normalize("NFKD", char))
            for char in set(_NON_ASCII.findall(text))
        ):
            return None
    positions: list[int] = []
    for name in names:
        start = text.find(name)
        while start >= 0:
            end = start + len(name)
            before = text[start - 1] if start else " "
            after = text[end] if end < len(text) else " "
            if not _identifier_char(before) and not _identifier_char(after):
                positions.append(start)
            start = text.find(name, end)
    positions.sort()
    lines: list[int] = []
    line, previous = 1, 0
    for position in positions:
        line += text.count("\n", previous, position)
        previous = position
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _identifier_char(char: str) -> bool:
    return char.isalnum() or char == "_" or not char.isascii()


def launch_candidates(text: str, tree: ast.Module, imports: ImportMap) -> list[ast.Call] | None:
    """The calls in ``tree`` (parsed from ``text`` whole) on whose lines a name of Warp's launch stands
    (`_launch_names`), in source order: every launch call is among them. None when the lines cannot be told
    (see `_lines_naming`). Only the statements holding such a line are walked."""
    lines = _lines_naming(text, _launch_names(imports))
    if lines is None:
        return None
    if not lines:
        return []
    spans = partial(_spans_a_line, lines)  # lines bound first: no keyword dict per call
    nodes, _ = preorder([stmt for stmt in tree.body if spans(stmt)], keep=spans)
    call = ast.Call
    return [node for node in nodes if type(node) is call]


def _spans_a_line(lines: list[int], node: ast.AST) -> bool:
    """Whether one of ``lines`` (sorted) is among ``node``'s, its decorators' included (a match case, which
    has no lines, may hold one)."""
    first = getattr(node, "lineno", None)
    if first is None:
        return True
    last = getattr(node, "end_lineno", None) or first
    for decorator in getattr(node, "decorator_list", ()):
        first = min(first, decorator.lineno)
    i = bisect.bisect_left(lines, first)
    return i < len(lines) and lines[i] <= last


def find_launches(
    tree: ast.Module,
    imports: ImportMap,
    constants: Mapping[str, Value],
    index: NodeIndex | None = None,
    key: object = None,
    calls: list[ast.Call] | None = None,
) -> list[LaunchSite]:
    """``key``, when given, identifies ``imports`` and ``constants``: what a scope derives from them is
    kept with the scope's node and reused while the key is equal. ``calls``: the calls that may be launches,
    in source order, when known (`launch_candidates`); else every call of ``index``."""
    index = index or NodeIndex([tree])
    launch_calls = _launch_calls(index.of(ast.Call) if calls is None else calls, imports)
    if not launch_calls:
        return []
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
        *index.of(ast.FunctionDef),
        *index.of(ast.AsyncFunctionDef),
    ]
    by_scope: dict[int, tuple[ast.AST, list[ast.Call]]] = {}
    scopes = _Scopes(functions, tree)
    for call in launch_calls:
        scope = scopes.of(call)
        by_scope.setdefault(id(scope), (scope, []))[1].append(call)
    classes = index.of(ast.ClassDef)
    sites: list[LaunchSite] = []
    for scope, calls_here in by_scope.values():
        facts = _scope_facts(scope)
        calls_here = [c for c in calls_here if id(c) not in facts.expected]
        if not calls_here:
            continue
        # a launch inside a lambda or class body sits in no function's own nodes: keep it anyway
        launch_calls_here = [c for c in calls_here if id(c) in facts.own_calls] or calls_here
        aliases = scope_aliases(scope)
        owner = _owner_class(scope, classes)
        if key is not None and facts.derived is not None and facts.derived[0] == key:
            local_values, host_arrays = dict(facts.derived[1]), dict(facts.derived[2])
        else:
            local_values, host_arrays = _derived(aliases, constants, imports)
            if key is not None:
                facts.derived = (key, dict(local_values), dict(host_arrays))
        for call in launch_calls_here:
            args: dict[str, ast.expr] = {}
            for position, arg in enumerate(call.args):
                if isinstance(arg, ast.Starred):
                    break
                if position < len(_LAUNCH_POSITIONAL):
                    args[_LAUNCH_POSITIONAL[position]] = arg
            for kw in call.keywords:
                if kw.arg:
                    args[kw.arg] = kw.value
            sites.append(
                LaunchSite(
                    node=call,
                    tiled=imports.warp_name(call.func) == "launch_tiled",
                    kernel_expr=args.get("kernel"),
                    dim=args.get("dim"),
                    inputs=args.get("inputs"),
                    outputs=args.get("outputs"),
                    block_dim=args.get("block_dim"),
                    scope=scope,
                    local_values=local_values,
                    local_aliases=aliases,
                    host_arrays=host_arrays,
                    owner=owner,
                )
            )
    sites.sort(key=lambda s: (s.node.lineno, s.node.col_offset))
    return sites
