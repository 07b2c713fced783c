"""A factory's kernel reading a local the factory computes from module names (issue #31).

mujoco-warp 4.0.0's ``constraint.py`` makes its contact kernels as

    @cache_kernel
    def _efc_contact_update(cone_type: types.ConeType, ...):
        IS_ELLIPTIC = cone_type == types.ConeType.ELLIPTIC

        @wp.kernel(module="unique", ...)
        def kernel(...):
            ... if wp.static(IS_ELLIPTIC): ...

(https://github.com/google-deepmind/mujoco_warp/blob/main/mujoco_warp/_src/constraint.py; ``ConeType``
an enum of the workspace module ``types.py``): 44 of its 192 factory kernels read such a local or
take decorator values a factory computes from module names. The capture records the local's value
(a closure cell, as data) with the digest of the factory's code and of the texts of the module names
that code reads (``factory_reads.reads_digest``); the build binds the recorded value while both
digests hold, and refuses with the reason (the replay imports the module, WHD069) once an edit of
the factory, of a name it reads or of what that name reads changes them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from daemon_helpers import importable, recorded_closure

from warp_harness.capture.identity import factory_digest
from warp_harness.daemon import hermetic_build

KINDS = """
import enum

with open({marks!r}, "a", encoding="utf-8") as f:
    f.write("kinds' top level\\n")

SCALE = 2.0
UNRELATED = 1


class Cone(enum.IntEnum):
    PYRAMIDAL = 0
    ELLIPTIC = 1
"""

FACTORY = """
import warp as wp

import {kinds} as kinds
from {kinds} import SCALE

with open({marks!r}, "a", encoding="utf-8") as f:
    f.write("factory's top level\\n")

OFFSET = 1.0


def make(cone, n: int):
    IS_ELLIPTIC = cone == kinds.Cone.ELLIPTIC
    FACTOR = SCALE * float(n) + OFFSET
    SIZE = n

    @wp.kernel(module="unique")
    def kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        if wp.static(IS_ELLIPTIC):
            y[i] = x[i] * FACTOR + float(SIZE)
        else:
            y[i] = -x[i]

    return kernel
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(a workspace holding ``kinds_<n>.py`` and ``factory.py``, the name of the kinds module): a
    name of its own per test, as Python keeps an imported module by name."""
    with importable(tmp_path, "kinds") as kinds:
        marks = tmp_path / "marks.log"
        (tmp_path / f"{kinds}.py").write_text(KINDS.format(marks=str(marks)), encoding="utf-8")
        yield tmp_path, kinds


def _factory(ws: Path, kinds: str) -> str:
    return FACTORY.format(kinds=kinds, marks=str(ws / "marks.log"))


def _recorded(ws: Path, kinds: str, elliptic: bool = True) -> dict[str, Any]:
    """The closure record the capture takes of ``make(Cone.ELLIPTIC, 3)``'s kernel (the factory run
    here, as the user's command runs it under ``capture``)."""
    text = _factory(ws, kinds)

    def make(m: Any) -> Any:
        return m.make(m.kinds.Cone.ELLIPTIC if elliptic else m.kinds.Cone.PYRAMIDAL, 3)

    return recorded_closure(ws, "factory.py", text, f"factory_{kinds}_{elliptic}", make)


def _why(ws: Path, text: str, record: dict[str, Any]) -> str | None:
    path = ws / "factory.py"
    path.write_text(text, encoding="utf-8")
    return hermetic_build.kernel_texts(text, str(path), "kernel", ws, record)[0]


