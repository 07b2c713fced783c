from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from warp_harness import contract
from warp_harness.contract import Contract, EdgeCase, Target, Tolerance, define, discover


def _inputs(n: int, rng: np.random.Generator) -> dict:
    return {"x": rng.standard_normal(n), "y": np.empty(n)}


def test_importing_contract_does_not_import_warp() -> None:
    code = "import sys, warp_harness.contract; assert 'warp' not in sys.modules, 'warp imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_contract_defaults_and_validation() -> None:
    c = Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs="y", sizes=[64, 1, 64])
    assert c.outputs == ("y",) and c.sizes == (1, 64)
    assert c.kernel_name == "k" and c.label == "k" and c.benchmark_size == 64
    assert c.tolerance_for("cpu") == Tolerance(1e-4, 1e-5)
    with pytest.raises(ValueError):
        Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs=[])
    with pytest.raises(ValueError):
        Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs=["y"], sizes=[0])
    with pytest.raises(ValueError):
        Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs=["y"], targets=["speed >= 1"])
    with pytest.raises(ValueError):
        Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs=["y"], inplace=["x"])
    with pytest.raises(ValueError):
        Tolerance(rtol=-1)


def test_benchmark_size_per_device() -> None:
    sizes = {"cpu": 1 << 10, "cuda": 1 << 20, "cuda:1": 1 << 22}
    c = Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs="y", sizes=[64], bench_size=sizes)
    assert c.benchmark_size_for("cpu") == 1 << 10
    assert c.benchmark_size_for("cuda:0") == 1 << 20  # its kind
    assert c.benchmark_size_for("cuda:1") == 1 << 22  # exact alias first
    assert c.benchmark_size == 64  # no default: the largest size
    assert c.benchmark_sizes_for(["cpu", "cuda"]) == [1 << 10, 1 << 20, 1 << 22]
    assert c.benchmark_sizes_for(["cuda:0"]) == [1 << 20]
    plain = Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs="y", bench_size=300)
    assert plain.benchmark_size_for("cuda:3") == plain.benchmark_size == 300
    for bad in (0, {"cuda": -1}, {"cpu": 1.5}, {"cpu": True}):
        with pytest.raises(ValueError):
            Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs="y", bench_size=bad)


def test_tolerance_per_device() -> None:
    tol = {"cpu": Tolerance(1e-6, 0), "cuda": Tolerance(1e-3, 1e-3), "cuda:1": Tolerance(1e-2, 0)}
    c = Contract(kernel="k", reference=lambda x: x, inputs=_inputs, outputs=["y"], tolerance=tol)
    assert c.tolerance_for("cpu").rtol == 1e-6
    assert c.tolerance_for("cuda:0").rtol == 1e-3
    assert c.tolerance_for("cuda:1").rtol == 1e-2


@pytest.mark.parametrize(
    ("text", "value", "holds"),
    [
        ("bandwidth_util >= 0.8", 0.9, True),
        ("bandwidth_util >= 0.8", 0.5, False),
        ("latency_us <= 12", 12, True),
        ("gflops > 1e3", 999.0, False),
    ],
)
def test_targets(text: str, value: float, holds: bool) -> None:
    assert Target.parse(text).holds(value) is holds


def test_constraints_and_edge_cases() -> None:
    c = Contract(
        kernel="k",
        reference=lambda x: x,
        inputs=_inputs,
        outputs=["y"],
        sizes=[4, 32],
        constraints=[("same length", lambda a: a["x"].shape == a["y"].shape)],
        edge_cases=[EdgeCase("big", _inputs), EdgeCase("one", _inputs, size=1)],
    )
    assert c.check_constraints({"x": np.zeros(3), "y": np.zeros(3)}) is None
    assert c.check_constraints({"x": np.zeros(3), "y": np.zeros(2)}) == "same length"
    assert c.edge_case_size(c.edge_cases[0]) == 32 and c.edge_case_size(c.edge_cases[1]) == 1


def test_define_and_discover() -> None:
    class FakeKernel:  # stands in for a wp.Kernel: contracts only read .func.__name__
        def func(self) -> None: ...

    @define(FakeKernel(), inputs=_inputs, outputs=["y"])
    def ref(x: np.ndarray) -> np.ndarray:
        return x

    assert isinstance(ref, Contract) and ref.kernel_name == "func"
    other = Contract(kernel="k2", reference=lambda x: x, inputs=_inputs, outputs=["y"])
    found = discover({"a": ref, "b": 3, "__contracts__": [other, ref]})
    assert found == [ref, other]
    assert contract.Contract is Contract
