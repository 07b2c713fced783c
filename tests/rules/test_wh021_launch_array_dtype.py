from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes

KERNELS = """
import numpy as np
import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s


@wp.kernel
def advect(p: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    p[i] = p[i] + v[i] * dt


@wp.kernel
def count(flags: wp.array(dtype=int)):
    i = wp.tid()
    flags[i] = flags[i] + 1
"""

# every launch Warp refuses, each tried on its own; run() raises with every message
BAD = (
    KERNELS
    + """

def run():
    wp.set_device("cpu")
    n = 8
    samples = np.zeros(n)
    launches = [
        lambda: wp.launch(scale, dim=n, inputs=[samples, 2.0]),
        lambda: wp.launch(scale, dim=n, inputs=[np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]), 2.0]),
        lambda: wp.launch(scale, dim=n, inputs=[np.linspace(0.0, 1.0, n), 2.0]),
        lambda: wp.launch(scale, dim=n, inputs=[wp.array(np.zeros(n), dtype=wp.float64), 2.0]),
        lambda: wp.launch(scale, dim=n, inputs=[wp.zeros(n, dtype=wp.float64), 2.0]),
        lambda: wp.launch(scale, dim=n, inputs=[wp.zeros(n, dtype=wp.vec3), 2.0]),
        lambda: wp.launch(scale, dim=n, inputs=[wp.array(np.random.rand(n)), 2.0]),
        lambda: wp.launch(advect, dim=n, inputs=[np.zeros((n, 3)), np.zeros((n, 3), dtype=np.float32), 0.1]),
        lambda: wp.launch(count, dim=n, inputs=[wp.zeros(n)]),
    ]
    failures = []
    for launch in launches:
        try:
            launch()
        except RuntimeError as exc:
            failures.append(str(exc))
    raise RuntimeError(f"{len(failures)} launches failed: " + " | ".join(failures))
"""
)

