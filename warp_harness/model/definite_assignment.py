"""Which locals of a Warp function are bound on every path to a read, in the order Warp compiles them.

Warp's code generator walks a function body once, in source order, with a table of the names bound so far
(``Adjoint.symbols``). Both sides of an ``if`` start from the table before it, and after the ``if`` a name
bound on either side stays in the table; a loop's body is walked once. So a read of a local that no
statement before it binds, on the path the generator walked, is refused (``Referencing undefined symbol:
y``: a name bound only in the other side of the ``if``, later in the loop body, or only in a branch Warp
drops, ``if False:``); a read of a local bound on some paths only compiles to a read of an uninitialised C++
variable: undefined behaviour, whatever the other path left in it (measured with Warp 1.19).

`unbound_reads` runs that walk over a function's statements with two sets per program point: the names bound
on every path (*definite*) and on some path (*maybe*). Loops are taken to run at least once (a loop over
``range(3)`` binds what its body binds); ``if wp.static(...)`` follows the branch Warp keeps, and both
(optimistically) when the checker cannot tell which.
"""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from warp_harness.model.walk import walk as walk_nodes

# the ``if``s (dynamic, or static with a branch the checker cannot tell) and loops around a statement,
# outermost first, each with the side it is on (True: the body)
Guards = tuple[tuple[ast.stmt, bool], ...]


@dataclass(frozen=True)
class UnboundRead:
    """A read of local ``name`` (at ``node``) that some path reaches without binding it; ``never_bound``:
    no path Warp compiles binds it before the read (Warp refuses the function). ``bindings``: the statements
    that bind it (walked before the read), each with its `Guards`; ``guards``: the read's."""

    name: str
    node: ast.Name
    never_bound: bool
    bindings: tuple[tuple[ast.AST, Guards], ...]
    guards: Guards = ()

    @property
    def one_sided(self) -> bool:
        """The plain shape of the bug: every binding sits in the body of one ``if`` without ``else`` (nor
        ``elif``) that stands in the read's own block, and the read is under no other condition, as in
        ``if c: x = v`` followed by a read of ``x``. Not: a chain of ``elif``s that may be exhaustive, or a
        read under a condition of its own (often the one that guards the binding)."""
        if not self.bindings:
            return False
        first = self.bindings[0][1]
        if len(first) != len(self.guards) + 1 or first[:-1] != self.guards:
            return False
        branch, side = first[-1]
        if not isinstance(branch, ast.If) or not side or branch.orelse:
            return False
        return all(guards[: len(first)] == first for _, guards in self.bindings)


@dataclass(frozen=True)
class _State:
    """What is bound at a point of a function: on every path there (``definite``) and on some (``maybe``)."""

    definite: frozenset[str] | None  # None: unreachable (after a return, break or continue)
    maybe: frozenset[str] = frozenset()

    def bind(self, names: Iterable[str]) -> _State:
        if self.definite is None:
            return self
        added = frozenset(names)
        return _State(self.definite | added, self.maybe | added)


_UNREACHABLE = _State(None)


def _join(states: Iterable[_State], optimistic: bool = False) -> _State:
    reachable = [s for s in states if s.definite is not None]
    if not reachable:
        return _UNREACHABLE
    definite: frozenset[str] = reachable[0].definite or frozenset()
    maybe = reachable[0].maybe
    for state in reachable[1:]:
        assert state.definite is not None
        definite = definite | state.definite if optimistic else definite & state.definite
        maybe = maybe | state.maybe
    return _State(definite, maybe)


def _stored_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _stored_names(element)]
    if isinstance(target, ast.Starred):
        return _stored_names(target.value)
    return []


