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

FACTOR = float("2.0")  # bound by a call: the func cannot be built from the text alone


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
