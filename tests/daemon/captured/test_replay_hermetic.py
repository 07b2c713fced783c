"""The worker that replays and times captured launches builds the kernel from its text alone: the
kernel module's top-level code and the workspace modules it imports never run there (issue #31, as
the contract path: #37 item 1). A `@wp.func` imported from another workspace module is built from
that module's text too. A kernel that cannot be built so (its imported func reads a name its module
binds by running code) is replayed from an import of its module, and every record of its replay says
so, with WHD069 beside them (an error under `--require-hermetic`).

`warp-harness ci --trust` is the entry point. Its compile step imports a module without a contract
(that is how such a module is compiled), so the marker the kernel module's code writes carries the
stack that ran it: none may come from the replay's or the timing's worker code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import CPU_CI_PYPROJECT, capture, ci_results, write

from warp_harness.daemon import findings as F

pytestmark = pytest.mark.slow

HELPER = """
import traceback

import warp as wp

MARKS = {marks!r}


def mark(what):
    with open(MARKS, "a", encoding="utf-8") as f:
        f.write(what + "\\n" + "".join(traceback.format_stack()) + "\\n----\\n")


mark("helper's top level")


@wp.func
def shift(v: float):
    return v + 1.0
"""

CLEAN = """
import numpy as np
import warp as wp

import helper

helper.mark("top-level call")


class Settings:  # a class body runs wherever the module's definitions run
    helper.mark("class body")


SCALE = 2.0


@wp.func
def scaled(v: float):
    return v * SCALE


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = scaled(x[i])
"""

MIXED = """
import numpy as np
import warp as wp

from helper import shift


@wp.kernel
def shifted(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = shift(x[i])
"""

RUNTIME_HELPER = """
import warp as wp

STEP = float(len("ab"))  # bound by running code


@wp.func
def stepped(v: float):
    return v + STEP
"""

LATE = """
import warp as wp

from runtime_helper import stepped


@wp.kernel
def late(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = stepped(x[i])
"""

RUN = """
import numpy as np
import warp as wp

import clean
import late
import mixed

x = wp.array(np.arange(8, dtype=np.float32))
wp.launch(clean.double, dim=8, inputs=[x, wp.zeros(8, dtype=float)])
wp.launch(mixed.shifted, dim=8, inputs=[x, wp.zeros(8, dtype=float)])
wp.launch(late.late, dim=8, inputs=[x, wp.zeros(8, dtype=float)])
"""

PYPROJECT = CPU_CI_PYPROJECT


def _ci(ws: Path, *flags: str) -> tuple[int, list[dict[str, Any]]]:
    code, results = ci_results(ws, *flags)
    return code, [r for r in results if r["rule"].startswith("WHD0")]


def test_replay_and_timing_never_run_the_kernel_modules_code(tmp_path: Path) -> None:
    marks = tmp_path / "marks.log"
    write(tmp_path, "helper.py", HELPER.format(marks=str(marks)))
    write(tmp_path, "clean.py", CLEAN)
    write(tmp_path, "mixed.py", MIXED)
    write(tmp_path, "runtime_helper.py", RUNTIME_HELPER)
    write(tmp_path, "late.py", LATE)
    write(tmp_path, "run.py", RUN)
    write(tmp_path, "pyproject.toml", PYPROJECT)
    capture(tmp_path, "run.py", "captured 3 launch(es) of 3 kernel(s)")
    marks.unlink()

    code, records = _ci(tmp_path)
    clean = [r for r in records if r["location"]["path"] == "clean.py"]
    mixed = [r for r in records if r["location"]["path"] == "mixed.py"]
    late = [r for r in records if r["location"]["path"] == "late.py"]
    assert [(r["rule"], r["location"]["kernel"]) for r in clean] == [(F.REPLAYED, "double")], clean
    assert "not hermetic" not in clean[0]["message"]
    # `shifted` calls a @wp.func imported from the workspace: built from helper.py's text, hermetic
    assert [(r["rule"], r["location"]["kernel"]) for r in mixed] == [(F.REPLAYED, "shifted")], mixed
    assert "not hermetic" not in mixed[0]["message"]
    # the compile step imported clean.py and mixed.py, so helper.py (the marks work in the worker);
    # the replay and the timing ran neither the kernels' modules nor helper.py's top level
    stacks = marks.read_text(encoding="utf-8").split("\n----\n")
    assert any("steps/load.py" in s for s in stacks), stacks
    assert any(s.startswith("helper's top level") for s in stacks), stacks
    assert not [s for s in stacks if "captured/worker_side.py" in s or "benchmark_worker.py" in s], stacks

    # `late` calls a @wp.func that reads a name its module binds by running code: replayed from an
    # import, and marked so
    assert sorted((r["rule"], r["severity"]) for r in late) == [
        (F.NOT_HERMETIC, "warning"),
        (F.REPLAYED, "info"),
    ], late
    (summary,) = [r for r in late if r["rule"] == F.REPLAYED]
    (why,) = [r for r in late if r["rule"] == F.NOT_HERMETIC]
    assert summary["message"].endswith("[not hermetic (WHD069): the worker imported the module]")
    assert why["location"]["kernel"] == "late", why
    assert "workspace module `runtime_helper`: `stepped` reads `STEP`" in why["message"], why
    assert code == 0

    code, records = _ci(tmp_path, "--require-hermetic", "--no-bench")
    assert [(r["rule"], r["severity"]) for r in records if r["rule"] == F.NOT_HERMETIC] == [
        (F.NOT_HERMETIC, "error")
    ]
    assert code == 1
