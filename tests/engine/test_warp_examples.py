"""The proof that the rules don't cry wolf: Warp's own shipped examples compile and run, so no
rule may report an error or a warning on them."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import pytest

from warp_harness.engine import check_paths
from warp_harness.model.module import build_model
from warp_harness.record import Severity


def _examples_dir() -> Path:
    spec = find_spec("warp")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "examples"


@pytest.mark.parametrize("target", ["sm_86", "sm_90", "cpu"])
def test_no_error_or_warning_on_warps_examples(target: str) -> None:
    folder = _examples_dir()
    results = check_paths([folder], {"target": target})
    assert len(results) >= 80
    loud = [
        f"{r.location.path}:{r.location.line} {r.rule} {r.message}"
        for f in results
        for r in f.records
        if r.severity in (Severity.ERROR, Severity.WARNING)
    ]
    assert loud == []


def test_the_examples_tree_really_holds_kernels() -> None:
    kernels = 0
    launches = 0
    for file in _examples_dir().rglob("*.py"):
        model = build_model(file.read_text(encoding="utf-8"), str(file))
        kernels += sum(1 for k in model.kernels if k.is_kernel)
        launches += len(model.launches)
    # about 170 @wp.kernel definitions and hundreds of launches: the model must see them all
    assert kernels >= 150
    assert launches >= 150


def test_no_false_positive_on_warps_own_test_suite() -> None:
    """Warp's test suite is a second, larger corpus (270 files) of kernels Warp compiles. It also holds
    kernels that are wrong on purpose (kernels returning values, unknown builtins, block_dim=1025,
    oversized tiles, rank folding...), so only the rules with no deliberate counterpart there are held
    to zero findings."""
    folder = _examples_dir().parent / "tests"
    rules = ["WH001", "WH002", "WH003", "WH009", "WH010", "WH011", "WH012", "WH014"]
    results = check_paths([folder], {"target": "sm_90", "select": rules})
    assert len(results) >= 200
    loud = [
        f"{r.location.path}:{r.location.line} {r.rule} {r.message}"
        for f in results
        for r in f.records
        if r.severity in (Severity.ERROR, Severity.WARNING)
    ]
    assert loud == []
