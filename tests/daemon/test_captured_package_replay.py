"""A kernel in a package module that imports its package relatively (as newton's modules do:
`from ..geometry import ...`) is replayed, not reported as a module that cannot be built (WHD085).
The replay builds the saved module under a name of its own; without its package that import raised
`ImportError: attempted relative import with no known parent package`, and a package below a namespace
package (newton's `_src` has no `__init__.py`) `attempted relative import beyond top-level package` or
`No module named 'newton'`: benchmarks/bench_capture.py counted 12 such false alarms (WHD085) among the
15 kernels newton 1.8.0's `basic_pendulum` launches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from daemon_helpers import FAST, capture

from warp_harness.daemon import findings as F
from warp_harness.daemon.captured.hook import supervisor_call
from warp_harness.daemon.captured.replay import replay_module
from warp_harness.daemon.captured.worker_side import definitions_only
from warp_harness.daemon.supervisor import Supervisor

pytestmark = pytest.mark.slow

HELPERS = """import warp as wp

FACTOR = abs(-2.0)  # bound by a call: the func cannot be built from the text alone


@wp.func
def twice(v: float):
    return v * FACTOR
"""

KERNELS = """import warp as wp

import sim.core.helpers as absolute  # the workspace's package by its absolute name (newton's `import newton`)

from .helpers import twice

assert absolute.twice is twice


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = twice(x[i])
"""

SCRIPT = """import numpy as np
import warp as wp

from sim.core.kernels import double

x = wp.array(np.arange(8, dtype=np.float32))
wp.launch(double, dim=8, inputs=[x, wp.zeros(8, dtype=float)])
"""


def test_a_package_module_with_relative_imports_replays(tmp_path: Path) -> None:
    core = tmp_path / "sim" / "core"
    core.mkdir(parents=True)
    # `sim` is a namespace package (no __init__.py), as newton's `_src` is
    (core / "__init__.py").write_text("", encoding="utf-8")
    (core / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (core / "kernels.py").write_text(KERNELS, encoding="utf-8")
    (tmp_path / "run.py").write_text(SCRIPT, encoding="utf-8")
    capture(tmp_path, "run.py", "captured 1 launch(es) of 1 kernel(s)")
    path = core / "kernels.py"
    # `double` calls a @wp.func of its package that reads a name bound at run time: it cannot be built
    # from the texts, so it is replayed from an import of its module (WHD069 says so:
    # tests/daemon/captured/test_replay_hermetic.py; a func the texts give is built: test_hermetic_imports.py)
    with Supervisor(tmp_path, FAST, warmup=False) as sup:
        out = replay_module(
            tmp_path, path, "sim/core/kernels.py", FAST, supervisor_call(sup), only_changed=False
        )
        assert [r.rule for r in out.records] == [F.REPLAYED, F.NOT_HERMETIC], [r.message for r in out.records]
        path.write_text(KERNELS.replace("twice(x[i])", "twice(x[i]) + 1.0"), encoding="utf-8")
        out = replay_module(
            tmp_path, path, "sim/core/kernels.py", FAST, supervisor_call(sup), only_changed=True
        )
        assert [r.rule for r in out.records] == [F.BEHAVIOUR_CHANGED, F.NOT_HERMETIC]


def test_a_constant_made_from_numpys_type_limits_is_kept() -> None:
    """newton 1.8.0's geometry/inertia.py: `_FLOAT32_EPS = wp.constant(float(np.finfo(np.float32).eps))`,
    used by `validate_and_correct_inertia_kernel`; dropped from the replay's module, the kernel's replay
    raised (WarpCodegenKeyError), a false alarm (WHD085) in benchmarks/bench_capture.py."""
    tree = ast.parse(
        "import numpy as np\nimport warp as wp\n"
        "EPS = wp.constant(float(np.finfo(np.float32).eps))\n"
        "BIG = wp.constant(np.iinfo(np.int32).max)\n"
        "NODES = np.polynomial.legendre.leggauss(32)\n"
    )
    kept = [ast.unparse(s) for s in definitions_only(tree).body]
    assert kept[2:] == [
        "EPS = wp.constant(float(np.finfo(np.float32).eps))",
        "BIG = wp.constant(np.iinfo(np.int32).max)",
    ]  # an arbitrary call (leggauss) still does not run


STRUCT_FROM_A_FACTORY = """import warp as wp