GOOD = (
    KERNELS
    + """

def run():
    wp.set_device("cpu")
    n = 8
    samples = np.zeros(n, dtype=np.float32)
    wp.launch(scale, dim=n, inputs=[samples, 2.0])
    wp.launch(scale, dim=n, inputs=[np.array([0.0] * n, dtype=np.float32), 2.0])
    wp.launch(scale, dim=n, inputs=[np.linspace(0.0, 1.0, n).astype(np.float32), 2.0])
    wp.launch(scale, dim=n, inputs=[wp.array(np.zeros(n), dtype=float), 2.0])
    wp.launch(scale, dim=n, inputs=[wp.zeros(n, dtype=wp.float32), 2.0])
    wp.launch(scale, dim=n, inputs=[wp.zeros(n), 2.0])
    points = np.zeros((n, 3), dtype=np.float32)
    wp.launch(advect, dim=n, inputs=[wp.array(np.zeros((n, 3)), dtype=wp.vec3), points, 0.1])
    wp.launch(count, dim=n, inputs=[wp.zeros(n, dtype=int)])
    wp.launch(count, dim=n, inputs=[np.zeros(n, dtype=np.int32)])
"""
)


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_every_certain_mismatch_is_flagged(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH021"])
    found = [(r.location.line, r.message.split(", but the parameter is ")[1].split(":")[0]) for r in records]
    assert found == [
        (_line(BAD, "inputs=[samples,"), "an array of float32"),
        (_line(BAD, "inputs=[np.array([0.0"), "an array of float32"),
        (_line(BAD, "inputs=[np.linspace("), "an array of float32"),
        (_line(BAD, "wp.array(np.zeros(n), dtype=wp.float64"), "an array of float32"),
        (_line(BAD, "wp.zeros(n, dtype=wp.float64"), "an array of float32"),
        (_line(BAD, "wp.zeros(n, dtype=wp.vec3"), "an array of float32"),
        (_line(BAD, "np.random.rand(n)"), "an array of float32"),
        (_line(BAD, "inputs=[np.zeros((n, 3)),"), "an array of vec3"),
        (_line(BAD, "inputs=[wp.zeros(n)]"), "an array of int32"),
    ]
    kinds = [r.message.split(" is ")[1].split(", but")[0] for r in records]
    assert kinds == [
        "a float64 NumPy array",
        "a float64 NumPy array",
        "a float64 NumPy array",
        "a Warp array of float64",
        "a Warp array of float64",
        "a Warp array of vec3",
        "a Warp array of float64",
        "a float64 NumPy array",
        "a Warp array of float32",
    ]
    assert records[0].message.startswith("argument `samples` for parameter `x` of `scale` is")
    assert all(r.severity.value == "error" for r in records)
    assert "typestr='<f8'" in records[0].message and "dtype=float32" in records[0].message
    assert "expects an array with dtype=float32 but passed array has dtype=float64" in records[3].message
    # an array made elsewhere points at where it is made
    assert records[0].related[-1].location.line == _line(BAD, "samples = np.zeros(n)")


@pytest.mark.slow
def test_warp_raises_at_launch_for_every_mismatch() -> None:
    error = warp_error(BAD, launch=True)
    assert error is not None and "9 launches failed" in error, error
    assert error.count("Could not convert array interface with typestr='<f8'") == 4
    assert error.count("but passed array has dtype=<class 'warp._src.types.float64'>") == 3
    assert "but passed array has dtype=<class 'warp._src.types.vec3f'>" in error
    assert "expects an array with dtype=<class 'warp._src.types.int32'>" in error


def test_matching_arrays_are_not_flagged(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH021"]) == []


@pytest.mark.slow
def test_warp_runs_the_matching_arrays() -> None:
    assert warp_error(GOOD, launch=True) is None


def test_uncertain_types_are_left_alone(analyse: Analyse) -> None:
    source = (
        KERNELS
        + """

@wp.kernel
def generic(x: wp.array(dtype=wp.float64), y: wp.array(dtype=float)):
    i = wp.tid()


def run(data, n, mesh):
    wp.launch(scale, dim=n, inputs=[data, 2.0])                        # a parameter
    wp.launch(scale, dim=n, inputs=[mesh.vertices, 2.0])               # another object's attribute
    wp.launch(count, dim=n, inputs=[np.arange(n)])                     # int64 or int32 by platform
    wp.launch(count, dim=n, inputs=[np.array([1, 2, 3])])              # the same
    wp.launch(scale, dim=n, inputs=[np.zeros(n) * 2.0, 2.0])           # arithmetic
    values = np.zeros(n)
    values = values.astype(np.float32)                                 # assigned twice
    wp.launch(scale, dim=n, inputs=[values, 2.0])
    wp.launch(generic, dim=n, inputs=[np.zeros(n), wp.zeros(n)])       # both match
    wp.launch(scale, dim=0, inputs=[np.zeros(n), 2.0])                 # empty: Warp checks nothing
    wp.launch(scale, dim=n, inputs=[np.float32(1.0) * np.ones(n), 2.0])
    wp.launch(scale, dim=n, inputs=[np.array([np.float32(1.0)]), 2.0])  # NumPy scalars keep their type
"""
    )
    assert analyse(source, select=["WH021"]) == []


STATE = """
import numpy as np
import warp as wp


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), m: wp.array(dtype=float), dt: float):
    i = wp.tid()
    x[i] = x[i] + v[i] * dt * m[i]


class Cloth:
    def __init__(self, vertices):
        self.count = len(vertices)
        self.x = wp.array(vertices)
        self.v = wp.zeros(self.count, dtype=wp.vec3)
        self.m = wp.zeros_like(self.mass_source())
        self.w = wp.ones(self.count, dtype=float)

    def mass_source(self):
        return wp.zeros(self.count)

    def step(self, dt):
        wp.launch(integrate, dim=self.count, inputs=[self.x, self.v, self.w, dt])


class Reassigned:
    def __init__(self, n):
        self.x = wp.zeros(n, dtype=wp.float64)
        self.v = wp.zeros(n, dtype=wp.vec3)

    def resize(self, n):
        self.x = wp.zeros(n, dtype=wp.vec3)

    def step(self, n, w):
        wp.launch(integrate, dim=n, inputs=[self.x, self.v, w, 0.1])


class Editor:
    def reset(self, sim):
        sim.w = wp.zeros(4, dtype=float)
"""


def test_self_attributes_follow_the_class_assignments(analyse: Analyse) -> None:
    records = analyse(STATE, select=["WH021"])
    # `self.x = wp.array(vertices)`: `vertices` is unknown; `Reassigned.x` is assigned two types
    assert records == []
    source = STATE.replace(
        "self.x = wp.array(vertices)", "self.x = wp.array(np.asarray(vertices, dtype=np.float64))"
    )
    (record,) = analyse(source, select=["WH021"])
    assert record.location.line == _line(source, "inputs=[self.x, self.v, self.w, dt]")
    assert "argument `self.x` for parameter `x` of `integrate` is a Warp array of float64" in record.message
    assert record.related[-1].location.line == _line(source, "self.x = wp.array(np.asarray(")


def test_a_store_outside_the_class_makes_an_attribute_uncertain(analyse: Analyse) -> None:
    wrong = STATE.replace(
        "self.w = wp.ones(self.count, dtype=float)", "self.w = wp.ones(self.count, dtype=wp.float64)"
    )
    # `Editor.reset` stores `sim.w`: any object's `w` may be that one
    assert analyse(wrong, select=["WH021"]) == []
    alone = wrong.replace("        sim.w = wp.zeros(4, dtype=float)", "        pass")
    (record,) = analyse(alone, select=["WH021"])
    assert "argument `self.w` for parameter `m` of `integrate` is a Warp array of float64" in record.message
    # a subclass of the file that stores another type makes it uncertain again
    subclass = (
        alone
        + """

class DoubleCloth(Cloth):
    def refine(self):
        self.w = wp.ones(self.count, dtype=float)
"""
    )
    assert analyse(subclass, select=["WH021"]) == []
    # so does a module-level store
    assert analyse(alone + "\n\nCloth.w = None\n", select=["WH021"]) == []


def test_stores_in_top_level_functions_are_not_followed(analyse: Analyse) -> None:
    """As stores in other modules: a launch's verdict must not depend on an unrelated host function (the
    language server keeps per-launch results while such a function changes)."""
    wrong = STATE.replace(
        "self.w = wp.ones(self.count, dtype=float)", "self.w = wp.ones(self.count, dtype=wp.float64)"
    ).replace("        sim.w = wp.zeros(4, dtype=float)", "        pass")
    elsewhere = wrong + "\n\ndef configure(sim):\n    sim.w = wp.zeros(4, dtype=float)\n"
    assert [r.rule for r in analyse(elsewhere, select=["WH021"])] == ["WH021"]


def test_fixes_pass_the_parameter_type_where_a_default_was_taken(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH021"])
    fixable = [r for r in records if r.fix is not None]
    assert all(not r.fix.safe for r in fixable if r.fix is not None)  # other uses of the array see the change
    fixed, applied = apply_fixes(BAD, fixable, safe_only=False)
    assert applied == 6
    assert "samples = np.zeros(n, dtype=np.float32)" in fixed
    assert "np.linspace(0.0, 1.0, n, dtype=np.float32)" in fixed
    assert "wp.array(np.random.rand(n), dtype=wp.float32)" in fixed
    assert "np.zeros((n, 3), dtype=np.float32), np.zeros((n, 3), dtype=np.float32)" in fixed
    assert "wp.zeros(n, dtype=wp.int32)" in fixed
    # explicit dtypes are the author's choice: no fix
    remaining = analyse(fixed, select=["WH021"])
    assert [r.location.line for r in remaining] == [
        _line(fixed, "wp.array(np.zeros(n), dtype=wp.float64"),
        _line(fixed, "wp.zeros(n, dtype=wp.float64"),
        _line(fixed, "wp.zeros(n, dtype=wp.vec3"),
    ]


@pytest.mark.slow
def test_the_fixed_launches_run() -> None:
    source = (
        KERNELS
        + """

def run():
    wp.set_device("cpu")
    n = 8
    samples = np.zeros(n, dtype=np.float32)
    wp.launch(scale, dim=n, inputs=[samples, 2.0])
    wp.launch(scale, dim=n, inputs=[np.linspace(0.0, 1.0, n, dtype=np.float32), 2.0])
    wp.launch(scale, dim=n, inputs=[wp.array(np.random.rand(n), dtype=wp.float32), 2.0])
    wp.launch(count, dim=n, inputs=[wp.zeros(n, dtype=wp.int32)])
    points = np.zeros((n, 3), dtype=np.float32)
    wp.launch(advect, dim=n, inputs=[points, np.zeros((n, 3), dtype=np.float32), 0.1])
"""
    )
    assert warp_error(source, launch=True) is None
