"""The decision on a kernel made inside a function (issue #31): built from the module's text with
its free names bound from the capture's closure record (``daemon/hermetic_factory.py``), or refused
with the reason (the replay then imports the module, WHD069). Text only; one build runs Warp on the
CPU to show the bound values are the ones the kernel computes with.

mujoco-warp's factories close over ints, bools, Warp types and funcs
(https://github.com/google-deepmind/mujoco_warp/blob/main/mujoco_warp/_src/smooth.py, `@cache_kernel`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from warp_harness.daemon import hermetic_build

FACTORY = """
import warp as wp

SIZE = 4


@wp.func
def twice(v: float):
    return 2.0 * v


@wp.struct
class Pair:
    a: float


def make(n: int, op, T, flag: bool):
    @wp.kernel(enable_backward=False)
    def k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        v = T(x[i])
        if flag:
            v = op(v)
        y[i] = v + float(n) + float(SIZE)

    return k
"""


def _cells(**over: Any) -> dict[str, Any]:
    cells: dict[str, Any] = {
        "n": {"kind": "int", "value": 3},
        "op": {"kind": "func", "file": "factory.py", "qualname": "twice"},
        "T": {"kind": "warp", "name": "float32"},
        "flag": {"kind": "bool", "value": True},
    }
    cells.update(over)
    return {"qualname": "make.<locals>.k", "path": "factory.py", "cells": cells}


def _why(tmp_path: Path, text: str, closure: dict[str, Any] | None, kernel: str = "k") -> str | None:
    path = tmp_path / "factory.py"
    path.write_text(text, encoding="utf-8")
    return hermetic_build.kernel_texts(text, str(path), kernel, tmp_path, closure)[0]


def test_a_factory_kernel_is_decided_from_its_closure_record(tmp_path: Path) -> None:
    assert _why(tmp_path, FACTORY, _cells()) is None
    assert _why(tmp_path, FACTORY, _cells(T={"kind": "builtin", "name": "float"})) is None
    # without a record (a capture taken before records existed) it is refused as before
    assert "not a module-level `@wp.kernel`" in str(_why(tmp_path, FACTORY, None))


@pytest.mark.parametrize(
    ("edit", "closure", "reason"),
    [
        # a cell the build cannot take from text: an object, a lambda, a func made inside a function
        (None, _cells(op={"kind": "other", "type": "function"}), "holds a value of type `function`"),
        (
            None,
            _cells(op={"kind": "func", "file": "factory.py", "qualname": "f.<locals>.g"}),
            "made inside a function",
        ),
        (None, _cells(n={"kind": "int", "value": 2.5}), "holds no int"),
        (None, _cells(T={"kind": "builtin", "name": "print"}), "names no scalar type"),
        (None, _cells(n={"kind": "float", "value": float("inf")}), "not a finite float"),
        (None, {**_cells(), "cells": {}}, "the closure cell `T` was not recorded"),
        # the factory rebinds a parameter the kernel reads, and the record has no digest of the
        # factory's code (a capture taken before such records existed): the recorded value may not be
        # what the edited factory would give (test_hermetic_factory_reads.py has the records)
        (
            ("    @wp.kernel(", "    n = n + 1\n\n    @wp.kernel("),
            _cells(),
            "computes: the capture recorded no value",
        ),
        # a free name the factory computes (a local, not a parameter)
        (
            ("def make(n: int, op, T, flag: bool):", "def make(m, op, T, flag: bool):\n    n = m * 2\n"),
            _cells(),
            "computes: the capture recorded no value",
        ),
        (("    @wp.kernel(", "    def bump():\n        nonlocal n\n\n    @wp.kernel("), _cells(), "nonlocal"),
        # two defs of the qualname: which one made the kernel is not in the text
        (
            ("    return k\n", "    if flag:\n        def k():\n            pass\n    return k\n"),
            _cells(),
            "2 `def k`",
        ),
        # a decorator keyword the factory computes, with no recorded value (a capture taken before
        # such records existed: test_hermetic_decorator_values.py has the records)
        (
            ("@wp.kernel(enable_backward=False)", "@wp.kernel(enable_backward=flag)"),
            _cells(),
            "recorded no value",
        ),
        # the bound name clashes with a module-level name: never shadowed silently
        (("SIZE = 4", "SIZE = 4\nn = 7"), _cells(), "bound more than once"),
    ],
)
def test_what_the_record_cannot_bind_is_refused(
    tmp_path: Path, edit: tuple[str, str] | None, closure: dict[str, Any], reason: str
) -> None:
    text = FACTORY if edit is None else FACTORY.replace(*edit)
    assert text != FACTORY or edit is None
    why = _why(tmp_path, text, closure)
    assert why is not None and reason in why, why


@pytest.mark.slow
def test_the_built_kernel_computes_with_the_recorded_values(tmp_path: Path) -> None:
    import warp as wp

    path = tmp_path / "factory.py"
    path.write_text(FACTORY, encoding="utf-8")
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    got = []
    for flag, n in ((True, 3), (False, 1)):
        closure = _cells(n={"kind": "int", "value": n}, flag={"kind": "bool", "value": flag})
        kernel = hermetic_build.build(FACTORY, str(path), "k", tmp_path, None, closure).kernel
        y = wp.zeros(4, dtype=float, device="cpu")
        wp.launch(kernel, dim=4, inputs=[x, y], device="cpu")
        got.append(y.numpy().tolist())
    assert got == [[2.0 * v + 3 + 4 for v in range(4)], [v + 1.0 + 4 for v in range(4)]]