open({marker!r}, "a").write("top\\n")


def create_struct_simple():
    @wp.struct
    class SimpleStruct:
        k: float

    return SimpleStruct


SimpleStruct1 = create_struct_simple()
unused = open({marker!r}, "a").write("unused\\n")


@wp.kernel
def scale(s: SimpleStruct1, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = s.k * x[i]
"""


def test_a_name_the_kernels_read_bound_by_a_factory_is_kept(tmp_path: Path) -> None:
    """warp-lang 1.19's tests/test_codegen_instancing.py: `SimpleStruct1 = create_struct_simple()` at the
    top level, read by its kernels' annotations. The replay's module of definitions left the call out
    (not a constant), every such kernel's build raised NameError and its captured launches got WHD085 on
    correct code (`bench_capture.py --projects warp-test_codegen_instancing`: 30). A binding the module's
    definitions read is kept (the path runs module code anyway: WHD069); one nothing reads still is not."""
    import numpy as np
    import warp as wp

    from warp_harness.daemon.captured.worker_side import build_module

    marker = tmp_path / "ran.txt"
    path = tmp_path / "instancing.py"
    path.write_text(STRUCT_FROM_A_FACTORY.format(marker=str(marker)), encoding="utf-8")
    kept = [ast.unparse(s).splitlines()[0] for s in definitions_only(ast.parse(path.read_text())).body]
    assert "SimpleStruct1 = create_struct_simple()" in kept
    assert not any(line.startswith(("unused", "open(")) for line in kept)
    module = build_module(path)
    s = module.SimpleStruct1()
    s.k = 3.0
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(module.scale, dim=4, inputs=[s, x, y], device="cpu")
    assert y.numpy().tolist() == [0.0, 3.0, 6.0, 9.0]
    assert not marker.exists()  # the module's other top-level statements did not run


ANNOTATED_BY_A_FACTORY = """import warp as wp


def create_func_closure_nonoverload(dtype, value):
    @wp.func
    def f(x: dtype):
        return x * value

    return f


closure_func_nonoverload_1 = create_func_closure_nonoverload(int, 2)
closure_func_nonoverload_2 = create_func_closure_nonoverload(float, 2.0)


@wp.kernel
def apply(i: wp.array(dtype=int), f: wp.array(dtype=float)):
    t = wp.tid()
    i[t] = closure_func_nonoverload_1(i[t])
    f[t] = closure_func_nonoverload_2(f[t])
"""


def test_a_factory_annotating_by_its_parameter_builds(tmp_path: Path) -> None:
    """warp-lang 1.19's tests/test_codegen_instancing.py, `create_func_closure_nonoverload(dtype, value)`:
    `def f(x: dtype)` inside the factory. The module of definitions was compiled with the harness's own
    `from __future__ import annotations`, so `dtype` became a string Warp evaluated where the factory's
    parameter is not bound: NameError, WHD085 on correct code. Compiled with the module's own flags."""
    import numpy as np
    import warp as wp

    from warp_harness.daemon.captured.worker_side import build_module

    path = tmp_path / "annotated.py"
    path.write_text(ANNOTATED_BY_A_FACTORY, encoding="utf-8")
    module = build_module(path)
    i = wp.array(np.array([1, 2, 3], dtype=np.int32), device="cpu")
    f = wp.array(np.array([0.5, 1.5, 2.5], dtype=np.float32), device="cpu")
    wp.launch(module.apply, dim=3, inputs=[i, f], device="cpu")
    assert i.numpy().tolist() == [2, 4, 6]
    assert f.numpy().tolist() == [1.0, 3.0, 5.0]
