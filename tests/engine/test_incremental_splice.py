"""The keystroke path of `IncrementalAnalyser`: an edit inside one kernel that leaves it a kernel of the same
name at the same lines is spliced into the last analysis (no re-chunking of the file, no `build_model`);
the records stay exactly those of `analyse_source`, whatever the edit, and every other edit takes the
full incremental path."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warp_harness import incremental
from warp_harness.builtins import BuiltinTable, load_table
from warp_harness.config import Settings
from warp_harness.engine import analyse_source
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.record import Record

_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_ROOT / "benchmarks"))

from corpus import generated_module, with_kernel_factories  # noqa: E402
from splice_helpers import Spy, same  # noqa: E402

_GENERATED = generated_module(kernels=12, target_lines=0)
# kernels with records of their own (WH003 mixed scalar types), a suppression, a factory
_BUGGY = (
    _GENERATED
    + """

@wp.kernel
def mixed(x: wp.array(dtype=wp.float64), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def quiet(x: wp.array(dtype=wp.float64), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0  # wh: ignore[WH003]


def launch_mixed(n: int):
    x = wp.zeros(n, dtype=wp.float64)
    y = wp.zeros(n, dtype=float)
    wp.launch(mixed, dim=n, inputs=[x, y])
"""
)
_FACTORIES = with_kernel_factories(_GENERATED, 2)


@pytest.fixture(scope="module")
def table() -> BuiltinTable:
    return load_table()


# the fresh records of each text `_same` was given (every call: "s.py", default settings, the module's table)
_FRESH: dict[str, tuple[Record, ...]] = {}
_FRESH_TABLE: dict[str, BuiltinTable] = {}


def _same(analyser: IncrementalAnalyser, text: str, table: BuiltinTable, spy: Spy | None = None) -> None:
    """The analyser's records of ``text`` are those of a fresh analysis (``spy``: counts the analyser's)."""
    assert table is _FRESH_TABLE.setdefault("table", table)  # the memo holds this table's records only
    same(analyser, text, table, spy, "s.py", Settings(), _FRESH)


def _typed(text: str, at: int, typed: str) -> list[str]:
    """``text`` after each character of ``typed`` is typed at ``at``."""
    return [text[:at] + typed[: i + 1] + text[at:] for i in range(len(typed))]


def test_typing_in_a_kernel_is_spliced_and_checks_only_that_kernel(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    analyser = IncrementalAnalyser(table)
    _same(analyser, _GENERATED, table)
    spy = Spy(monkeypatch)
    at = _GENERATED.index(" = x[i] * scale", _GENERATED.index("def kernel_3("))
    for text in _typed(_GENERATED, at, "_renamed"):
        _same(analyser, text, table, spy)
        assert spy.builds == 0
        assert spy.checked == ["kernel_3"]
    # typed back out, to the text first analysed: its records come from the cache, nothing is checked
    for text in reversed(_typed(_GENERATED, at, "_renamed")[:-1]):
        _same(analyser, text, table)
    _same(analyser, _GENERATED, table, spy)
    assert spy.builds == 0
    assert spy.checked == []


def test_what_the_file_scopes_say_is_carried_to_the_spliced_tree(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WH019's enclosing scopes of every function, carried from the last tree to the spliced one (a walk of
    the whole file otherwise), are what a walk of the spliced tree finds; no keystroke walks the file."""
    from warp_harness.model import func_calls

    analyser = IncrementalAnalyser(table)
    _same(analyser, _GENERATED, table)
    at = _GENERATED.index(" = x[i] * scale", _GENERATED.index("def kernel_3("))
    walk = func_calls._file_scopes
    walked_trees: list[object] = []

    def counting_walk(tree: ast.Module) -> object:
        if tree not in func_calls._FILES:
            walked_trees.append(tree)
        return walk(tree)

    for text in _typed(_GENERATED, at, "_q"):
        monkeypatch.setattr(func_calls, "_file_scopes", counting_walk)
        analysis = analyser.analyse(text, "s.py", Settings())
        monkeypatch.setattr(func_calls, "_file_scopes", walk)
        assert walked_trees == []
        assert analysis.model is not None
        tree = analysis.model.tree
        carried = func_calls._FILES.get(tree)
        assert carried is not None
        del func_calls._FILES[tree]
        walked = func_calls._file_scopes(tree)
        assert carried.parents == walked.parents
        assert carried.module_rebound == walked.module_rebound


@pytest.mark.parametrize(
    ("anchor", "offset", "typed", "spliced"),
    [
        ("    a = x[i] * scale\n", 5, "(", False),  # a syntax error mid-edit
        ("def kernel_5(", 12, "2", False),  # the kernel's name changes
        ("@wp.kernel\ndef kernel_5(", 0, "\n", False),  # lines move
        ("@wp.kernel\ndef kernel_5(", 0, "#", False),  # the decorator commented out
        ("    a = x[i] * scale\n", 20, "; wp.launch(kernel_4, dim=1, inputs=[])", False),  # a launch
        ("    a = x[i] * scale\n", 20, "; d = {'block_dim': 64}", False),  # a module-wide fact
        ("    a = x[i] * scale\n", 20, "; q = helper_0(a, a)", True),  # another kernel's @wp.func
        ("    a = x[i] * scale\n", 20, "; q = kernel_2", True),  # another unit's kernel
        ("    a = x[i] * scale\n", 20, "; q = make_scale_0", True),  # a factory (when there is one)
        ("    a = x[i] * scale\n", 20, "; q = wp.float64(1.0) * 2.0  # wh: ignore[WH003]", True),
        ("    a = x[i] * scale\n", 20, "  # wh: ignore[WH012]", True),  # an unused suppression
    ],
)
def test_edits_in_a_kernel(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch, anchor: str, offset: int, typed: str, spliced: bool
) -> None:
    """Whole edits (pasted), each either spliced or not, with the records of a fresh analysis either way."""
    for source in (_GENERATED, _BUGGY, _FACTORIES):
        analyser = IncrementalAnalyser(table)
        _same(analyser, source, table)
        spy = Spy(monkeypatch)
        at = source.index(anchor, source.index("def kernel_4(")) + offset
        text = source[:at] + typed + source[at:]
        _same(analyser, text, table, spy)
        # a kernel that names a kernel factory makes it no unit: not spliced
        assert (spy.builds == 0) is (spliced and not ("make_scale" in typed and source is _FACTORIES))
        _same(analyser, source, table)  # and back
        monkeypatch.undo()


def test_edits_elsewhere_between_spliced_keystrokes(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Context edits (a constant, a host function, a @wp.func), added and removed kernels, moved chunks and
    syntax errors, each followed by keystrokes in a kernel: the snapshot the splice starts from is always
    the last analysis."""
    analyser = IncrementalAnalyser(table)
    text = _BUGGY
    _same(analyser, text, table)
    spy = Spy(monkeypatch)

    def keystrokes(name: str, spliced: bool) -> None:
        nonlocal text
        at = text.index(" = wp.tid()", text.index(f"def {name}("))
        for version in _typed(text, at, "_x"):
            _same(analyser, version, table, spy)
            assert (spy.builds == 0) is spliced
        text = version

    keystrokes("mixed", True)
    steps = [
        (lambda t: t.replace("TILE_K = wp.constant(8)", "TILE_K = wp.constant(4)"), True),  # a constant
        (
            lambda t: t.replace("    wp.launch(mixed, dim=n,", "    wp.launch(mixed, dim=n * 2,"),
            True,
        ),  # a host
        (
            lambda t: t.replace("    return wp.sqrt(a * a + b * b)", "    return wp.sqrt(a * a)", 1),
            True,
        ),  # a func
        (
            lambda t: t + "\n\n@wp.kernel\ndef added(x: wp.array(dtype=float)):\n    x[0] = 1.0\n",
            True,
        ),  # added
        (
            lambda t: t[: t.index("@wp.kernel\ndef quiet(")] + t[t.index("def launch_mixed(") :],
            True,
        ),  # removed
        (
            lambda t: t.replace("\n\n@wp.kernel\ndef mixed(", "\n\n# moved\n\n@wp.kernel\ndef mixed("),
            True,
        ),  # moved
        (
            lambda t: t.replace("    i = wp.tid()\n", "    i = wp.tid(\n", 1),
            False,
        ),  # a syntax error elsewhere
        (lambda t: t.replace("    i = wp.tid(\n", "    i = wp.tid()\n", 1), True),  # fixed
    ]
    for step, spliced in steps:
        text = step(text)
        _same(analyser, text, table)
        keystrokes("mixed", spliced)
        keystrokes("kernel_3", spliced)


def test_chunks_with_lines_at_column_0_inside_a_string(table: BuiltinTable) -> None:
    """A kernel whose docstring has lines at column 0 is several chunk pieces: never spliced, still exact."""
    source = _GENERATED.replace(
        "def kernel_4(x: wp.array(dtype=float), y: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),\n"
        "             m: wp.array2d(dtype=float), out: wp.array(dtype=float), scale: float):\n",
        "def kernel_4(x: wp.array(dtype=float), y: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),\n"
        "             m: wp.array2d(dtype=float), out: wp.array(dtype=float), scale: float):\n"
        '    """Doc\nat 0\n"""\n',
    )
    analyser = IncrementalAnalyser(table)
    _same(analyser, source, table)
    at = source.index(" = x[i] * scale", source.index("def kernel_4("))
    for text in _typed(source, at, "_y"):
        _same(analyser, text, table)
    at = source.index("at 0\n", source.index("def kernel_4("))
    for text in _typed(source, at, "z"):
        _same(analyser, text, table)


_SNIPPETS = ["x", "1", " ", "(", ")", ":", ".", "#", '"', "wp.tid()", "1.0", "x[i]", " * 2.0", "é", "\t"]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    source=st.sampled_from(["generated", "buggy", "factories"]),
    edits=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=40),  # which def
            st.integers(min_value=0, max_value=600),  # how far after it
            st.sampled_from(["insert", "delete"]),
            st.sampled_from(_SNIPPETS),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_keystrokes_near_definitions_give_the_records_of_a_fresh_analysis(
    table: BuiltinTable, source: str, edits: list[tuple[int, int, str, str]]
) -> None:
    """Single-line edits in and around kernels, most of them spliced."""
    text = {"generated": _GENERATED, "buggy": _BUGGY, "factories": _FACTORIES}[source]
    analyser = IncrementalAnalyser(table)
    _same(analyser, text, table)
    for which, offset, kind, snippet in edits:
        defs = [i for i in range(len(text)) if text.startswith("def ", i)]
        at = min(defs[which % len(defs)] + offset, len(text))
        if kind == "insert":
            text = text[:at] + snippet + text[at:]
        elif text[at : at + len(snippet)] != "\n":
            text = text[:at] + text[at + len(snippet) :]
        _same(analyser, text, table)


_SIM = """
import warp as wp
from .kernels import scale


@wp.kernel
def local(a: wp.array(dtype=float)):
    i, j = wp.tid()
    a[i] = float(j)


@wp.kernel
def other(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


def step(a, n, m):
    wp.launch(scale, dim=(n, m), inputs=[a, 2.0])
    wp.launch(local, dim=4, inputs=[a])
"""
_KERNELS = """
import warp as wp


@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s
"""


def test_keystrokes_with_the_workspace_model(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The language server passes the workspace model: keystrokes are spliced there too, the modules the
    launches resolved into are reported (`ProjectView.deps`), and after the kernels' module changes and
    the document is forgotten, the new verdict."""
    from warp_harness.model.project import ProjectIndex

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "kernels.py").write_text(_KERNELS)
    sim = tmp_path / "pkg" / "sim.py"
    sim.write_text(_SIM)
    index = ProjectIndex.for_paths([tmp_path / "pkg"], builtins=table)
    analyser = IncrementalAnalyser(table)
    path = str(sim)

    def same(text: str) -> dict[str, str]:
        fresh = analyse_source(text, path, Settings(), builtins=table, project=index.view(path)).records
        spy.reset()
        view = index.view(path)
        assert analyser.analyse(text, path, Settings(), view).records == fresh
        return dict(view.deps)

    spy = Spy(monkeypatch)
    deps = same(_SIM)
    assert "pkg.kernels" in deps
    at = _SIM.index(" = wp.tid()", _SIM.index("def other("))
    for text in _typed(_SIM, at, "_k"):
        assert same(text) == deps
        assert spy.builds == 0
        assert spy.checked == ["other"]
    base = text
    at = base.index(" = wp.tid()", base.index("def local("))
    for text in _typed(base, at, "_k"):
        assert same(text) == deps
        assert spy.builds == 0
    # the launched kernel's module changes: the server forgets the documents launching into it
    index.set_text(
        tmp_path / "pkg" / "kernels.py", _KERNELS.replace("    i = wp.tid()", "    i, j = wp.tid()")
    )
    analyser.forget(path)
    changed = same(text)
    assert set(changed) == set(deps) and changed != deps  # the new digest
    assert spy.builds == 1


def _same_tree(analyser: IncrementalAnalyser, text: str, table: BuiltinTable) -> None:
    """The model of the analyser's last analysis of ``text``, when read, has every node at its line."""
    analysis = analyser.analyse(text, "s.py", Settings())
    fresh = analyse_source(text, "s.py", Settings(), builtins=table)
    assert analysis.model is not None and fresh.model is not None
    assert ast.dump(analysis.model.tree, include_attributes=True) == ast.dump(
        fresh.model.tree, include_attributes=True
    )
    kernels = [(k.name, k.node.lineno, k.node.end_lineno) for k in analysis.model.kernels]
    assert kernels == [(k.name, k.node.lineno, k.node.end_lineno) for k in fresh.model.kernels]


def _line_end(text: str, anchor: str, kernel: str) -> int:
    start = text.index(anchor, text.index(f"def {kernel}("))
    return text.index("\n", start)


# a kernel whose record quotes the line of its launch (WH007): lines moving above that line move the number
_QUOTING = (
    _BUGGY
    + """

@wp.kernel
def ranked(a: wp.array(dtype=float)):
    i, j = wp.tid()
    a[i] = float(j)


def launch_ranked(a: wp.array(dtype=float)):
    wp.launch(ranked, dim=4, inputs=[a])
"""
)


@pytest.mark.parametrize("source", ["generated", "buggy", "factories", "quoting"])
def test_lines_added_and_deleted_in_a_kernel(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """Enter, typing on the new line, a pasted block and deleted lines in one kernel: spliced (the later
    chunks' records moved with their lines), the records and, once read, the model's positions those of a
    fresh analysis, also when a record quotes a line below the edit (WH007's launch line)."""
    text = {"generated": _GENERATED, "buggy": _BUGGY, "factories": _FACTORIES, "quoting": _QUOTING}[source]
    if source == "quoting":
        records = analyse_source(text, "s.py", Settings(), builtins=table).records
        assert any(r.rule == "WH007" and "at line" in (r.hint or "") for r in records)
    analyser = IncrementalAnalyser(table)
    _same(analyser, text, table)
    spy = Spy(monkeypatch)
    versions: list[str] = []
    at = _line_end(text, "    a = x[i] * scale", "kernel_4")
    text = text[:at] + "\n    " + text[at:]  # Enter
    versions.append(text)
    versions += _typed(text, at + 5, "q_a")  # typed on the new line
    text = versions[-1]
    at = _line_end(text, "    q_a", "kernel_4")
    text = text[:at] + "\n    r = a * 2.0\n    s2 = r + 1.0" + text[at:]  # a block pasted
    versions.append(text)
    for line in ("    s2 = r + 1.0\n", "    r = a * 2.0\n", "    q_a\n"):  # lines deleted
        start = text.index(line, text.index("def kernel_4("))
        text = text[:start] + text[start + len(line) :]
        versions.append(text)
    for version in versions:
        _same(analyser, version, table, spy)
        assert spy.builds == 0
        assert spy.checked in ([], ["kernel_4"])
    _same_tree(analyser, text, table)


def test_keystrokes_after_many_lines_added_above(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines added in one kernel leave the nodes below them behind their lines (moved when the model is
    read): keystrokes in the kernels below, whose launches and helpers lag, still give a fresh analysis's
    records, and so do lines deleted there."""
    text = _BUGGY
    analyser = IncrementalAnalyser(table)
    _same(analyser, text, table)
    spy = Spy(monkeypatch)
    for _ in range(6):
        at = _line_end(text, "    i = wp.tid()", "kernel_2")
        text = text[:at] + "\n    t0 = 1.0" + text[at:]
        _same(analyser, text, table, spy)
        assert spy.builds == 0
    for name in ("tile_kernel_2", "kernel_3", "mixed", "quiet"):
        at = text.index(" = wp.tid()", text.index(f"def {name}("))
        for version in _typed(text, at, "_z"):
            _same(analyser, version, table, spy)
            assert spy.builds == 0
            assert spy.checked == [name]
        text = version
        start = text.rindex("\n", 0, text.index("_z = wp.tid()\n", text.index(f"def {name}("))) + 1
        text = text[:start] + text[text.index("\n", start) + 1 :]  # its line deleted
        _same(analyser, text, table, spy)
        assert spy.builds == 0
    _same_tree(analyser, text, table)
    # and the full way from there (a context edit): the lagging chunks are moved as they are reused
    text = text.replace("TILE_K = wp.constant(8)", "TILE_K = wp.constant(4)")
    _same(analyser, text, table)
    _same_tree(analyser, text, table)


_LINE_SNIPPETS = [
    "\n",
    "\n    ",
    "\n    q = 1.0",
    "\n\n",
    "\n    x[i] = 2.0",
    "\n    if i > 0:\n        return",
]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    source=st.sampled_from(["generated", "buggy", "factories", "quoting"]),
    edits=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=40),  # which def
            st.integers(min_value=0, max_value=600),  # how far after it
            st.sampled_from(["at a line's end", "here", "delete line"]),
            st.sampled_from(_LINE_SNIPPETS + _SNIPPETS),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_lines_added_and_deleted_near_definitions_give_the_records_of_a_fresh_analysis(
    table: BuiltinTable, source: str, edits: list[tuple[int, int, str, str]]
) -> None:
    """Edits that change the line count in and around kernels, between keystrokes that do not, most of
    them spliced; at the end, the model's positions."""
    text = {"generated": _GENERATED, "buggy": _BUGGY, "factories": _FACTORIES, "quoting": _QUOTING}[source]
    analyser = IncrementalAnalyser(table)
    _same(analyser, text, table)
    for which, offset, kind, snippet in edits:
        defs = [i for i in range(len(text)) if text.startswith("def ", i)]
        at = min(defs[which % len(defs)] + offset, len(text))
        if kind == "at a line's end":
            at = text.find("\n", at)
            at = len(text) if at < 0 else at
            text = text[:at] + snippet + text[at:]
        elif kind == "here":
            text = text[:at] + snippet + text[at:]
        else:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            text = text[:start] + (text[end + 1 :] if end >= 0 else "")
        _same(analyser, text, table)
    _same_tree(analyser, text, table)


def test_a_lagging_model_is_moved_to_its_lines_between_analyses(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server reads the last analysis' model (hover) on another thread than the one analysing: read
    during an analysis, its nodes are not moved (they may lag); read after it, they are."""
    analyser = IncrementalAnalyser(table)
    _same(analyser, _GENERATED, table)
    at = _line_end(_GENERATED, "    a = x[i] * scale", "kernel_4")
    text = _GENERATED[:at] + "\n    q = a\n" + _GENERATED[at:]
    analysis = analyser.analyse(text, "s.py", Settings())
    fresh = analyse_source(text, "s.py", Settings(), builtins=table).model
    assert fresh is not None
    expected = [k.node.lineno for k in fresh.kernels]
    monkeypatch.setattr(incremental, "SETTLE_WAIT_S", 0.01)
    with analyser._lock:  # an analysis running on another thread
        model = analysis.model
        assert model is not None
        assert [k.node.lineno for k in model.kernels] != expected  # the kernels below kernel_4 lag
    model = analysis.model
    assert model is not None
    assert [k.node.lineno for k in model.kernels] == expected


def test_lines_added_with_the_workspace_model(
    table: BuiltinTable, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Enter and a deleted line in the kernels of a module launching another module's kernel, with the
    workspace model: spliced, the records of a fresh analysis (the launches below the edit lag)."""
    from warp_harness.model.project import ProjectIndex

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "kernels.py").write_text(_KERNELS)
    sim = tmp_path / "pkg" / "sim.py"
    # the kernels launched with the ranks they unpack: no record quoting a launch's line (never moved)
    source = _SIM.replace("    i, j = wp.tid()\n    a[i] = float(j)", "    i = wp.tid()\n    a[i] = 2.0")
    source = source.replace("dim=(n, m)", "dim=n")
    sim.write_text(source)
    index = ProjectIndex.for_paths([tmp_path / "pkg"], builtins=table)
    analyser = IncrementalAnalyser(table)
    path = str(sim)
    spy = Spy(monkeypatch)

    def same(text: str) -> None:
        index.set_text(sim, text)
        fresh = analyse_source(text, path, Settings(), builtins=table, project=index.view(path)).records
        spy.reset()
        assert analyser.analyse(text, path, Settings(), index.view(path)).records == fresh

    same(source)
    text = source
    for name in ("local", "other", "local"):
        at = _line_end(text, " = wp.tid()", name)
        text = text[:at] + "\n    t = 1.0" + text[at:]
        same(text)
        assert spy.builds == 0
    start = text.index("    t = 1.0\n", text.index("def other("))
    text = text[:start] + text[start + len("    t = 1.0\n") :]
    same(text)
    assert spy.builds == 0
