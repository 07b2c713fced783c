"""daemon/hermetic_contract.py: a contract defined in its kernel's module, taken from the text.

The decision (``why_not``) is text only; the build (``build_module``) is real Warp on the CPU
(kernels decorated, not compiled): the contract's functions are called, the module's other
top-level code (a marker file, patches of numpy and Warp) never runs.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import numpy as np
import pytest

from warp_harness import contract as contract_api
from warp_harness.daemon.hermetic_build import build_module, why_not
from warp_harness.daemon.hermetic_contract import free_names

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "contracts"

MODULE = """
import os

import numpy as np
import warp as wp

from warp_harness.contract import Contract, EdgeCase, Tolerance

SCALE = wp.constant(2.0)
BENCH = int(os.environ.get("WH_TEST_BENCH", "512"))
SIZES = [1, 33, 256]
open(MARKER, "w").write("ran")          # top-level code: runs only on import
np.allclose = lambda *a, **k: True       # a patch of numpy at import
wp.launch = lambda *a, **k: None         # and of Warp


@wp.func
def twice(v: float) -> float:
    return SCALE * v


@wp.kernel
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = twice(x[i])


def make_inputs(n: int, rng: np.random.Generator) -> dict:
    return {"x": rng.standard_normal(n).astype(np.float32), "y": np.empty(n, np.float32)}


def big(n, rng):
    inputs = make_inputs(n, rng)
    inputs["x"] *= np.float32(1e20)
    return inputs


def reference(x, factor=float(SCALE)):
    return {"y": factor * x}