@pytest.mark.slow
def test_a_computed_local_is_built_from_its_recorded_value(workspace: tuple[Path, str]) -> None:
    import warp as wp

    ws, kinds = workspace
    record = _recorded(ws, kinds)
    cells = record["cells"]
    assert cells["IS_ELLIPTIC"] == {"kind": "bool", "value": True}
    assert cells["FACTOR"] == {"kind": "float", "value": 7.0}
    assert cells["SIZE"] == {"kind": "int", "value": 3}
    assert isinstance(record["reads"], str) and isinstance(record["factory"], str)
    # the kernel's body edited (a save): built from the text with the recorded values, no code of
    # the factory's module nor of `kinds` run
    edited = _factory(ws, kinds).replace("x[i] * FACTOR + float(SIZE)", "x[i] * FACTOR + float(SIZE) + 0.5")
    assert _why(ws, edited, record) is None
    marks = ws / "marks.log"
    marks.unlink()
    texts = hermetic_build.kernel_texts(edited, str(ws / "factory.py"), "kernel", ws, record)[1]
    assert str((ws / f"{kinds}.py").resolve()) in texts  # what the worker builds from
    built = hermetic_build.build(edited, str(ws / "factory.py"), "kernel", ws, texts, record).kernel
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(built, dim=4, inputs=[x, y], device="cpu")
    assert y.numpy().tolist() == [v * 7.0 + 3.0 + 0.5 for v in range(4)]
    assert not marks.exists()
    # the other closure of the same factory (PYRAMIDAL): the other branch
    other = _recorded(ws, kinds, elliptic=False)
    assert other["cells"]["IS_ELLIPTIC"] == {"kind": "bool", "value": False}
    built = hermetic_build.build(edited, str(ws / "factory.py"), "kernel", ws, None, other).kernel
    wp.launch(built, dim=4, inputs=[x, y], device="cpu")
    assert y.numpy().tolist() == [-v for v in range(4)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "edit", "reason"),
    [
        # the enum member the factory compares with, in another workspace module
        ("kinds", ("ELLIPTIC = 1", "ELLIPTIC = 0"), "whose definitions (or what they read) changed"),
        # a constant it imports from there, and one of its own module
        ("kinds", ("SCALE = 2.0", "SCALE = 4.0"), "whose definitions (or what they read) changed"),
        ("factory", ("OFFSET = 1.0", "OFFSET = 2.0"), "whose definitions (or what they read) changed"),
        # what the enum reads in turn (its base)
        ("kinds", ("import enum\n", "import enum\n\nenum = enum\n"), "changed since the capture"),
        # the factory's own code
        (
            "factory",
            ("SCALE * float(n) + OFFSET", "SCALE * float(n) - OFFSET"),
            "not the text the capture ran",
        ),
        # a module name rebound at run time: its text does not say its value
        (
            "kinds",
            ("UNRELATED = 1\n", "UNRELATED = 1\n\n\ndef f():\n    global SCALE\n"),
            "declared `global`",
        ),
        # the module read whole, not a name of it (recorded so: what a capture of that text takes)
        ("recaptured", ("    SIZE = n\n", "    SIZE = n\n    print(kinds)\n"), "reads the module"),
    ],
)
def test_an_edit_of_what_the_factory_computed_from_drops_the_record(
    workspace: tuple[Path, str], where: str, edit: tuple[str, str], reason: str
) -> None:
    ws, kinds = workspace
    record = _recorded(ws, kinds)
    text = _factory(ws, kinds)
    if where == "kinds":
        path = ws / f"{kinds}.py"
        edited = path.read_text(encoding="utf-8").replace(*edit)
        assert edited != path.read_text(encoding="utf-8")
        path.write_text(edited, encoding="utf-8")
    else:
        assert text.replace(*edit) != text
        text = text.replace(*edit)
        if where == "recaptured":
            record["factory"] = factory_digest(ast.parse(text), record["qualname"])
    why = _why(ws, text, record)
    assert why is not None and reason in why, why
    assert "`kernel` reads `FACTOR`" in why or "`kernel` reads `IS_ELLIPTIC`" in why, why


