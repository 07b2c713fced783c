from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes

KERNELS = """
import math

import warp as wp

N_SAMPLES = 1e3
BLOCK = wp.constant(64)


@wp.kernel
def halve(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 0.5 * a[i]


@wp.kernel
def blur(img: wp.array2d(dtype=float)):
    i, j = wp.tid()
    img[i, j] = 0.25 * img[i, j]
"""

# every launch Warp refuses, each tried on its own; run() raises with every message
BAD = (
    KERNELS
    + """

def run():
    a = wp.zeros(256, dtype=float, device="cpu")
    img = wp.zeros((16, 16), dtype=float, device="cpu")
    n, block, nx, ny = 256, 64, 16, 16
    half = n / 2
    launches = [
        lambda: wp.launch(halve, dim=len(a) / 2, inputs=[a], device="cpu"),
        lambda: wp.launch(halve, dim=n / block, inputs=[a], device="cpu"),
        lambda: wp.launch(halve, dim=a.shape[0] * 0.5, inputs=[a], device="cpu"),
        lambda: wp.launch(blur, dim=(nx, ny / 2), inputs=[img], device="cpu"),
        lambda: wp.launch(halve, dim=N_SAMPLES, inputs=[a], device="cpu"),
        lambda: wp.launch(halve, dim=half, inputs=[a], device="cpu"),
        lambda: wp.launch(halve, dim=math.sqrt(n), inputs=[a], device="cpu"),
        lambda: wp.launch(halve, dim=n // 2.0, inputs=[a], device="cpu"),
        lambda: wp.launch(halve, dim=64.0, inputs=[a], device="cpu"),
    ]
    failures = []
    for launch in launches:
        try:
            launch()
        except TypeError as exc:
            failures.append(str(exc))
    raise RuntimeError(f"{len(failures)} launches failed: " + " | ".join(failures))
"""
)

GOOD = (
    KERNELS
    + """

def run():
    a = wp.zeros(256, dtype=float, device="cpu")
    img = wp.zeros((16, 16), dtype=float, device="cpu")
    n, block, nx, ny = 256, 64, 16, 16
    wp.launch(halve, dim=len(a) // 2, inputs=[a], device="cpu")
    wp.launch(halve, dim=(n + block - 1) // block, inputs=[a], device="cpu")
    wp.launch(halve, dim=int(a.shape[0] * 0.5), inputs=[a], device="cpu")
    wp.launch(blur, dim=(nx, ny // 2), inputs=[img], device="cpu")
    wp.launch(halve, dim=int(N_SAMPLES) // 8, inputs=[a], device="cpu")
    wp.launch(halve, dim=math.ceil(n / 3), inputs=[a], device="cpu")
    wp.launch(halve, dim=round(n / 3), inputs=[a], device="cpu")
    wp.launch(halve, dim=BLOCK, inputs=[a], device="cpu")
    wp.launch(halve, dim=n ** 1, inputs=[a], device="cpu")
"""
)


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_every_float_dim_spelling_is_flagged(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH020"])
    assert [r.location.line for r in records] == [
        _line(BAD, "dim=len(a) / 2"),
        _line(BAD, "dim=n / block"),
        _line(BAD, "dim=a.shape[0] * 0.5"),
        _line(BAD, "dim=(nx, ny / 2)"),
        _line(BAD, "dim=N_SAMPLES"),
        _line(BAD, "dim=half"),
        _line(BAD, "dim=math.sqrt(n)"),
        _line(BAD, "dim=n // 2.0"),
        _line(BAD, "dim=64.0"),
    ]
    assert all(r.severity.value == "error" for r in records)
    by_line = {r.location.line: r for r in records}
    tuple_entry = by_line[_line(BAD, "dim=(nx, ny / 2)")]
    assert "an entry of the launch `dim` `ny / 2`" in tuple_entry.message
    assert "`0.5` is a float literal" in by_line[_line(BAD, "a.shape[0] * 0.5")].message
    assert "float constant" not in by_line[_line(BAD, "dim=N_SAMPLES")].message
    assert "`1e3` is a float literal" in by_line[_line(BAD, "dim=N_SAMPLES")].message
    # a value reached through an assignment points at it
    via = by_line[_line(BAD, "dim=half")]
    assert [r.location.line for r in via.related] == [_line(BAD, "half = n / 2")]


@pytest.mark.slow
def test_warp_raises_at_launch_for_every_spelling() -> None:
    error = warp_error(BAD, launch=True)
    assert error is not None and "9 launches failed" in error, error
    assert error.count("cannot be interpreted as an integer") == 9


def test_integer_dims_are_not_flagged(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH020"]) == []


@pytest.mark.slow
def test_warp_runs_the_integer_dims() -> None:
    assert warp_error(GOOD, launch=True) is None


def test_names_of_unknown_type_are_left_alone(analyse: Analyse) -> None:
    source = (
        KERNELS
        + """

def run(a, n, scale, sizes):
    wp.launch(halve, dim=n * scale, inputs=[a])     # scale may be an int
    m = n
    m = m * 2
    wp.launch(halve, dim=m, inputs=[a])
    for size in sizes:
        wp.launch(halve, dim=size, inputs=[a])


def shadowed(N_SAMPLES, a):
    wp.launch(halve, dim=N_SAMPLES, inputs=[a])     # the parameter, not the module's float


def outer(count, a):
    N_SAMPLES = int(count)

    def inner():
        wp.launch(halve, dim=N_SAMPLES, inputs=[a])  # the enclosing function's int

    inner()
"""
    )
    assert analyse(source, select=["WH020"]) == []
    rebound = (
        KERNELS
        + """

def configure(count):
    global N_SAMPLES
    N_SAMPLES = int(count)


def run(a):
    wp.launch(halve, dim=N_SAMPLES, inputs=[a])     # may be the int `configure` stored
"""
    )
    assert analyse(rebound, select=["WH020"]) == []


def test_fixes(analyse: Analyse) -> None:
    source = (
        KERNELS
        + """

def run(a, n):
    wp.launch(halve, dim=len(a) / 2, inputs=[a])
    wp.launch(halve, dim=(n + 1) / 2, inputs=[a])
    wp.launch(halve, dim=64.0, inputs=[a])
    wp.launch(halve, dim=N_SAMPLES, inputs=[a])
    wp.launch(halve, dim=a.shape[0] * 0.5, inputs=[a])
"""
    )
    records = analyse(source, select=["WH020"])
    assert len(records) == 5
    # `//` rounds down: not applied by `check --fix` on its own
    assert [r.fix is not None and r.fix.safe for r in records] == [False, False, True, True, False]
    assert records[4].fix is None
    fixed, applied = apply_fixes(source, [r for r in records if r.fix is not None], safe_only=False)
    assert applied == 4
    assert "dim=len(a) // 2," in fixed and "dim=(n + 1) // 2," in fixed
    assert "dim=64," in fixed and "dim=int(N_SAMPLES)," in fixed
    assert "N_SAMPLES = 1e3" in fixed  # the constant itself is kept: it may be used as a float elsewhere
    assert [r.location.line for r in analyse(fixed, select=["WH020"])] == [_line(fixed, "a.shape[0] * 0.5")]
