"""How much of a corpus `check` could leave unparsed: function bodies that no consumer of the tree reads.

The route measured: split each file with kernels into its top-level functions and the methods of its
top-level classes, decide from their text alone which bodies cannot matter to any record, and parse the
file with those bodies replaced by ``pass`` (their syntax checked by ``symtable``, a third of a parse).
A body may be left out only when no consumer reads it; each consumer the audit of the model, the shared
analyses, launch resolution and the rules found adds a condition, and the conditions are applied one
after the other (cumulative), each row naming who needs it:

- candidates: undecorated ``def`` (not ``async``) at top level or directly in a top-level class, whose
  body starts on a line of its own, its text ASCII (a text that is not may spell any name: `may_spell`);
- the facts the rules read module-wide (`rules.base.Fact`: imports, classes, lambdas, ``async``,
  ``global`` / ``nonlocal``, builtin registrations, module options) and decorators (a nested kernel);
- Warp's own names (``launch``, ``kernel``, ``func``, ``struct``, ``overload``, ``constant``, ``tile``):
  kernels, launches, factories (`project._factory_kernel`);
- the module's name for Warp (``wp``, ``warp``): host code calling Warp (``wp.<name> = ...`` registers a
  builtin; arrays made for a launch);
- methods without an attribute store: the class's fields (`host_dtypes` follows ``self.x`` through every
  method and counts stores on anything else, `shapes._class_info`, the class summaries of launch resolution);
- not mentioning a top-level function or class that is kept, nor a kept method (`tiles._calls_by_name`:
  the calls of a kernel factory anywhere in the module, by name or attribute, give the values its kernels
  are built with);
- not mentioning any other name bound at module level (a kernel imported from another module, or made at
  module level): no consumer was found reading such a mention in a function that does not launch; the
  side of doubt;
- not named by kept code (a helper a kernel or a launching function calls: what is read of it, its name and
  decorators (`func_calls`: whether a name is a ``@wp.func`` defined once), a stub keeps; the side of doubt
  too).

Printed: per row, the bytes of the bodies left and their share of the text of the files with kernels; then,
for the row before the attribute stores (the most a filter keeping Warp-calling code could skip) and the last
row, the CPU of ``ast.parse`` of every such file whole against the stubbed texts plus ``symtable`` of the
bodies left out (best of ``repeat``, interleaved).

    python benchmarks/skippable_bodies.py [--repeat 3] TREE...
"""

from __future__ import annotations

import argparse
import ast
import gc
import re
import symtable
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_FACT_WORDS = (
    "import",
    "class",
    "lambda",
    "async",
    "await",
    "global",
    "nonlocal",
    "setattr",
    "delattr",
    "add_builtin",
    "register_builtin",
    "block_dim",
    "max_unroll",
    "module_options",
    "@",
)
_WARP_NAMES = ("launch", "Launch", "kernel", "Kernel", "func", "struct", "overload", "constant", "tile")
_WARP_MODULE = ("wp", "warp")
# an attribute stored: `x.a = ...`, `x.a += ...`, `x.a: T = ...`, `del x.a`, `for x.a in`, `as x.a`, and
# the last line of a bracketed target (`(x.a,\n b) = ...`); over-approximated (`f(x.a, k=1)` counts)
_ATTRIBUTE_STORE = re.compile(
    r"\.\s*[A-Za-z_]\w*[^\n]*?(?<![=!<>])=(?!=)|\bdel\b|\bfor\b(?:(?!\bin\b)[^\n])*\.|\bas\b[^\n:]*\.|^\s*[)\]}][^\n]*=",
    re.M,
)
_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass
class _Body:
    node: ast.FunctionDef
    text: str
    method: bool
    words: set[str] = field(default_factory=set)


@dataclass
class _File:
    text: str
    lines: list[str]
    candidates: list[_Body]
    # names of the top-level classes and functions that are no candidate, and every other name bound at
    # module level
    defined: set[str]
    bound: set[str]
    # the text of what is never a candidate (module-level statements, class bodies but their methods, ...)
    other_text: str


def _segment(lines: list[str], node: ast.stmt) -> str:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "".join(lines[first - 1 : node.end_lineno])


def _read(text: str) -> _File | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines(keepends=True)
    candidates: list[_Body] = []
    other: list[str] = []
    defined: set[str] = set()
    bound: set[str] = set()

    def consider(node: ast.stmt, method: bool) -> bool:
        segment = _segment(lines, node)
        if (
            type(node) is ast.FunctionDef
            and not node.decorator_list
            and node.body[0].lineno > node.lineno
            and segment.isascii()
        ):
            candidates.append(_Body(node, segment, method, set(_WORD.findall(segment))))
            return True
        other.append(segment)
        return False

    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            defined.add(stmt.name)
            for item in stmt.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    consider(item, True)
                else:
                    other.append(_segment(lines, item))
            other.append(_segment(lines, stmt).split("\n", 1)[0])
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if not consider(stmt, False):
                defined.add(stmt.name)
        else:
            other.append(_segment(lines, stmt))
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    bound.add(node.id)
                elif isinstance(node, ast.alias):
                    bound.add((node.asname or node.name).split(".")[0])
    return _File(text, lines, candidates, defined, bound - defined, "".join(other))


def _without(words: tuple[str, ...]) -> Callable[[_File, list[_Body]], list[_Body]]:
    return lambda _, bodies: [b for b in bodies if not any(w in b.text for w in words)]


