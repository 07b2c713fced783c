"""A factory kernel reading a local its factory computes from another workspace module's names
(mujoco-warp 4.0.0's ``IS_ELLIPTIC = cone_type == types.ConeType.ELLIPTIC``,
https://github.com/google-deepmind/mujoco_warp/blob/main/mujoco_warp/_src/constraint.py) is replayed by
``ci --trust`` from its text with the recorded value, clean and hermetic; once the enum it compares
with is edited the record is dropped and the replay says why (WHD069), never a false alarm
(issue #31: no false alarm on correct code). ``test_hermetic_factory_reads.py`` has the decisions.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import CPU_CI_PYPROJECT, capture, ci_results, write

from warp_harness.daemon import findings as F

pytestmark = pytest.mark.slow

TYPES = """
import enum


class ConeType(enum.IntEnum):
    PYRAMIDAL = 0
    ELLIPTIC = 1
"""

CONSTRAINT = """
import warp as wp

import kinds


def make(cone_type, n: int):
    IS_ELLIPTIC = cone_type == kinds.ConeType.ELLIPTIC
    SCALE = float(n) * 2.0

    @wp.kernel(module="unique", enable_backward=False)
    def kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        if wp.static(IS_ELLIPTIC):
            y[i] = x[i] * SCALE
        else:
            y[i] = x[i] - SCALE

    return kernel
"""

RUN = """
import numpy as np
import warp as wp

import constraint
import kinds

x = wp.array(np.arange(8, dtype=np.float32))
for cone in (kinds.ConeType.ELLIPTIC, kinds.ConeType.PYRAMIDAL):
    wp.launch(constraint.make(cone, 3), dim=8, inputs=[x, wp.zeros(8, dtype=float)])
"""


def test_a_computed_local_replays_clean_until_what_it_read_is_edited(tmp_path: Path) -> None:
    write(tmp_path, "kinds.py", TYPES)
    write(tmp_path, "constraint.py", CONSTRAINT)
    write(tmp_path, "run.py", RUN)
    write(tmp_path, "pyproject.toml", CPU_CI_PYPROJECT)
    capture(tmp_path, "run.py", "captured 2 launch(es) of 1 kernel(s)")

    def replayed() -> tuple[int, list[tuple[str, str, str]]]:
        code, results = ci_results(tmp_path, "--no-bench")
        return code, sorted(
            (r["rule"], r["severity"], r["message"])
            for r in results
            if r["location"]["path"].endswith("constraint.py") and r["location"].get("kernel") == "kernel"
        )

    # the kernel edited without changing what it computes: both closures replayed hermetically, clean
    text = (tmp_path / "constraint.py").read_text(encoding="utf-8")
    (tmp_path / "constraint.py").write_text(text.replace("x[i] - SCALE", "-SCALE + x[i]"), encoding="utf-8")
    code, records = replayed()
    assert [(rule, severity) for rule, severity, _ in records] == [(F.REPLAYED, "info")] * 2, records
    assert not [m for _, _, m in records if "not hermetic" in m], records
    assert any("IS_ELLIPTIC=True" in m for _, _, m in records), records
    assert any("IS_ELLIPTIC=False" in m for _, _, m in records), records
    assert code == 0

    # the enum the factory compared with edited: the recorded value may be stale, the record is
    # dropped, and the replay (from an import of the module) says why; no error, no behaviour warning
    kinds = (tmp_path / "kinds.py").read_text(encoding="utf-8")
    (tmp_path / "kinds.py").write_text(kinds.replace("ELLIPTIC = 1", "ELLIPTIC = 2"), encoding="utf-8")
    code, records = replayed()
    rules = [rule for rule, _, _ in records]
    assert F.NOT_HERMETIC in rules, records
    why = [m for rule, _, m in records if rule == F.NOT_HERMETIC]
    assert all("`kernel` reads `IS_ELLIPTIC`" in m and "changed since the capture" in m for m in why), why
    assert not [r for r in records if r[1] == "error"], records
