"""The pipeline's steps as functions of typed inputs returning frozen outcomes, with real Warp on the
CPU: a step changes neither its inputs nor the job (only the worker folds an outcome in), and the
worker's result is the fold of the steps' outcomes, record for record."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from test_daemon_worker import BROKEN

from warp_harness.daemon import worker
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.steps import codegen, compile, load, validate

pytestmark = [pytest.mark.slow, pytest.mark.private_kernel_builds]


def _message(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "typed_steps_mod.py"
    path.write_text(BROKEN)
    return {
        "kind": "check",
        "id": 1,
        "path": str(path),
        "display_path": path.name,
        "workspace": str(tmp_path),
        "options": RuntimeOptions(devices=("cpu",), bench=False).to_dict(),
        "seed": 5,
    }


def _same_text(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what differs run to run: times, and a build compiled once then cached."""
    kernels = {
        name: {**k, "compile": {d: "cached" for d in k["compile"]}} for name, k in result["kernels"].items()
    }
    return {**result, "timings": sorted(result["timings"]), "kernels": kernels, "build_keys": None}


def test_each_step_returns_a_frozen_outcome_that_only_the_worker_folds(tmp_path: Path) -> None:
    msg = _message(tmp_path)
    fold = worker._make_fold(msg, lambda **_: None)
    loaded = load.load(fold.spec, fold.progress)
    assert loaded.ok and list(loaded.kernels) == ["good", "bad", "bad2"]
    good = loaded.kernels["good"]
    assert good.contract is not None and good.runnable is good.kernel
    with pytest.raises(dataclasses.FrozenInstanceError):
        good.runnable = None  # type: ignore[misc]
    fold.take_loaded(loaded)
    fold.timings["import_ms"] = 0.0
    worker.check_integrity(fold, Step.IMPORT)  # the worker's own checks between steps fold in too
    worker.check_contracts(fold, Step.IMPORT)

    generated = codegen.run(fold.context(), fold.kernels)
    assert {k: v.codegen for k, v in generated.verdicts.items()} == {
        "good": "ok",
        "bad": "error",
        "bad2": "error",
    }
    assert fold.verdicts == {} and fold.records == []  # nothing reaches the job until the worker folds it
    fold.take(generated)
    assert [r.location.kernel for r in fold.records] == ["bad", "bad2"]

    compiled = compile.run(fold.context(), fold.kernels)
    assert compiled.built is not None and [alias for alias, _ in compiled.built.devices] == ["cpu"]
    isolated = compiled.built.kernels["good"]
    # the module is broken: the good kernel runs as a copy in a module of its own, the load's kernel unchanged
    assert isolated.runnable is not good.kernel and loaded.kernels["good"].runnable is good.kernel
    assert compiled.verdicts["good"].codegen == "ok" and set(compiled.verdicts) == {"good"}
    fold.take(compiled)

    checked = validate.run(fold.context(), fold.kernels, fold.devices)
    assert checked.verdicts["good"].validate == {"cpu": "pass"} and checked.verdicts["good"].compile
    assert fold.verdicts["good"].validate == {}  # the fold has not seen it yet
    fold.take(checked)
    worker.check_integrity(fold, Step.VALIDATE)
    worker.check_contracts(fold, Step.VALIDATE)
    folded = fold.result("ok")
    assert folded["kernels"]["good"]["validate"] == {"cpu": "pass"}

    # the worker's own loop on the same job: the same result, record for record
    whole = worker.run_check_job(msg, lambda **_: None)
    assert _same_text(whole) == _same_text(folded)