@dataclass
class _Walk:
    """One walk of a function in Warp's compile order: the locals it follows and the static branches."""

    locals: AbstractSet[str]
    static: Mapping[int, bool | None]
    # the lines holding a read of one of ``locals``, sorted (None: every line may)
    lines: Sequence[int] | None = None
    found: dict[str, UnboundRead] = field(default_factory=dict)
    bindings: dict[str, list[tuple[ast.AST, Guards]]] = field(default_factory=dict)
    breaks: list[list[_State]] = field(default_factory=list)
    guards: list[tuple[ast.stmt, bool]] = field(default_factory=list)

    def reads(self, node: ast.AST | None, state: _State) -> None:
        if node is None or state.definite is None:
            return
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if first is not None and last is not None and self.lines is not None:
            at = bisect_left(self.lines, first)
            if at == len(self.lines) or self.lines[at] > last:
                return  # no read of a candidate on these lines
        # `walk`: ast.walk's order (the first read of a name is the one reported) at a third of its cost
        for sub in walk_nodes(node):
            if type(sub) is ast.Name and type(sub.ctx) is ast.Load:
                self.read(sub, state)

    def read(self, name: ast.Name, state: _State) -> None:
        assert state.definite is not None
        if name.id not in self.locals or name.id in state.definite or name.id in self.found:
            return
        self.found[name.id] = UnboundRead(
            name.id,
            name,
            name.id not in state.maybe,
            tuple(self.bindings.get(name.id, ())),
            tuple(self.guards),
        )

    def bind(self, stmt: ast.AST, names: list[str], state: _State) -> _State:
        for name in names:
            self.bindings.setdefault(name, []).append((stmt, tuple(self.guards)))
        return state.bind(names)

    def guarded(self, stmt: ast.stmt, side: bool, body: list[ast.stmt], state: _State) -> _State:
        self.guards.append((stmt, side))
        try:
            return self.block(body, state)
        finally:
            self.guards.pop()

    def block(self, body: list[ast.stmt], state: _State) -> _State:
        for stmt in body:
            state = self.statement(stmt, state)
        return state

    def statement(self, stmt: ast.stmt, state: _State) -> _State:
        if state.definite is None:
            return state
        if isinstance(stmt, ast.Assign):
            self.reads(stmt.value, state)
            for target in stmt.targets:
                if not isinstance(target, ast.Name | ast.Tuple | ast.List | ast.Starred):
                    self.reads(target, state)
            return self.bind(stmt, [n for t in stmt.targets for n in _stored_names(t)], state)
        if isinstance(stmt, ast.AnnAssign):
            self.reads(stmt.value, state)
            if stmt.value is None:
                return state
            return self.bind(stmt, _stored_names(stmt.target), state)
        if isinstance(stmt, ast.AugAssign):
            self.reads(stmt.value, state)
            if isinstance(stmt.target, ast.Name):
                self.read(ast.Name(stmt.target.id, ast.Load(), **_position(stmt.target)), state)
                return self.bind(stmt, [stmt.target.id], state)
            self.reads(stmt.target, state)
            return state
        if isinstance(stmt, ast.If):
            return self.branch(stmt, state)
        if isinstance(stmt, ast.For):
            self.reads(stmt.iter, state)
            return self.loop(stmt, self.bind(stmt, _stored_names(stmt.target), state))
        if isinstance(stmt, ast.While):
            self.reads(stmt.test, state)
            return self.loop(stmt, state)
        if isinstance(stmt, ast.Return):
            self.reads(stmt.value, state)
            return _UNREACHABLE
        if isinstance(stmt, ast.Break):
            if self.breaks:
                self.breaks[-1].append(state)
            return _UNREACHABLE
        if isinstance(stmt, ast.Continue):
            return _UNREACHABLE
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return self.bind(stmt, [stmt.name], state)
        self.reads(stmt, state)
        return state

    def branch(self, stmt: ast.If, state: _State) -> _State:
        if id(stmt) in self.static:
            taken = self.static[id(stmt)]
            if taken is True:
                return self.block(stmt.body, state)
            if taken is False:
                return self.block(stmt.orelse, state)
            # Warp keeps one branch, the checker cannot tell which
            return _join(
                [self.guarded(stmt, True, stmt.body, state), self.guarded(stmt, False, stmt.orelse, state)],
                optimistic=True,
            )
        self.reads(stmt.test, state)
        return _join(
            [self.guarded(stmt, True, stmt.body, state), self.guarded(stmt, False, stmt.orelse, state)]
        )

    def loop(self, stmt: ast.For | ast.While, state: _State) -> _State:
        self.breaks.append([])
        after_body = self.guarded(stmt, True, stmt.body, state)
        exits = self.breaks.pop()
        ran = _join([after_body, *exits])  # taken to run at least once
        if ran.definite is None:
            ran = state
        after = _State(ran.definite, state.maybe | ran.maybe)
        return self.block(stmt.orelse, after)


def _position(node: ast.AST) -> dict[str, int]:
    return {
        key: getattr(node, key)
        for key in ("lineno", "col_offset", "end_lineno", "end_col_offset")
        if getattr(node, key, None) is not None
    }


_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)


def _candidates(node: ast.FunctionDef, names: Sequence[ast.Name], skip: AbstractSet[str]) -> set[str]:
    """The locals a read may find unbound: all but those first bound by a top-level simple statement (no
    ``if`` or loop around it) and read only on later lines (most locals of most kernels)."""
    spans = [(s.lineno, s.end_lineno or s.lineno, isinstance(s, _COMPOUND)) for s in node.body]
    starts = [start for start, _, _ in spans]
    first: dict[str, int] = {}  # name -> the last line of the statement that first binds it (-1: in a block)
    for name in sorted(
        (n for n in names if isinstance(n.ctx, ast.Store)), key=lambda n: (n.lineno, n.col_offset)
    ):
        if name.id in first or name.id in skip:
            continue
        at = bisect_right(starts, name.lineno) - 1
        first[name.id] = -1 if at < 0 or spans[at][2] else spans[at][1]
    candidates = {name for name, end in first.items() if end < 0}
    for name in names:
        if isinstance(name.ctx, ast.Load) and name.id in first and name.lineno <= first[name.id]:
            candidates.add(name.id)
    return candidates


def unbound_reads(
    node: ast.FunctionDef,
    params: Iterable[str],
    static: Mapping[int, bool | None],
    outer: AbstractSet[str] = frozenset(),
    names: Sequence[ast.Name] | None = None,
) -> list[UnboundRead]:
    """The first read of each local of ``node`` that some path reaches unbound, in source order; ``params``
    are bound on entry; ``static``: the ``if`` nodes Warp folds, by id, with the branch it keeps (None:
    unknown); names in ``outer`` (module-level names Warp would fall back to) are never reported.
    ``names``: every ``ast.Name`` of the body, dropped branches included, when the caller has them indexed
    (they let a straight-line body skip the walk)."""
    bound = frozenset(params)
    if names is None:
        names = [sub for stmt in node.body for sub in ast.walk(stmt) if isinstance(sub, ast.Name)]
    candidates = _candidates(node, names, bound | outer)
    if not candidates:
        return []
    lines = sorted(n.lineno for n in names if isinstance(n.ctx, ast.Load) and n.id in candidates)
    walk = _Walk(frozenset(candidates), static, lines)
    walk.block(node.body, _State(bound, bound))
    return sorted(walk.found.values(), key=lambda r: (r.node.lineno, r.node.col_offset))
