"""Kernels made inside a function (factories) are replayed from their text, built from the closure
record the capture took (issue #31): the values the factory closed over (ints, a `@wp.func` of the
module) bind the kernel's free names, the kernel is built as if at the module's top level, and no
code of the module runs in the replay's or the timing's worker. A `@wp.func` the factory makes
beside its kernel is recorded with its own closure and built beside the kernel (warp-lang's
`create_fk_closure`, https://github.com/NVIDIA/warp/blob/main/warp/tests/test_codegen_instancing.py).

mujoco-warp makes most of its kernels so (`@cache_kernel` factories closing over ints, bools,
types and funcs: https://github.com/google-deepmind/mujoco_warp/blob/main/mujoco_warp/_src/smooth.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import CPU_CI_PYPROJECT, capture, ci_results, write

from warp_harness.capture.store import CaptureStore, KernelIndex
from warp_harness.daemon import findings as F
from warp_harness.daemon.captured.benchmark_baselines import TimingStore

pytestmark = pytest.mark.slow

FACTORY = """
import traceback

import warp as wp

MARKS = {marks!r}


def mark(what):
    with open(MARKS, "a", encoding="utf-8") as f:
        f.write(what + "\\n" + "".join(traceback.format_stack()) + "\\n----\\n")


mark("factory's top level")


class Settings:  # a class body runs wherever the module's definitions run (an import of them)
    mark("class body")


@wp.func
def twice(v: float):
    return 2.0 * v


def make(n: int, op):
    @wp.kernel
    def shifted(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = op(x[i]) + float(n)

    return shifted
"""

HELPERS = """
import warp as wp


@wp.func
def thrice(v: float):
    return 3.0 * v
"""

LOCAL = """
import warp as wp


def make_local(n: int):
    @wp.func
    def inner(v: float):
        return v + float(n)

    @wp.kernel
    def local(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = inner(x[i])

    return local
"""

RUN = """
import numpy as np
import warp as wp

import factory
import helpers
import local_factory

x = wp.array(np.arange(8, dtype=np.float32))
y = wp.zeros(8, dtype=float)
wp.launch(factory.make(1, factory.twice), dim=8, inputs=[x, y])
assert y.numpy().tolist() == [2.0 * v + 1.0 for v in range(8)]
wp.launch(factory.make(5, factory.twice), dim=8, inputs=[x, wp.zeros(8, dtype=float)])
wp.launch(factory.make(2, helpers.thrice), dim=8, inputs=[x, wp.zeros(8, dtype=float)])
wp.launch(local_factory.make_local(3), dim=8, inputs=[x, wp.zeros(8, dtype=float)])
"""

PYPROJECT = CPU_CI_PYPROJECT


def _ci(ws: Path, *flags: str) -> tuple[int, list[dict[str, Any]]]:
    code, results = ci_results(ws, *flags)
    return code, [r for r in results if r["location"]["path"].endswith("factory.py")]


def test_factory_kernels_replay_from_their_closure_records(tmp_path: Path) -> None:
    marks = tmp_path / "marks.log"
    write(tmp_path, "factory.py", FACTORY.format(marks=str(marks)))
    write(tmp_path, "local_factory.py", LOCAL)
    write(tmp_path, "helpers.py", HELPERS)
    write(tmp_path, "run.py", RUN)
    write(tmp_path, "pyproject.toml", PYPROJECT)
    capture(tmp_path, "run.py", "captured 4 launch(es) of 2 kernel(s)")

    # the closure records are data in the signed index: two launches of `shifted`, one per closure
    (index,) = [
        i for i in CaptureStore(tmp_path).indexes() if isinstance(i, KernelIndex) and i.name == "shifted"
    ]
    closures = sorted(json.dumps(x["closure"], sort_keys=True) for x in index.launches)
    assert [json.loads(c)["cells"] for c in closures] == [
        {"n": {"kind": "int", "value": 1}, "op": {"kind": "func", "file": "factory.py", "qualname": "twice"}},
        {
            "n": {"kind": "int", "value": 2},
            "op": {"kind": "func", "file": "helpers.py", "qualname": "thrice"},
        },
        {"n": {"kind": "int", "value": 5}, "op": {"kind": "func", "file": "factory.py", "qualname": "twice"}},
    ]

    # an edit of the file elsewhere: every captured launch is replayed (ci replays them all)
    text = (tmp_path / "factory.py").read_text(encoding="utf-8")
    (tmp_path / "factory.py").write_text(text + "\n# edited\n", encoding="utf-8")
    marks.unlink()
    code, records = _ci(tmp_path)
    shifted = [r for r in records if r["location"]["kernel"] == "shifted"]
    local = [r for r in records if r["location"]["kernel"] == "local"]
    # the three closures of `shifted` replayed hermetically, their outputs the captured ones
    assert sorted((r["rule"], r["severity"]) for r in shifted) == [(F.REPLAYED, "info")] * 3, shifted
    said = sorted(r["message"] for r in shifted)
    # the func of another workspace module is built from helpers.py's text
    for closure, message in zip(["n=1, op=twice", "n=2, op=thrice", "n=5, op=twice"], said, strict=True):
        assert f"closing over {closure})" in message, said
    assert not [r for r in shifted if "not hermetic" in r["message"]], shifted
    # the func made inside the factory is built from the text too, with its own recorded closure
    # (`n=3`): replayed hermetically, its outputs the captured ones
    assert [(r["rule"], r["severity"]) for r in local] == [(F.REPLAYED, "info")], local
    assert "closing over inner=make_local.<locals>.inner)" in local[0]["message"], local
    # every closure timed (the timing path builds them from the records too: no WHD069 above)
    key = TimingStore.kernel_key("factory.py", "shifted")
    assert all(TimingStore(tmp_path).has(key, str(x["id"]), index.digest) for x in index.launches)
    # the compile step imports factory.py (that is how a module without a contract is compiled);
    # the replay and the timing of `shifted` never ran its top level, not even its class body
    stacks = marks.read_text(encoding="utf-8").split("\n----\n")
    assert any("steps/load.py" in s for s in stacks), stacks
    assert any(s.startswith("class body") for s in stacks), stacks
    assert not [s for s in stacks if "captured/worker_side.py" in s or "benchmark_worker.py" in s], stacks
    assert code == 0

    # an off-by-one in the nested kernel: each closure's replay flags it
    (tmp_path / "factory.py").write_text(
        text.replace("y[i] = op(x[i]) + float(n)", "y[i] = op(x[i + 1]) + float(n)"), encoding="utf-8"
    )
    code, records = _ci(tmp_path, "--no-bench")
    flagged = [r for r in records if r["location"]["kernel"] == "shifted" and r["severity"] != "info"]
    assert [r["rule"] for r in flagged if r["rule"] == F.REPLAY_BOUNDS] == [F.REPLAY_BOUNDS] * 3, records
    assert not [r for r in flagged if r["rule"] == F.NOT_HERMETIC], flagged
    assert code == 1
