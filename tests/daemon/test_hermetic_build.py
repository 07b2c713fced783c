"""daemon/hermetic_build.py: a kernel built from its module's text without running the module.

Real Warp on the CPU: the built kernel is launched and compared with numpy; the module's
top-level code (a marker file, a patch of numpy) never runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from warp_harness.daemon.hermetic_build import NotHermetic, build

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