@pytest.mark.slow
def test_an_edit_of_what_the_factory_does_not_read_keeps_the_record(workspace: tuple[Path, str]) -> None:
    ws, kinds = workspace
    record = _recorded(ws, kinds)
    path = ws / f"{kinds}.py"
    # another name of the module, a comment, the formatting: the names the factory reads are unchanged
    edited = path.read_text(encoding="utf-8").replace("UNRELATED = 1", "UNRELATED = 2  # edited")
    path.write_text(edited.replace("    ELLIPTIC = 1", "    ELLIPTIC = (1)"), encoding="utf-8")
    assert _why(ws, _factory(ws, kinds), record) is None


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cell", "reason"),
    [
        ({"kind": "bool", "value": "__import__('os').system('touch planted')"}, "holds no bool"),
        ({"kind": "int", "value": "open('planted', 'w')"}, "holds no int"),
        ({"kind": "other", "type": "function"}, "holds a value of type `function`"),
        ({"kind": "warp", "name": "__import__('os')"}, "names no Warp type"),
        ({"kind": "func", "file": "../planted.py", "qualname": "f"}, "not an importable module"),
    ],
)
def test_a_planted_record_is_never_executed(
    workspace: tuple[Path, str], cell: dict[str, Any], reason: str
) -> None:
    """A record that is not data (a string of code where a literal goes, an object) is refused
    before anything is built: only literals, Warp names and workspace definitions are spelled."""
    ws, kinds = workspace
    record = _recorded(ws, kinds)
    record["cells"]["IS_ELLIPTIC"] = cell
    (ws / "marks.log").unlink()
    text = _factory(ws, kinds)
    why = _why(ws, text, record)
    assert why is not None and reason in why, why
    with pytest.raises(hermetic_build.NotHermetic, match="IS_ELLIPTIC"):
        hermetic_build.build(text, str(ws / "factory.py"), "kernel", ws, None, record)
    assert not (ws / "planted").exists() and not (ws / "marks.log").exists()


def test_a_record_without_the_digests_is_refused_with_the_reason(workspace: tuple[Path, str]) -> None:
    """A capture taken before the digests were recorded: its computed values are not trusted."""
    ws, kinds = workspace
    text = _factory(ws, kinds)
    cells = {
        "IS_ELLIPTIC": {"kind": "bool", "value": True},
        "FACTOR": {"kind": "float", "value": 7.0},
        "SIZE": {"kind": "int", "value": 3},
    }
    record: dict[str, Any] = {"qualname": "make.<locals>.kernel", "path": "factory.py", "cells": cells}
    why = _why(ws, text, record)
    assert why is not None and "capture again" in why, why
    # with the factory's digest but none of what it reads (`kinds`, `SCALE`, `OFFSET`)
    record["factory"] = factory_digest(ast.parse(text), "make.<locals>.kernel")
    why = _why(ws, text, record)
    assert why is not None and "recorded no digest of their texts" in why, why


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # warp-lang's `test_module_mark_modified`: `C = 17`, a launch, `C = 42`, a launch of the same
        # kernel (https://github.com/NVIDIA/warp/blob/main/warp/tests/test_codegen_instancing.py)
        (
            ("    return kernel\n", "    SIZE = n + 1\n    return kernel\n"),
            "computes and binds again after the kernel is made",
        ),
        (("    SIZE = n\n", "    for SIZE in range(n):\n        pass\n"), "binds in a loop"),
        # a choice before the kernel is made (mujoco-warp's `if elliptic: f = f_elliptic else: ...`)
        (("    SIZE = n\n", "    if n > 2:\n        SIZE = n\n    else:\n        SIZE = 0\n"), None),
    ],
)
def test_a_local_the_factory_binds_again_later_is_not_taken_from_the_record(
    workspace: tuple[Path, str], edit: tuple[str, str], reason: str | None
) -> None:
    """The capture records a cell once per kernel object, at its first launch: a local the factory
    binds after making the kernel (or in a loop) may hold another value at a later launch."""
    ws, kinds = workspace
    text = _factory(ws, kinds)
    assert text.replace(*edit) != text
    text = text.replace(*edit)
    record = recorded_closure(ws, "factory.py", text, f"late_{kinds}_{len(text)}", lambda m: m.make(1, 3))
    why = _why(ws, text, record)
    if reason is None:
        assert why is None, why
    else:
        assert why is not None and reason in why and "`kernel` reads `SIZE`" in why, why