def _no_attribute_store(_: _File, bodies: list[_Body]) -> list[_Body]:
    return [b for b in bodies if not (b.method and _ATTRIBUTE_STORE.search(b.text))]


def _closure(names: Callable[[_File], set[str]], named: bool) -> Callable[[_File, list[_Body]], list[_Body]]:
    """Bodies mentioning none of ``names`` (grown by every body kept meanwhile); ``named``: nor named by
    any kept text (word match)."""

    def keep(file: _File, bodies: list[_Body]) -> list[_Body]:
        left = list(bodies)
        left_ids = {id(b) for b in left}
        kept_names = set(names(file))
        kept_text = [file.other_text, *(b.text for b in file.candidates if id(b) not in left_ids)]
        kept_names.update(b.node.name for b in file.candidates if id(b) not in left_ids)
        kept_words = set(_WORD.findall("".join(kept_text))) if named else set()
        changed = True
        while changed:
            changed = False
            for body in list(left):
                if body.words & kept_names or (named and body.node.name in kept_words):
                    left.remove(body)
                    kept_names.add(body.node.name)
                    if named:
                        kept_words |= body.words
                    changed = True
        return left

    return keep


_ROWS: list[tuple[str, Callable[[_File, list[_Body]], list[_Body]]]] = [
    ("candidates: undecorated def bodies (top level, methods), ASCII", lambda _, bodies: bodies),
    ("+ no fact the rules read module-wide, no decorator", _without(_FACT_WORDS)),
    ("+ no Warp name (launch, kernel, func, struct, ...)", _without(_WARP_NAMES)),
    ("+ no wp / warp (host code calling Warp)", _without(_WARP_MODULE)),
    ("+ methods: no attribute store (class fields)", _no_attribute_store),
    ("+ no kept top-level function or class named", _closure(lambda f: f.defined, named=False)),
    ("+ no other module-level name named", _closure(lambda f: f.defined | f.bound, named=False)),
    ("+ not named by kept code", _closure(lambda f: f.defined | f.bound, named=True)),
]


def _stubbed(file: _File, bodies: list[_Body]) -> str:
    """``file``'s text with ``bodies`` replaced by ``pass`` on their first line, blank lines after (the
    line numbers of everything else kept)."""
    lines = list(file.lines)
    for body in bodies:
        first = body.node.body[0].lineno - 1
        indent = lines[first][: len(lines[first]) - len(lines[first].lstrip())]
        lines[first] = indent + "pass\n"
        for i in range(first + 1, body.node.end_lineno or first + 1):
            lines[i] = "\n"
    return "".join(lines)


def _parse_cost(files: list[_File], left: list[list[_Body]], repeat: int) -> tuple[float, float, float]:
    """CPU of ast.parse of the texts whole, of the stubbed texts, and of symtable over the bodies left out."""
    stubbed = [_stubbed(f, b) for f, b in zip(files, left, strict=True)]
    alone = [
        ("class _:\n" + b.text if b.method else b.text) for bodies in left for b in bodies
    ]  # a method parses in a class

    def parse_all(texts: list[str]) -> None:
        for text in texts:
            ast.parse(text)

    def check_all() -> None:
        for text in alone:
            symtable.symtable(text, "<body>", "exec")

    best = [float("inf")] * 3
    gc.disable()  # as `check` parses: no collection traversing the trees
    try:
        for _ in range(repeat):
            for i, work in enumerate(
                (lambda: parse_all([f.text for f in files]), lambda: parse_all(stubbed), check_all)
            ):
                start = time.process_time()
                work()
                best[i] = min(best[i], time.process_time() - start)
    finally:
        gc.enable()
    return best[0], best[1], best[2]


def read_files(texts: list[str]) -> list[_File]:
    """The texts that may hold kernels (`engine.may_hold_kernels`) and parse, read for the rows."""
    from warp_harness.engine import may_hold_kernels

    files = [_read(text) for text in texts if may_hold_kernels(text)]
    return [f for f in files if f is not None]


def rows(files: list[_File]) -> list[tuple[str, list[list[_Body]]]]:
    """Per row of `_ROWS` (cumulative), the bodies of each file that could still be left out."""
    left = [f.candidates for f in files]
    found: list[tuple[str, list[list[_Body]]]] = []
    for name, condition in _ROWS:
        left = [condition(f, bodies) for f, bodies in zip(files, left, strict=True)]
        found.append((name, left))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("trees", nargs="+", type=Path)
    args = ap.parse_args()
    from warp_harness.engine import iter_python_files

    files = read_files(
        [path.read_text(encoding="utf-8", errors="replace") for path in iter_python_files(args.trees)]
    )
    total = sum(len(f.text) for f in files)
    print(f"files with kernels: {len(files)}, {total / 1e6:.1f} MB")
    found = rows(files)
    for name, left in found:
        size = sum(len(b.text) for bodies in left for b in bodies)
        print(f"  {name:<66} {size / 1e6:6.2f} MB {100 * size / total:5.1f}%")
    ceiling = next(left for name, left in found if name.startswith("+ no Warp name"))
    for label, bodies in (
        ("up to no Warp name (the later conditions waived)", ceiling),
        ("every condition", found[-1][1]),
    ):
        whole, stubbed, checked = _parse_cost(files, bodies, args.repeat)
        print(
            f"parse CPU, bodies left out {label}: whole {whole:.2f} s, stubbed {stubbed:.2f} s + "
            f"symtable of the bodies {checked:.2f} s = {(stubbed + checked) / whole:.3f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
