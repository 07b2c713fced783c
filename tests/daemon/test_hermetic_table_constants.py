"""A module constant read from a table of literals, a native func (issue #31).

newton 1.8.0's ``geometry/contact_reduction.py`` binds

    NORMAL_BINNING_POLYHEDRON = "icosahedron"
    _POLYHEDRON_BINS = {"hexahedron": 6, "octahedron": 8, "dodecahedron": 12, "icosahedron": 20}
    NUM_NORMAL_BINS = _POLYHEDRON_BINS[NORMAL_BINNING_POLYHEDRON]

(https://github.com/newton-physics/newton, ``newton/_src/geometry/contact_reduction.py``) and 14 of
its factory kernels read ``NUM_NORMAL_BINS`` through imports, and ``float_flip``, a
``@wp.func_native("<C++ snippet>")``: names bound by running code until now, so each was refused
(WHD069). A dict display of literal keys and constant values, bound once and read nowhere in its
module but as ``TABLE[...]``, is now a constant of the text, as is a string literal (its key), and
an entry of it read by a constant key is a constant: the build executes those statements, data
only, and nothing else of the module. A ``func_native`` whose snippets are string literals is a
definition (Warp compiles the snippet into the module as it compiles a kernel's body; Python runs
nothing). A table the module stores into, calls a method of, passes on or rebinds is refused as
before, and so is a value, a key or a snippet that is not a literal.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from daemon_helpers import importable

from warp_harness.daemon import hermetic_build

CONFIG = """
import warp as wp

with open({marks!r}, "a", encoding="utf-8") as f:
    f.write("config's top level\\n")

POLYHEDRON = "icosahedron"
DIRECTIONS = 6
_BINS = {{
    "hexahedron": 6,
    "icosahedron": 20,
    "twice": DIRECTIONS * 2,
}}
NUM_BINS = _BINS[POLYHEDRON]

_ROWS_A = ((1.0, 0.0), (0.0, 1.0))
_ROWS_B = ((2.0, 0.0), (0.0, -3.0))
_ROWS = {{"icosahedron": _ROWS_A, "hexahedron": _ROWS_B, "twice": _ROWS_A}}
_mat_type = wp.types.matrix(shape=(2, 2), dtype=wp.float32)
ROWS = _mat_type(*_ROWS[POLYHEDRON])


@wp.func_native("return x + 1.0f;")
def plus_one(x: float) -> float: ...
"""

KERNEL = """
import warp as wp

from {config} import NUM_BINS, ROWS, plus_one

with open({marks!r}, "a", encoding="utf-8") as f:
    f.write("kernel's top level\\n")