TYPED = """
import warp as wp


def make_typed(n: int):
    vecdim = wp.types.vector(length=n, dtype=float)
    mat2 = wp.types.matrix(shape=(2, 2), dtype=wp.float64)

    @wp.kernel(module="unique")
    def typed(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        v = vecdim()
        for j in range(n):
            v[j] = x[i] + float(j)
        m = mat2(wp.float64(1.0), wp.float64(0.0), wp.float64(0.0), wp.float64(2.0))
        y[i] = wp.dot(v, v) + float(m[1, 1])

    return typed
"""


@pytest.mark.slow
def test_a_vector_type_the_factory_makes_is_recorded_as_its_length_and_dtype(tmp_path: Path) -> None:
    """mujoco-warp's `vecdim = wp.types.vector(length=nmaxdim, dtype=float)` in `_efc_contact_jac_sparse`,
    newton's `exported_ids_vec = wp.types.vector(length=VALUES_PER_KEY, dtype=wp.int32)`."""
    import warp as wp

    record = recorded_closure(
        tmp_path, "typed.py", TYPED, f"typed_{abs(hash(tmp_path))}", lambda m: m.make_typed(3)
    )
    assert record["cells"]["vecdim"] == {"kind": "vector", "length": 3, "dtype": "float32"}
    assert record["cells"]["mat2"] == {"kind": "matrix", "shape": [2, 2], "dtype": "float64"}
    path = tmp_path / "typed.py"
    assert hermetic_build.kernel_texts(TYPED, str(path), "typed", tmp_path, record)[0] is None
    built = hermetic_build.build(TYPED, str(path), "typed", tmp_path, None, record).kernel
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(built, dim=4, inputs=[x, y], device="cpu")
    assert y.numpy().tolist() == [sum((v + j) ** 2 for j in range(3)) + 2.0 for v in range(4)]
    # a forged type is no type: refused before anything is built
    for forged in (
        {"kind": "vector", "length": 3, "dtype": "launch"},
        {"kind": "vector", "length": "3", "dtype": "float32"},
        {"kind": "matrix", "shape": [2], "dtype": "float32"},
        {"kind": "vector", "length": 10**9, "dtype": "float32"},
    ):
        why = hermetic_build.kernel_texts(
            TYPED, str(path), "typed", tmp_path, {**record, "cells": {**record["cells"], "vecdim": forged}}
        )[0]
        assert why is not None and "no vector or matrix type" in why, (forged, why)


@pytest.mark.slow
def test_an_import_inside_the_factory_is_followed(workspace: tuple[Path, str]) -> None:
    """`from kinds import Cone` inside the factory (a common way around an import cycle): what it
    imports is digested as a module-level import's would be, so an edit of `Cone` drops the record."""
    ws, kinds = workspace
    text = _factory(ws, kinds).replace(
        "    IS_ELLIPTIC = cone == kinds.Cone.ELLIPTIC\n",
        f"    from {kinds} import Cone\n\n    IS_ELLIPTIC = cone == Cone.ELLIPTIC\n",
    )
    record = recorded_closure(ws, "factory.py", text, f"local_import_{kinds}", lambda m: m.make(1, 3))
    assert record["cells"]["IS_ELLIPTIC"] == {"kind": "bool", "value": True}
    assert _why(ws, text, record) is None
    path = ws / f"{kinds}.py"
    path.write_text(
        path.read_text(encoding="utf-8").replace("ELLIPTIC = 1", "ELLIPTIC = 0"), encoding="utf-8"
    )
    why = _why(ws, text, record)
    assert why is not None and "changed since the capture" in why, why


def test_what_the_factory_reads_leaves_out_its_annotations_not_its_defaults() -> None:
    """newton's `def test_body_state(model: newton.Model, ...)`: an annotation is evaluated when the
    `def` runs but read by nothing a call computes (following `newton` would reach the whole package);
    a default is a value a call may compute with."""
    from warp_harness.capture.factory_reads import module_reads

    text = """
import warp as wp
import big


def make(m: big.Model, n: int = big.DEFAULT) -> big.Kernel:
    X = n * 2

    @wp.kernel
    def k(a: wp.array(dtype=int)):
        a[0] = X

    return k
"""
    assert module_reads(ast.parse(text), "make.<locals>.k") == [("big", "DEFAULT")]
