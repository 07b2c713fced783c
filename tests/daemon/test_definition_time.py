"""What Python runs when a Warp definition's statement runs (``daemon/definition_time.py``): a hermetic
build runs a ``def``/``class`` statement only when its annotations, defaults and (a struct's) body
run no code of the module; otherwise the kernel that reads it is not hermetic, with the reason.

The hole it closes: a build runs a func's ``def`` in the process that launches and times kernels, and
Python evaluates the default ``exec(PATCH)`` right there (builtins and the module's constants were all
that a build checked a definition reads).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from warp_harness.daemon import definition_time, hermetic_build
from warp_harness.daemon.hermetic_contract import NotHermetic

ALIASES = {"wp"}

# what real code writes where Python evaluates it (newton, mujoco-warp, warp-lang's tests and fem)
INERT = [
    "def f(a: wp.array(dtype=float), b: wp.array2d(dtype=wp.vec3), c: int = 3) -> float: pass",
    "def f(m: wp.types.matrix(shape=(3, 3), dtype=wp.float32), v: wp.types.vector(length=6, dtype=float)):\n"
    "    pass",
    "def f(a: wp.indexedarray(dtype=float), b: wp.fabricarray(dtype=float), t: wp.Tile[float, 8]): pass",
    "def f(x: Any, y: float = -1.0e-6, z: wp.vec3 = wp.vec3(0.0, 0.0, 1.0), w: MyStruct = None): pass",
    "def f(a: wp.array(dtype=vec10f, ndim=2), n: int = N * 2): pass",
    "class S:\n    '''doc'''\n    x: wp.vec3\n    y: wp.array(dtype=float)\n    z: float = 0.5\n",
    "class S:\n    x: float\n\n    def to(self, device):\n        return self\n",
]
RUNS_CODE = [
    ("def f(x: float = exec(PATCH) or 1.0): pass", "exec(PATCH) or 1.0"),
    ("def f(x: patch()): pass", "patch()"),
    ("def f(x) -> __import__('os').system('true'): pass", "__import__('os')"),
    ("def f(x: float = wp.launch(k, dim=1)): pass", "wp.launch(k, dim=1)"),
    ("def f(x=[i for i in range(3)]): pass", "[i for i in range(3)]"),
    ("def f(x=(lambda: 1)): pass", "lambda: 1"),
    ("def f(x=f'{y}'): pass", "f'{y}'"),
    ("class S:\n    x: float\n    open('m', 'w')\n", "open('m', 'w')"),
    ("class S:\n    x: float = patch()\n", "patch()"),
    ("class S:\n    x: float\n\n    def __class_getitem__(cls, k):\n        return k\n", "__class_getitem__"),
    ("class S:\n    x: float\n\n    def m(self, a=patch()):\n        return a\n", "patch()"),
]


def _definition(text: str) -> ast.FunctionDef | ast.ClassDef:
    node = ast.parse(text).body[0]
    assert isinstance(node, ast.FunctionDef | ast.ClassDef)
    return node


@pytest.mark.parametrize("text", INERT)
def test_what_real_definitions_evaluate_runs_no_code(text: str) -> None:
    assert definition_time.runs_code(_definition(text), ALIASES) is None


@pytest.mark.parametrize(("text", "shown"), RUNS_CODE)
def test_code_in_a_signature_or_a_struct_body_is_found(text: str, shown: str) -> None:
    why = definition_time.runs_code(_definition(text), ALIASES)
    assert why is not None and shown in why


TOP = """
import warp as wp


@wp.func
def f(x: int, unused: int = {default}):
    return x + 1


@wp.struct
class S:
    x: {field}


@wp.kernel
def k(s: S, out: wp.array(dtype=int)):
    out[0] = f(s.x)
"""

PRODUCT = """
import warp as wp


def make(value: int):
    @wp.func
    def f(x: int, unused: int = {default}):
        return x + value

    return f


g = make(3)


@wp.kernel
def k(out: wp.array(dtype=int)):
    out[0] = g(1)
"""


def _marker_code(marker: Path) -> str:
    return f"(open({str(marker)!r}, 'w').close() or 1)"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (TOP.format(default="{code}", field="int"), "`f`'s signature"),
        (TOP.format(default="1", field="{code} and int"), "`S`'s body"),
        (PRODUCT.format(default="{code}"), "`f`'s signature"),
    ],
    ids=["func default", "struct field", "func made by a module-level factory call"],
)
def test_the_build_refuses_a_definition_that_runs_code_and_runs_none_of_it(
    tmp_path: Path, text: str, where: str
) -> None:
    marker = tmp_path / "MARKER"
    source = text.replace("{code}", _marker_code(marker))
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    why = hermetic_build.kernel_texts(source, str(path), "k", tmp_path)[0]
    assert why is not None and where in why and "open(" in why
    with pytest.raises(NotHermetic, match="which Python runs when the"):
        hermetic_build.build(source, str(path), "k", tmp_path)
    assert not marker.exists()


@pytest.mark.slow
def test_inert_signatures_and_struct_bodies_still_build_and_compute(tmp_path: Path) -> None:
    import warp as wp

    source = TOP.format(default="-1", field="int") + "\n\nFIELD_DOC = 1\n"
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert hermetic_build.kernel_texts(source, str(path), "k", tmp_path)[0] is None
    built = hermetic_build.build(source, str(path), "k", tmp_path)
    s = built.kernel.adj.args[0].type()
    s.x = 41
    out = wp.zeros(1, dtype=int, device="cpu")
    wp.launch(built.kernel, dim=1, inputs=[s, out], device="cpu")
    np.testing.assert_equal(out.numpy(), [42])
