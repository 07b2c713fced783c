"""daemon/hermetic_build.py: a kernel built from its module's text without running the module.

Real Warp on the CPU: the built kernel is launched and compared with numpy; the module's
top-level code (a marker file, a patch of numpy) never runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from warp_harness.daemon.hermetic_build import NotHermetic, build, why_not

MODULE = """
import numpy as np
import warp as wp

SCALE = wp.constant(3.0)
OFFSET = 0.5 * 2
UNUSED = open(MARKER, "w").write("ran")   # top-level code with a side effect
np.allclose = lambda *a, **k: True          # a patch at import

@wp.struct
class Pair:
    a: float
    b: float

@wp.func
def combine(p: Pair) -> float:
    return p.a * SCALE + p.b + OFFSET

@wp.kernel
def apply(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    p = Pair()
    p.a = x[i]
    p.b = float(i)
    y[i] = combine(p)

def make(k):
    @wp.kernel
    def made(x: wp.array(dtype=float)):
        x[wp.tid()] = k
    return made

made = make(2.0)

@wp.kernel
def reads_runtime(x: wp.array(dtype=float)):
    x[wp.tid()] = RUNTIME_VALUE

RUNTIME_VALUE = float(np.random.rand())
"""


@pytest.fixture()
def module(tmp_path: Path) -> tuple[str, Path, Path]:
    marker = tmp_path / "marker"
    path = tmp_path / "kernels.py"
    text = MODULE.replace("MARKER", repr(str(marker)))
    path.write_text(text, encoding="utf-8")
    return text, path, marker


@pytest.mark.slow
def test_a_module_level_kernel_is_built_without_running_the_module(module: tuple[str, Path, Path]) -> None:
    import warp as wp

    text, path, marker = module
    allclose = np.allclose
    built = build(text, str(path), "apply")
    assert not marker.exists() and np.allclose is allclose  # nothing of the module's own code ran
    assert built.statements == ("SCALE", "OFFSET", "Pair", "combine", "apply")
    x = np.arange(5, dtype=np.float32)
    xa = wp.array(x, dtype=float, device="cpu")
    ya = wp.zeros(5, dtype=float, device="cpu")
    wp.launch(built.kernel, dim=5, inputs=[xa, ya], device="cpu")
    np.testing.assert_allclose(ya.numpy(), 3.0 * x + np.arange(5) + 1.0)


def test_kernels_made_at_run_time_are_not_hermetic(module: tuple[str, Path, Path]) -> None:
    text, path, marker = module
    with pytest.raises(NotHermetic, match="factory"):
        build(text, str(path), "made")
    with pytest.raises(NotHermetic, match="RUNTIME_VALUE"):
        build(text, str(path), "reads_runtime")
    assert not marker.exists()


# ---------------------------------------------------------------- why_not: the decision, text only

SIBLING = "import numpy as np\nfrom kernels import apply\n"
RUNTIME_KERNEL = MODULE[MODULE.index("@wp.kernel\ndef reads_runtime") :]


def _clean(text: str) -> str:
    """The module less its factory and its kernel reading a run-time value."""
    return text.split("def make(k):")[0]


def test_a_module_level_kernel_with_a_sibling_contract_is_hermetic(module: tuple[str, Path, Path]) -> None:
    text, path, _ = module
    assert why_not(_clean(text), str(path), "kernels", [("kernels_contract.py", SIBLING)]) is None


def test_importing_the_harness_does_not_stop_a_hermetic_build(module: tuple[str, Path, Path]) -> None:
    """A build runs none of the module's imports: one of the harness (to patch it) never runs."""
    text, path, _ = module
    text = "import warp_harness.daemon.comparison as cmp\ncmp.within = None\n" + _clean(text)
    assert why_not(text, str(path), "kernels", [("kernels_contract.py", SIBLING)]) is None


@pytest.mark.parametrize(
    ("case", "contract", "reason"),
    [
        ("clean", None, "not in a sibling"),
        ("whole", SIBLING, "factory"),
        ("clean", SIBLING + "from kernels import UNUSED\n", "imports `UNUSED`"),
        ("clean", "import kernels\nk = kernels.apply\nh = kernels.make\n", "reads `make`"),
        ("runtime", SIBLING, "RUNTIME_VALUE"),
        ("settings", SIBLING, "set_module_options"),
        ("config", SIBLING, "wp.config.mode"),
    ],
)
def test_why_a_module_is_not_hermetic(
    module: tuple[str, Path, Path], case: str, contract: str | None, reason: str
) -> None:
    text, path, marker = module
    text = {
        "whole": text,
        "clean": _clean(text),
        "runtime": _clean(text) + RUNTIME_KERNEL,
        "settings": _clean(text) + "\nwp.set_module_options({'fast_math': True})\n",
        "config": _clean(text) + "\nwp.config.mode = 'debug'\n",
    }[case]
    contracts = [("kernels_contract.py", contract)] if contract is not None else []
    got = why_not(text, str(path), "kernels", contracts)
    assert got is not None and reason in got, got
    assert not marker.exists()


def test_the_decision_imports_no_warp() -> None:
    """The supervisor runs ``why_not`` (docs/reliability.md): it never imports Warp."""
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from warp_harness.daemon import verdict\n"
        f"t = {MODULE!r}\n"
        "r = verdict.not_hermetic(Path('/nonexistent/kernels.py'), t.replace('MARKER', \"'m'\") "
        "+ '\\nfrom warp_harness import contract\\ncontract.define(apply)\\n', {'apply': {'contract': 'c'}}, "
        "'kernels.py', {}, False)\n"
        "assert [x.rule for x in r] == ['WHD069'], r\n"
        "assert 'warp' not in sys.modules, 'warp imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_literal_module_options_apply_to_the_captured_build(tmp_path: Path) -> None:
    """newton sets `wp.set_module_options({"enable_backward": False})` at the top of most kernel
    modules (885 of its 1664 kernels): the captured path's build runs that statement, of literals
    only, in the fresh namespace, so the options are the kernel's own module's; options from a
    name bound by running code, or ``wp.config`` set at the top, still refuse (a name bound once to
    a literal dict does not: test_hermetic_imports.py)."""
    from warp_harness.daemon.captured import hermetic

    text = (
        "import warp as wp\n"
        'wp.set_module_options({"enable_backward": False, "max_unroll": 3})\n'
        "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[wp.tid()] = 1.0\n"
    )
    path = tmp_path / "opts.py"
    path.write_text(text, encoding="utf-8")
    assert hermetic.why_not(text, str(path), "k") is None
    built = build(text, str(path), "k")
    assert built.kernel.module.options["enable_backward"] is False
    assert built.kernel.module.options["max_unroll"] == 3
    # the contract path (its module is named after the file, options would outlive an edit) still refuses
    assert "set_module_options" in (why_not(text, str(path), "opts", [("opts_contract.py", "")]) or "")
    for line in (
        "OPTS = dict(enable_backward=False)\nwp.set_module_options(OPTS)",
        'wp.set_module_options({"enable_backward": bool(len("a"))})',
        "wp.config.mode = 'debug'",
    ):
        other = text.replace('wp.set_module_options({"enable_backward": False, "max_unroll": 3})', line)
        assert hermetic.why_not(other, str(path), "k") is not None


def test_module_options_set_inside_a_function_do_not_refuse(tmp_path: Path) -> None:
    """A call in a function's body runs when it is called, not at import (newton's
    `solvers/solver.py`); one in a decorator or a default runs at import and still refuses."""
    from warp_harness.daemon.captured import hermetic

    kernel = "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[wp.tid()] = 1.0\n"
    inside = "import warp as wp\ndef later(opts, m):\n    wp.set_module_options(opts, module=m)\n" + kernel
    at_import = "import warp as wp\ndef later(m=wp.set_module_options({}, module='x')):\n    pass\n" + kernel
    assert hermetic.why_not(inside, str(tmp_path / "a.py"), "k") is None
    assert "set_module_options" in (hermetic.why_not(at_import, str(tmp_path / "b.py"), "k") or "")


# ---------------------------------------------------------------- a library's star import

# warp-lang's own tests take their helpers by a star import and call Warp builtins bare, e.g.
# https://github.com/NVIDIA/warp/blob/main/warp/tests/test_operators.py (`from
# warp.tests.unittest_utils import *`, `expect_eq(...)` in the kernels): their replays carried WHD069
STAR = """
import warp as wp
from {module} import *

@wp.kernel
def k(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    {body}
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "body", "expected"),
    [
        # `expect_eq` is not bound by the star import: Warp's codegen finds its builtin, as after the import
        ("warp.tests.unittest_utils", "expect_eq(x[i], x[i])\n    y[i] = x[i]", [1.0, 2.0]),
        ("math", "y[i] = x[i] * pi", [np.pi, 2 * np.pi]),  # `pi` is bound from the module
    ],
)
def test_a_library_star_import_builds(tmp_path: Path, module: str, body: str, expected: list[float]) -> None:
    import warp as wp

    from warp_harness.daemon.captured import hermetic

    text = STAR.format(module=module, body=body)
    path = tmp_path / "ops.py"
    path.write_text(text, encoding="utf-8")
    assert hermetic.why_not(text, str(path), "k") is None
    assert why_not(text, str(path), "ops", [("ops_contract.py", "")]) is None
    built = build(text, str(path), "k")
    x = wp.array([1.0, 2.0], dtype=float, device="cpu")
    y = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(built.kernel, dim=2, inputs=[x, y], device="cpu")
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)


def test_a_star_import_binds_no_name_of_the_workspace_or_of_running_code(tmp_path: Path) -> None:
    from warp_harness.daemon.captured import hermetic

    kernel = "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[wp.tid()] = HELPER\n"
    (tmp_path / "helpers.py").write_text("HELPER = 1.0\n", encoding="utf-8")
    for head in (
        "import warp as wp\nfrom helpers import *\n",  # a workspace module's star import
        "import warp as wp\nfrom math import *\nfrom helpers import *\n",  # two: which binds it?
        "import warp as wp\nfrom math import *\nHELPER = float(len('ab'))\n",  # bound by running code
        # bound by unpacking a factory's result: warp-lang's test_codegen_instancing.py
        # (`fk_closure_func_1, fk_closure_kernel_1 = create_fk_closure(10, 7)`) failed Warp's codegen
        "import warp as wp\nfrom math import *\nHELPER, OTHER = divmod(3, 2)\n",
        "import warp as wp\nfrom math import *\nfor HELPER in range(2):\n    pass\n",
    ):
        text = head + kernel
        path = tmp_path / "ops.py"
        path.write_text(text, encoding="utf-8")
        assert "HELPER" in (hermetic.why_not(text, str(path), "k") or ""), head


@pytest.mark.slow
def test_an_operator_on_a_struct_reaches_the_function_of_its_name(tmp_path: Path) -> None:
    """Warp resolves `a + b` on structs to the module's `add` (warp-lang's test_operators.py
    `test_operators_overload`, linked above): the build includes the functions an operator calls
    although the kernel's text never names them (it failed Warp's codegen once its star import
    was followed)."""
    import warp as wp

    text = (
        "import warp as wp\n\n"
        "@wp.struct\nclass Complex:\n    real: float\n    imag: float\n\n"
        "@wp.func\ndef add(a: Complex, b: Complex) -> Complex:\n"
        "    return Complex(a.real + b.real, a.imag + b.imag)\n\n"
        "@wp.func\ndef mul(a: Complex, b: Complex) -> Complex:\n"
        "    return Complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real)\n\n"
        "@wp.kernel\ndef k(out: wp.array(dtype=float)):\n"
        "    a = Complex(1.0, 2.0)\n    b = Complex(3.0, 4.0)\n"
        "    c = a + b\n    d = a * b\n"
        "    out[0] = c.real\n    out[1] = c.imag\n    out[2] = d.real\n    out[3] = d.imag\n"
    )
    path = tmp_path / "complex_ops.py"
    path.write_text(text, encoding="utf-8")
    built = build(text, str(path), "k")
    assert {"add", "mul"} <= set(built.statements)
    out = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(built.kernel, dim=1, inputs=[out], device="cpu")
    np.testing.assert_allclose(out.numpy(), [4.0, 6.0, -5.0, 10.0])


@pytest.mark.slow
def test_the_build_compiles_with_the_modules_own_future_flags(module: tuple[str, Path, Path]) -> None:
    """The build compiled the module's statements inheriting this harness's `from __future__ import
    annotations`: every annotation became a string that Warp evaluates later in another scope (the
    definitions path failed so on warp-lang's test_codegen_instancing: `def f(x: dtype)` in a factory,
    NameError: dtype). A module without the future import keeps its annotations evaluated."""
    text, path, _marker = module
    built = build(text, str(path), "apply")
    annotations = built.kernel.func.__annotations__
    assert annotations and not any(isinstance(v, str) for v in annotations.values())
