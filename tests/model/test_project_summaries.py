"""The workspace model's module summaries: detached from the syntax trees (kept per process while a module's
text stays the same, so a module is parsed for its summary once however many launches resolve through it),
resolving exactly as the trees do, and made again when the module changes."""

from __future__ import annotations

import ast
import gc
import textwrap
import weakref
from collections import Counter
from pathlib import Path

import pytest

from warp_harness.model import project
from warp_harness.model.project import ProjectIndex, summarise
from warp_harness.model.source import ParsedSource, parse_source

KERNEL = """
import warp as wp


@wp.kernel
def k{n}(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = {n}.0
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _resolve_all(index: ProjectIndex, module: str) -> list[str | None]:
    model = index.model(module)
    assert model is not None
    view = index.view(str(index.path_of(module))).attach(model)
    names: list[str | None] = []
    for site in model.launches:
        found = view.resolve(site)
        names.append(None if found is None else f"{found[0].module}:{found[0].name}{' (factory)' * found[1]}")
    return names


def test_each_module_is_parsed_for_its_summary_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """More modules than the parse cache holds, resolved through twice (two files' checks): each is parsed
    once."""
    count = 24
    files = {"pkg/__init__.py": ""}
    files.update({f"pkg/km{n}.py": KERNEL.format(n=n) for n in range(count)})
    imports = "\n".join(f"from . import km{n}" for n in range(count))
    launches = "\n".join(f"    wp.launch(km{n}.k{n}, dim=4, inputs=[a])" for n in range(count))
    files["pkg/run.py"] = f"import warp as wp\n{imports}\n\n\ndef run(a):\n{launches}\n"
    _write(tmp_path, files)
    monkeypatch.setattr(project, "LOADED_CACHE_SIZE", 4)
    parses: Counter[str] = Counter()

    def counting(text: str) -> ParsedSource:
        parses[text] += 1
        return parse_source(text)

    monkeypatch.setattr(project, "parse_in_pieces", counting)
    index = ProjectIndex.for_paths([tmp_path / "pkg"])
    expected = [f"pkg.km{n}:k{n}" for n in range(count)]
    assert _resolve_all(index, "pkg.run") == expected
    assert _resolve_all(index, "pkg.run") == expected
    texts = {(tmp_path / f"pkg/km{n}.py").read_text() for n in range(count)}
    assert {text: parses[text] for text in texts} == dict.fromkeys(texts, 1)


def test_a_detached_summary_keeps_no_node_of_the_tree() -> None:
    text = textwrap.dedent(
        """
        import warp as wp
        from .kernels import scale

        alias = scale if True else scale
        table = {"a": [1, 2, 3]}


        def make():
            @wp.kernel
            def made(a: wp.array(dtype=float)):
                a[0] = 1.0

            return made


        class Solver:
            body_kernel = scale

            def __init__(self):
                local = make()
                self.k = local
        """
    )
    tree = ast.parse(text)
    shared = ast.expr_context | ast.operator | ast.boolop | ast.unaryop | ast.cmpop  # singletons
    nodes = [weakref.ref(node) for node in ast.walk(tree) if not isinstance(node, shared)]
    summary = summarise(tree, "pkg.m", False, "digest", detached=True)
    del tree
    gc.collect()
    assert [ref for ref in nodes if ref() is not None] == []
    assert summary.names["make"] == [("factory", project.KernelRef("pkg.m", 11, 4, "made"))]
    solver = summary.class_summary("Solver")
    assert solver is not None and set(solver.attrs) == {"body_kernel", "k"}


BASE = """
import warp as wp

from . import kernels
from .kernels import fill2d, make_add, scale


def module_factory():
    @wp.kernel
    def module_made(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 5.0

    return module_made


chosen = scale if wp.config.mode else scale
mixed = scale if wp.config.mode else fill2d
built = module_factory()


class Base:
    body_kernel = fill2d
    body_alias = kernels.scale

    def __init__(self, flag):
        local = make_add(float)
        self.from_local = local
        self.nested_local = self.helper_kernel()
        self.late = None
        self.twice = scale
        self.chosen = chosen
        self.unpacked, self.other = scale, fill2d
        self.counter = 0
        self.counter += 1

        @wp.kernel
        def in_method(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 4.0

        self.in_method = in_method
        from .kernels import fill2d as imported_late

        self.imported_late = imported_late
        chain = local
        again = chain
        self.chained = again

    def setup(self):
        self.late = scale
        self.twice = fill2d
        self.param = self.unused_param

    def helper_kernel(self):
        @wp.kernel
        def helper(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 6.0

        return helper

    @staticmethod
    def static_factory():
        @wp.kernel
        def static_made(a: wp.array(dtype=float)):
            i = wp.tid()
            a[i] = 7.0

        return static_made
"""

KERNELS = """
import functools
import warp as wp


@wp.kernel
def scale(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * 2.0


@wp.kernel
def fill2d(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = 1.0


@functools.cache
def make_add(dtype):
    @wp.kernel
    def add(a: wp.array(dtype=dtype)):
        i = wp.tid()
        a[i] = a[i] + 1.0

    return add
"""

LAUNCHING = """
import warp as wp

from . import base
from .base import Base


class Solver(Base):
    def step(self, a):
        wp.launch(self.body_kernel, dim=4, inputs=[a])
        wp.launch(self.body_alias, dim=4, inputs=[a])
        wp.launch(self.from_local, dim=4, inputs=[a])
        wp.launch(self.nested_local, dim=4, inputs=[a])
        wp.launch(self.late, dim=4, inputs=[a])
        wp.launch(self.twice, dim=4, inputs=[a])
        wp.launch(self.chosen, dim=4, inputs=[a])
        wp.launch(self.unpacked, dim=4, inputs=[a])
        wp.launch(self.counter, dim=4, inputs=[a])
        wp.launch(self.in_method, dim=4, inputs=[a])
        wp.launch(self.imported_late, dim=4, inputs=[a])
        wp.launch(self.chained, dim=4, inputs=[a])
        wp.launch(self.param, dim=4, inputs=[a])
        wp.launch(self.helper_kernel(), dim=4, inputs=[a])
        wp.launch(self.static_factory(), dim=4, inputs=[a])
        wp.launch(Base.static_factory(), dim=4, inputs=[a])
        wp.launch(Base.body_kernel, dim=4, inputs=[a])
        wp.launch(Base.late, dim=4, inputs=[a])
        wp.launch(base.chosen, dim=4, inputs=[a])
        wp.launch(base.mixed, dim=4, inputs=[a])
        wp.launch(base.built, dim=4, inputs=[a])
        wp.launch(base.module_factory(), dim=4, inputs=[a])
"""

EXPECTED = [
    "pkg.kernels:fill2d",
    "pkg.kernels:scale",
    "pkg.kernels:add (factory)",
    "pkg.base:helper (factory)",
    "pkg.kernels:scale",
    None,  # assigned two kernels
    "pkg.kernels:scale",
    None,  # unpacked
    None,  # not a kernel
    "pkg.base:in_method",
    "pkg.kernels:fill2d",
    "pkg.kernels:add (factory)",
    None,
    "pkg.base:helper (factory)",
    "pkg.base:static_made (factory)",
    None,  # a method through the class: not followed
    "pkg.kernels:fill2d",
    None,  # set by a method: not the class's
    "pkg.kernels:scale",
    None,  # either of two kernels
    "pkg.base:module_made (factory)",
    "pkg.base:module_made (factory)",
]


def test_detached_summaries_resolve_like_the_trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/kernels.py": KERNELS, "pkg/base.py": BASE, "pkg/solver.py": LAUNCHING},
    )
    detached = _resolve_all(ProjectIndex.for_paths([tmp_path / "pkg"]), "pkg.solver")
    assert detached == EXPECTED

    def on_the_tree(tree: ast.Module, module: str, package: bool, digest: str = "", **_: object) -> object:
        return summarise(tree, module, package, digest)

    monkeypatch.setattr(project, "summarise", on_the_tree)
    assert _resolve_all(ProjectIndex.for_paths([tmp_path / "pkg"]), "pkg.solver") == detached


def test_an_edited_module_is_summarised_again(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/kernels.py": KERNELS,
            "pkg/solver.py": "import warp as wp\nfrom .kernels import scale\n\n\ndef run(a):\n"
            "    wp.launch(scale, dim=4, inputs=[a])\n",
        },
    )
    index = ProjectIndex.for_paths([tmp_path / "pkg"])
    assert _resolve_all(index, "pkg.solver") == ["pkg.kernels:scale"]
    kernels = tmp_path / "pkg/kernels.py"
    renamed = KERNELS.replace("def scale(", "def scaled(")
    index.set_text(kernels, renamed)  # an open document
    assert _resolve_all(index, "pkg.solver") == [None]
    index.set_text(kernels, None)  # closed: the file again
    assert _resolve_all(index, "pkg.solver") == ["pkg.kernels:scale"]
    kernels.write_text(renamed.replace("def scaled(", "def other(\n    "))  # on disk
    index.changed(kernels)
    assert _resolve_all(index, "pkg.solver") == [None]