@wp.kernel
def kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = plus_one(x[i] * float(NUM_BINS)) - 1.0 + (ROWS[0, 0] - 1.0) * 0.0 + ROWS[1, 1] - ROWS[0, 0]
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(a workspace holding ``config_<n>.py`` and ``kern.py``, the config module's name)."""
    with importable(tmp_path, "config") as config:
        yield tmp_path, config


def _write(ws: Path, config: str, edit: tuple[str, str] = ("", "")) -> str:
    marks = str(ws / "marks.log")
    text = CONFIG.format(marks=marks)
    if edit[0]:
        assert edit[0] in text
        text = text.replace(*edit)
    (ws / f"{config}.py").write_text(text, encoding="utf-8")
    kernel = KERNEL.format(config=config, marks=marks)
    (ws / "kern.py").write_text(kernel, encoding="utf-8")
    return kernel


def _run(ws: Path, source: str) -> list[float]:
    import warp as wp

    path = str(ws / "kern.py")
    why, texts = hermetic_build.kernel_texts(source, path, "kernel", ws)
    assert why is None, why
    built = hermetic_build.build(source, path, "kernel", ws, texts).kernel
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(built, dim=4, inputs=[x, y], device="cpu")
    return [float(v) for v in y.numpy()]


@pytest.mark.slow
def test_an_entry_of_a_table_is_built_from_the_text(workspace: tuple[Path, str]) -> None:
    ws, config = workspace
    # `ROWS`: a matrix of a type the module makes (`wp.types.matrix(shape=..., dtype=...)`) from an
    # entry of a table of tuples (newton's `FACE_NORMALS`); 1 - 1 on the diagonal here
    assert _run(ws, _write(ws, config)) == [v * 20.0 for v in range(4)]
    assert not (ws / "marks.log").exists()  # no top-level code of either module ran


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "factor", "offset"),
    [
        # the key: another bin count and other rows (`ROWS[1, 1] - ROWS[0, 0]` = -3 - 2)
        (('POLYHEDRON = "icosahedron"', 'POLYHEDRON = "hexahedron"'), 6.0, -5.0),
        (('POLYHEDRON = "icosahedron"', 'POLYHEDRON = "twice"'), 12.0, 0.0),  # an entry reading a constant
        (('"icosahedron": 20', '"icosahedron": 12'), 12.0, 0.0),  # the entry
        (("_ROWS_A = ((1.0, 0.0), (0.0, 1.0))", "_ROWS_A = ((1.0, 0.0), (0.0, 4.0))"), 20.0, 3.0),
        (("DIRECTIONS = 6", "DIRECTIONS = 7"), 20.0, 0.0),  # another entry: same value
    ],
)
def test_an_edit_of_the_table_or_its_key_is_what_the_build_computes(
    workspace: tuple[Path, str], edit: tuple[str, str], factor: float, offset: float
) -> None:
    """The value is the saved text's, computed at build: an edit that matters changes what runs."""
    ws, config = workspace
    assert _run(ws, _write(ws, config, edit)) == [v * factor + offset for v in range(4)]
    assert not (ws / "marks.log").exists()


@pytest.mark.parametrize(
    "edit",
    [
        # the module writes into the table, calls a method of it, passes it on or rebinds it: the
        # entry the constant reads is not the one the text wrote
        ("NUM_BINS = _BINS", '_BINS["icosahedron"] = 3\nNUM_BINS = _BINS'),
        ("NUM_BINS = _BINS", "_BINS.update(icosahedron=3)\nNUM_BINS = _BINS"),
        ("NUM_BINS = _BINS", "print(_BINS)\nNUM_BINS = _BINS"),
        ("NUM_BINS = _BINS", "def f():\n    _BINS['x'] = 1\n\n\nNUM_BINS = _BINS"),
        ("NUM_BINS = _BINS", "_BINS = {'icosahedron': 4}\nNUM_BINS = _BINS"),
        # a value or a key that is not a literal: code would run
        ('"hexahedron": 6', "\"hexahedron\": __import__('os').system('touch planted')"),
        ('"hexahedron": 6', "\"hexahedron\": open('planted', 'w')"),
        ('"hexahedron": 6', "str(open('planted', 'w')): 6"),
        ('POLYHEDRON = "icosahedron"', "POLYHEDRON = str(open('planted', 'w'))"),
        ('POLYHEDRON = "icosahedron"', "POLYHEDRON = f\"{open('planted', 'w')}\""),
        # a type made of something else than constants and Warp dtypes, a matrix of a call
        ("dtype=wp.float32)", "dtype=wp.float32, **{'dtype': open('planted', 'w')})"),
        ("_mat_type(*_ROWS", "_mat_type(*_ROWS[open('planted', 'w') and POLYHEDRON] or _ROWS"),
        ("_ROWS_B = ((2.0, 0.0)", "_ROWS_B = ((float(open('planted', 'w').name), 0.0)"),
        # a native func's snippet computed by Python code
        ('@wp.func_native("return', '@wp.func_native(open("planted", "w").name + "return'),
    ],
)
def test_a_table_the_text_does_not_fix_is_refused_and_nothing_runs(
    workspace: tuple[Path, str], edit: tuple[str, str]
) -> None:
    ws, config = workspace
    source = _write(ws, config, edit)
    path = str(ws / "kern.py")
    why = hermetic_build.kernel_texts(source, path, "kernel", ws)[0]
    assert why is not None and any(n in why for n in ("NUM_BINS", "plus_one", "ROWS")), why
    with pytest.raises(hermetic_build.NotHermetic):
        hermetic_build.build(source, path, "kernel", ws)
    assert not (ws / "planted").exists() and not (ws / "marks.log").exists()
