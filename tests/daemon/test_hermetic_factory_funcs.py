"""A `@wp.func` a factory makes beside its kernel, which the kernel calls (issue #31): the capture
records the func as that factory's, with its own closure cells (``recorder._cell``), and the build
hoists its ``def`` beside the kernel's, each free name bound from the record
(``hermetic_factory._helper_made_here``); a func the factory binds otherwise (overloads, an
assignment) or one recorded without its closure is refused (the replay imports the module, WHD069).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import recorded_closure

from warp_harness.daemon import hermetic_build

FK_CLOSURE = """
import warp as wp


def create_fk_closure(a, b):
    # closure
    @wp.func
    def f():
        return a

    # closure
    @wp.kernel
    def k(a: wp.array(dtype=int)):
        a[0] = f() + b

    return f, k
"""


def _fk_record(tmp_path: Path, text: str, a: int, b: int) -> dict[str, Any]:
    return recorded_closure(tmp_path, "fk.py", text, f"fk_{a}_{b}", lambda m: m.create_fk_closure(a, b)[1])


@pytest.mark.slow
def test_a_func_the_factory_makes_beside_the_kernel_is_built_with_its_own_closure(tmp_path: Path) -> None:
    """warp-lang's `create_fk_closure`
    (https://github.com/NVIDIA/warp/blob/main/warp/tests/test_codegen_instancing.py): the kernel
    calls a `@wp.func` of the same factory call; the capture records that func with its closure."""
    import warp as wp

    path = tmp_path / "fk.py"
    got = []
    for a, b in ((10, 7), (40, 2)):
        record = _fk_record(tmp_path, FK_CLOSURE, a, b)
        assert record["cells"]["f"]["cells"] == {"a": {"kind": "int", "value": a}}
        assert hermetic_build.kernel_texts(FK_CLOSURE, str(path), "k", tmp_path, record)[0] is None
        kernel = hermetic_build.build(FK_CLOSURE, str(path), "k", tmp_path, None, record).kernel
        out = wp.zeros(1, dtype=int, device="cpu")
        wp.launch(kernel, dim=1, inputs=[out], device="cpu")
        got.append(int(out.numpy()[0]))
    assert got == [17, 42]


@pytest.mark.slow
def test_a_func_reading_a_local_its_factory_computes_is_built_from_the_recorded_value(tmp_path: Path) -> None:
    """The func's cell of a local the factory computes (`c = a * 2`) is bound from the record while the
    factory's code is the text the capture ran (test_hermetic_factory_reads.py)."""
    import warp as wp

    text = FK_CLOSURE.replace("        return a\n", "        return a + c\n").replace(
        "def create_fk_closure(a, b):\n", "def create_fk_closure(a, b):\n    c = a * 2\n"
    )
    record = _fk_record(tmp_path, text, 10, 7)
    assert record["cells"]["f"]["cells"]["c"] == {"kind": "int", "value": 20}
    path = tmp_path / "fk.py"
    assert hermetic_build.kernel_texts(text, str(path), "k", tmp_path, record)[0] is None
    kernel = hermetic_build.build(text, str(path), "k", tmp_path, None, record).kernel
    out = wp.zeros(1, dtype=int, device="cpu")
    wp.launch(kernel, dim=1, inputs=[out], device="cpu")
    assert int(out.numpy()[0]) == 10 + 20 + 7


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # two defs of the func (overloads): which ones the kernel called is a matter of the run
        (
            (
                "    # closure\n    @wp.kernel",
                "    @wp.func\n    def f(x: int):\n        return x\n\n    @wp.kernel",
            ),
            "more than by one `def`",
        ),
        # the func rebound by an assignment after its def
        (("    # closure\n    @wp.kernel", "    f = g = f\n\n    @wp.kernel"), "more than by one `def`"),
        # the func reads a local the factory computes, in a factory edited since the capture
        (
            ("        return a\n", "        return a + c\n"),
            "computes: the factory's code around the kernel is not",
        ),
        # a module-level func of the same name: built beside the kernel, Warp would merge the two
        (
            (
                "def create_fk_closure(a, b):",
                "@wp.func\ndef f(x: float):\n    return x\n\n\ndef create_fk_closure(a, b):",
            ),
            "also a name of the module",
        ),
        # a func decorated by something else than Warp's `func`
        (
            ("    # closure\n    @wp.func\n", "    # closure\n    @other.func\n"),
            "not decorated with `@wp.func` alone",
        ),
    ],
)
def test_a_func_made_beside_the_kernel_is_refused_where_the_text_does_not_say_it(
    tmp_path: Path, edit: tuple[str, str], reason: str
) -> None:
    text = FK_CLOSURE.replace(*edit)
    if "@other.func" in text:  # another object's `func` (here Warp's own, by another name)
        text = text.replace("import warp as wp\n", "import warp as wp\n\nother = wp\n")
    captured = text
    if "a + c" in text:  # captured before the edit that makes `f` read `c`
        local = ("def create_fk_closure(a, b):\n", "def create_fk_closure(a, b):\n    c = a * 2\n")
        text, captured = text.replace(*local), FK_CLOSURE.replace(*local)
    assert text != FK_CLOSURE
    record = _fk_record(tmp_path, captured, 10, 7)
    why = hermetic_build.kernel_texts(text, str(tmp_path / "fk.py"), "k", tmp_path, record)[0]
    assert why is not None and reason in why, why


def test_a_func_recorded_without_its_closure_is_refused(tmp_path: Path) -> None:
    """A capture taken before funcs' closures were recorded: the func's values are unknown."""
    path = tmp_path / "fk.py"
    path.write_text(FK_CLOSURE, encoding="utf-8")
    record = {
        "qualname": "create_fk_closure.<locals>.k",
        "path": "fk.py",
        "cells": {
            "f": {"kind": "func", "file": "fk.py", "qualname": "create_fk_closure.<locals>.f"},
            "b": {"kind": "int", "value": 7},
        },
    }
    why = hermetic_build.kernel_texts(FK_CLOSURE, str(path), "k", tmp_path, record)[0]
    assert why is not None and "not recorded as the `@wp.func` it defines" in why, why
