"""A `@wp.func` or `@wp.struct` defined more than once at a module's top level (issue #31).

Warp registers each `@wp.func` against the name's binding at that point of the module (warp 1.19,
`Module.register_function`): a def of the same signature replaces the one before (a name taken
earlier, `global_func_1 = global_func`, keeps the old one), a def of another signature adds an
overload. A hermetic build runs every definition of such a name, and the statements between them
it needs, in the module's order, so Warp registers them as it does on import; a name also bound
by anything else, and a kernel defined twice (which of its defs a captured launch ran is not in
the capture), are still refused.

The real code: warp-lang's own test of redefinitions
(https://github.com/NVIDIA/warp/blob/main/warp/tests/test_codegen_instancing.py,
`test_global_func_redefine`, `test_global_overload_primary_redefine`,
`test_global_struct_args_redefine`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.daemon import hermetic_build

REDEFINED = """
import warp as wp


@wp.func
def global_func():
    return 17


global_func_1 = global_func


@wp.func
def global_func():
    return 42


# "primary" (first) overload, a "secondary" one, the primary redefined
@wp.func
def po(x: int):
    return x * x


@wp.func
def po(x: float):
    return x * x


@wp.func
def po(x: int):
    return x * x * x


@wp.struct
class GlobalStruct:
    v: float


GlobalStruct1 = GlobalStruct


@wp.struct
class GlobalStruct:
    v: wp.vec2


@wp.kernel
def reads_redefined(a: wp.array(dtype=float)):
    a[0] = float(global_func())
    a[1] = float(global_func_1())
    a[2] = float(po(2))
    a[3] = po(2.0)
    s0 = GlobalStruct()
    s0.v = wp.vec2(5.0, 6.0)
    s1 = GlobalStruct1()
    s1.v = 7.0
    a[4] = s0.v[1] + s1.v
"""


def _why(tmp_path: Path, text: str, kernel: str = "reads_redefined") -> str | None:
    path = tmp_path / "redefined.py"
    path.write_text(text, encoding="utf-8")
    return hermetic_build.kernel_texts(text, str(path), kernel, tmp_path)[0]


@pytest.mark.slow
def test_every_definition_runs_in_order_as_warp_registers_it(tmp_path: Path) -> None:
    import warp as wp

    assert _why(tmp_path, REDEFINED) is None
    path = tmp_path / "redefined.py"
    kernel = hermetic_build.build(REDEFINED, str(path), "reads_redefined", tmp_path).kernel
    a = wp.zeros(5, dtype=float, device="cpu")
    wp.launch(kernel, dim=1, inputs=[a], device="cpu")
    # the replacement, the name kept of the first, the redefined primary overload, the secondary
    # one, the second struct and the first (what Warp computes importing the module)
    assert a.numpy().tolist() == [42.0, 17.0, 8.0, 4.0, 13.0]


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # the name bound by something else than a definition as well
        (
            ("global_func_1 = global_func\n", "global_func_1 = global_func\nglobal_func = 3\n"),
            "bound more than once",
        ),
        # a `@wp.func` redefined as a struct
        (
            (
                "@wp.struct\nclass GlobalStruct:\n    v: float",
                "@wp.func\ndef GlobalStruct():\n    return 1.0",
            ),
            "bound more",
        ),
        # a kernel defined twice: which def a captured launch ran is not in the capture
        (
            "@wp.kernel\ndef reads_redefined(a: wp.array(dtype=float)):\n    a[0] = 1.0\n\n\n",
            "bound more than once",
        ),
    ],
)
def test_a_name_bound_otherwise_is_refused(tmp_path: Path, edit: tuple[str, str] | str, reason: str) -> None:
    text = (
        REDEFINED.replace(*edit)
        if isinstance(edit, tuple)
        else REDEFINED.replace("@wp.kernel\n", edit + "@wp.kernel\n")
    )
    assert text != REDEFINED
    why = _why(tmp_path, text)
    assert why is not None and reason in why, why