contract = Contract(
    kernel=scale,
    reference=reference,
    inputs=make_inputs,
    outputs=["y"],
    sizes=SIZES,
    bench_size=BENCH,
    tolerance={"cpu": Tolerance(rtol=1e-5, atol=1e-6)},
    edge_cases=[EdgeCase("big", big)],
    dim=lambda n, inputs: n,
)
"""


def _why(text: str, tmp_path: Path) -> str | None:
    text = textwrap.dedent(text)
    return why_not(text, str(tmp_path / "kernels.py"), "kernels", [])


@pytest.fixture()
def module(tmp_path: Path) -> tuple[str, Path, Path]:
    marker = tmp_path / "marker"
    path = tmp_path / "kernels.py"
    text = MODULE.replace("MARKER", repr(str(marker)))
    path.write_text(text, encoding="utf-8")
    return text, path, marker


def test_a_contract_in_the_module_is_hermetic(module: tuple[str, Path, Path], tmp_path: Path) -> None:
    text, path, marker = module
    assert why_not(text, str(path), "kernels", []) is None
    assert not marker.exists()


@pytest.mark.slow
def test_the_contract_is_built_without_the_modules_other_code(module: tuple[str, Path, Path]) -> None:
    import warp as wp

    text, path, marker = module
    allclose, launch = np.allclose, wp.launch
    built = build_module(text, str(path), "kernels_contract_build")
    assert not marker.exists() and np.allclose is allclose and wp.launch is launch
    found = contract_api.discover(vars(built))
    assert [c.label for c in found] == ["scale"]
    c = found[0]
    assert c.kernel is vars(built)["scale"] and c.sizes == (1, 33, 256) and c.benchmark_size == 512
    assert not contract_api.tampered(c)  # sealed when built, as on import
    x = np.arange(4.0)
    np.testing.assert_array_equal(c.reference(x)["y"], 2.0 * x)  # the default from the text
    assert c.edge_cases[0].inputs(3, np.random.default_rng(0))["x"].dtype == np.float32
    # only what the contract reaches is there: no `open`ed marker, no `SIZES` list copy, no patch
    assert {"reference", "make_inputs", "big", "BENCH", "SIZES", "os"} <= set(vars(built))
    assert c.reference.__globals__ is vars(built)


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        # a call of the module's own code at import: a factory
        ("def _f():\n    return 3.0\nFACTOR = _f()\nref = lambda x: {'y': FACTOR * x}\n", "calls `_f(...)`"),
        # a default evaluated at import by a call
        ("def _hook():\n    return 1\ndef ref(x, _h=_hook()):\n    return {'y': x}\n", "calls `_hook(...)`"),
        # a global a function rebinds
        ("K = 2.0\ndef _set():\n    global K\n    K = 3.0\nref = lambda x: {'y': K * x}\n", "rebinds"),
        # bound twice
        ("K = 2.0\nK = 3.0\nref = lambda x: {'y': K * x}\n", "more than once"),
        # left-out code touching what the contract reaches
        ("def ref(x, f=2.0):\n    return {'y': f * x}\nref.__defaults__ = (3.0,)\n", "could change"),
        # a name the text never binds
        ("ref = lambda x: {'y': UNBOUND * x}\n", "never binds"),
        # a workspace import
        ("from helpers import ref\n", "not a library"),
        # a class (its body runs at import)
        ("class R:\n    pass\nref = lambda x: {'y': R and x}\n", "classdef"),
        # a decorator other than the harness's
        ("import functools\n@functools.lru_cache\ndef ref(x):\n    return {'y': x}\n", "decorator"),
        # Warp's device queries differ between the workers (the verdict worker sees no GPU)
        (
            "N = 1 if wp.get_cuda_device_count() else 2\nref = lambda x: {'y': N * x}\n",
            "get_cuda_device_count",
        ),
        # a dunder reached at import
        ("ref = (lambda x: {'y': x}).__class__\n", "__class__"),
    ],
)
def test_what_cannot_be_taken_from_the_text(tmp_path: Path, extra: str, reason: str) -> None:
    text = (
        "import numpy as np\nimport warp as wp\nfrom warp_harness.contract import Contract\n\n"
        "@wp.kernel\ndef k(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n"
        "    y[wp.tid()] = x[wp.tid()]\n\n"
        + extra
        + "\nc = Contract(kernel=k, reference=ref, inputs=lambda n, rng: {}, outputs=['y'], sizes=[1])\n"
    )
    got = _why(text, tmp_path)
    assert got is not None and reason in got, got


@pytest.mark.parametrize(
    "maker",
    [
        "def make():\n    return Contract(kernel=k, reference=ref, inputs=gen, outputs=['y'])\nc = make()\n",
        "C = Contract\nc = C(kernel=k, reference=ref, inputs=gen, outputs=['y'])\n",
    ],
)
def test_a_contract_made_elsewhere_than_a_top_level_statement_is_not_hermetic(
    tmp_path: Path, maker: str
) -> None:
    text = (
        "import warp as wp\nfrom warp_harness.contract import Contract\n\n"
        "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[wp.tid()] = 1.0\n\n"
        "ref = lambda x: x\ngen = lambda n, rng: {}\n"
        "top = Contract(kernel=k, reference=ref, inputs=gen, outputs=['x'])\n" + maker
    )
    got = _why(text, tmp_path)
    assert got is not None and "outside a top-level" in got, got


def test_the_main_guard_and_unreached_code_do_not_count(tmp_path: Path) -> None:
    text = """
    import sys
    import numpy as np
    import warp as wp
    from warp_harness import contract

    @wp.kernel
    def k(x: wp.array(dtype=float)):
        x[wp.tid()] = 1.0

    def run(n: int = 4):
        wp.launch(k, dim=n, inputs=[wp.zeros(n)])

    sys.setrecursionlimit(5000)  # left out: it touches nothing the contract reaches

    @contract.define(k, inputs=lambda n, rng: {"x": np.zeros(n, np.float32)}, outputs=["x"], inplace=["x"])
    def k_reference(x):
        return {"x": np.ones_like(x)}

    if __name__ == "__main__":
        k_reference = None
        run()
    """
    assert _why(text, tmp_path) is None


def test_free_names_follow_python_scopes() -> None:
    tree = ast.parse(
        "def f(a, b=B, *c, d=D, **e):\n"
        "    g = a + G\n"
        "    h = lambda i: i + H + g\n"
        "    return [j * J for j in c if j > K] + [L]\n"
    )
    assert free_names(tree.body[0]) == {"B", "D", "G", "H", "J", "K", "L"}


def test_every_example_is_hermetic() -> None:
    """The 11 modules of examples/contracts (10 with the contract in the module itself). The
    device-sized one, stream_large.py, names a benchmark size per device instead of asking
    Warp how many GPUs there are (an answer that differs between the kernel's worker and the
    verdict worker, which sees no GPU)."""
    from warp_harness.daemon.discovery import contract_siblings

    reasons = {}
    for path in sorted(EXAMPLES.glob("*.py")):
        if path.stem.endswith("_contract"):
            continue
        siblings = [(s.name, s.read_text(encoding="utf-8")) for s in contract_siblings(path)]
        reasons[path.stem] = why_not(path.read_text(encoding="utf-8"), str(path), path.stem, siblings)
    assert len(reasons) == 11
    assert {k: v for k, v in reasons.items() if v is not None} == {}


def test_a_device_query_in_the_contract_is_not_hermetic() -> None:
    text = (EXAMPLES / "stream_large.py").read_text(encoding="utf-8")
    queried = text.replace(
        'N = {"cuda": 1 << 28, "default": 1 << 20}',
        "N = 1 << 28 if wp.get_cuda_device_count() > 0 else 1 << 20",
    )
    assert queried != text
    assert "get_cuda_device_count" in str(why_not(queried, "stream_large.py", "stream_large", []))


def test_the_supervisors_decision_imports_no_warp(tmp_path: Path) -> None:
    """The supervisor decides WHD069 with the same analysis, and never imports Warp for it."""
    import subprocess
    import sys

    path = EXAMPLES / "saxpy.py"
    code = (
        "import sys\nfrom pathlib import Path\nfrom warp_harness.daemon import verdict\n"
        f"p = Path({str(path)!r})\n"
        "print(repr(verdict.why_not_hermetic(p, p.read_text())), 'warp' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "'' False"
