"""A module-level name bound by calling a factory of the same text (issue #31): `X = make(<literals>)`
whose `make` only defines `@wp.func`s, `@wp.struct`s or `@wp.kernel`s and returns them is built by
running `make`'s `def` and that statement in the fresh namespace (``hermetic_factory.product``);
anything else the factory runs is refused with the reason (the replay then imports the module, WHD069).

The real code: warp-lang's own test of instancing, whose kernels read `simple_func_1 =
create_func_simple()`, `SimpleStruct1 = create_struct_simple()`, `closure_func_1 =
create_func_closure(17)`, `fk_closure_func_1, fk_closure_kernel_1 = create_fk_closure(10, 7)`
(https://github.com/NVIDIA/warp/blob/main/warp/tests/test_codegen_instancing.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from warp_harness.daemon import hermetic_build

# the shapes of warp-lang's tests/test_codegen_instancing.py, reduced
PRODUCTS = """
import warp as wp


def create_struct_simple():
    @wp.struct
    class S:
        x: int

    return S


SimpleStruct1 = create_struct_simple()


def create_func_closure(value: int):
    # closure
    @wp.func
    def f():
        return value

    return f


closure_func_1 = create_func_closure(17)
closure_func_2 = create_func_closure(value=42)


def create_func_cond(cond):
    if cond:

        @wp.func
        def f():
            return 100
    else:

        @wp.func
        def f():
            return 200

    return f


cond_func_2 = create_func_cond(False)


def create_func_closure_overload(value: int):
    @wp.func
    def f():
        return value

    @wp.func
    def f(x: int):
        return f() * x

    return f


overloaded_3 = create_func_closure_overload(3)


def create_fk_closure(a, b):
    @wp.func
    def f():
        return a

    @wp.kernel
    def k(a: wp.array(dtype=int)):
        a[0] = f() + b

    return f, k


fk_func_1, fk_kernel_1 = create_fk_closure(10, 7)


@wp.kernel
def reads_products(s: SimpleStruct1, out: wp.array(dtype=int)):
    out[0] = s.x + closure_func_1()
    out[1] = closure_func_2() + cond_func_2()
    out[2] = overloaded_3() + overloaded_3(2)
    out[3] = fk_func_1()
"""


def _why(tmp_path: Path, text: str, kernel: str = "reads_products") -> str | None:
    path = tmp_path / "products.py"
    path.write_text(text, encoding="utf-8")
    return hermetic_build.kernel_texts(text, str(path), kernel, tmp_path)[0]


def test_module_level_products_are_decided_from_the_text(tmp_path: Path) -> None:
    assert _why(tmp_path, PRODUCTS) is None


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # an argument computed by running code: not a literal, a Warp attribute or a module name
        (("create_func_closure(17)", "create_func_closure(int('17'))"), "not a literal"),
        (("create_func_closure(17)", "create_func_closure(print)"), "not a literal"),
        # the factory computes something besides its definitions (it would run in the build)
        (
            (
                "def create_func_closure(value: int):\n",
                "def create_func_closure(value: int):\n    value = value + 1\n",
            ),
            "besides defining",
        ),
        (
            (
                "def create_func_closure(value: int):\n",
                "def create_func_closure(value: int):\n    open('/tmp/x', 'w')\n",
            ),
            "besides defining",
        ),
        # a decorated factory: calling it runs the decorator's wrapper (mujoco-warp's `@cache_kernel`)
        (("def create_func_closure(", "@staticmethod\ndef create_func_closure("), "decorated"),
        # a branch on a value the text does not give as a literal
        (
            ("create_func_cond(False)", "create_func_cond(closure_func_1)"),
            "not on a parameter bound to a literal",
        ),
        # the factory returns something else than the definitions it makes
        (("    return f, k\n", "    return k, f, b\n"), "does not return 2 Warp definitions"),
        (("    return S\n", "    return S()\n"), "does not return the Warp definition"),
        # the nested definition's decorator takes a computed keyword
        (
            (
                "    @wp.func\n    def f():\n        return value",
                "    @wp.func(name=str(value))\n    def f():\n        return value",
            ),
            "besides defining",
        ),
        # a parameter never given
        (("create_func_closure(17)", "create_func_closure()"), "is not given `value`"),
        # a name bound twice by calls: which one the kernel reads is not in the text
        (
            (
                "SimpleStruct1 = create_struct_simple()\n",
                "SimpleStruct1 = create_struct_simple()\nSimpleStruct1 = create_struct_simple()\n",
            ),
            "bound more than once",
        ),
    ],
)
def test_what_the_build_cannot_run_is_refused(tmp_path: Path, edit: tuple[str, str], reason: str) -> None:
    text = PRODUCTS.replace(*edit)
    assert text != PRODUCTS
    why = _why(tmp_path, text)
    assert why is not None and reason in why, why


@pytest.mark.slow
def test_the_products_build_and_compute_what_warp_computes_from_the_text(tmp_path: Path) -> None:
    import warp as wp

    path = tmp_path / "products.py"

    def run(text: str) -> list[int]:
        path.write_text(text, encoding="utf-8")
        built = hermetic_build.build(text, str(path), "reads_products", tmp_path)
        assert built.statements[:2] == ("create_struct_simple", "SimpleStruct1")
        s = built.kernel.adj.args[0].type()
        s.x = 5
        out = wp.zeros(4, dtype=int, device="cpu")
        wp.launch(built.kernel, dim=1, inputs=[s, out], device="cpu")
        return [int(v) for v in out.numpy()]

    # 5 + 17; 42 + 200; 3 + 3 * 2; 10 (as Python and Warp run the module)
    assert run(PRODUCTS) == [22, 242, 9, 10]
    # the edited factory is what the build runs: its new body, its new branch
    edited = PRODUCTS.replace("return 200", "return 300").replace(
        "create_fk_closure(10, 7)", "create_fk_closure(11, 7)"
    )
    assert run(edited) == [22, 342, 9, 11]
    np.testing.assert_equal(run(PRODUCTS), [22, 242, 9, 10])


@pytest.mark.parametrize(
    "rebinding",
    [
        # the factory defined twice (or in a block): the build must not check one `def` and run another
        "\n\ndef create_func_closure(value: int):\n    print(value)\n",
        "\n\nif True:\n    def create_func_closure(value: int):\n        print(value)\n",
    ],
)
def test_a_factory_bound_twice_is_not_run(tmp_path: Path, rebinding: str) -> None:
    text = PRODUCTS.replace(
        "closure_func_1 = create_func_closure(17)", rebinding + "\nclosure_func_1 = create_func_closure(17)"
    )
    why = _why(tmp_path, text)
    assert why is not None and "`closure_func_1`, which the module binds at run time" in why, why
