from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

# both directions in one module (one compile); run() reports what the kernels saw
BAD = """
import numpy as np
import warp as wp

N = 4


@wp.kernel
def rows(counts: wp.array(dtype=int)):
    i = wp.tid()
    wp.atomic_add(counts, i, 1)


@wp.kernel
def grid(counts: wp.array2d(dtype=int)):
    i, j = wp.tid()
    wp.atomic_add(counts, i, j, 1)


def run():
    counts = wp.zeros(6, dtype=int, device="cpu")
    wp.launch(rows, dim=(3, 2), inputs=[counts], device="cpu")
    cells = wp.zeros((N, N), dtype=int, device="cpu")
    wp.launch(grid, dim=N, inputs=[cells], device="cpu")
    raise RuntimeError(f"RESULT rows={counts.numpy().tolist()} columns={cells.numpy().sum(axis=0).tolist()}")
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_both_directions_are_flagged_and_warp_runs_them_silently_wrong(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH007"])
    assert [(r.location.line, r.location.kernel) for r in records] == [
        (_line(BAD, "i = wp.tid()"), "rows"),
        (_line(BAD, "i, j = wp.tid()"), "grid"),
    ]
    one, two = records
    assert "unpacked into 1 name" in one.message and "2-D dim" in one.message
    assert (one.expected, one.actual) == ("2", 1)
    assert [r.location.line for r in one.related] == [_line(BAD, "wp.launch(rows")]
    assert "unpacked into 2 names" in two.message and "1-D dim" in two.message and "always 0" in two.message
    assert [r.location.line for r in two.related] == [_line(BAD, "wp.launch(grid")]
    # Warp raises nothing of its own: the only error is run()'s report of the results
    error = warp_error(BAD, launch=True)
    assert error is not None and error.startswith("RuntimeError: RESULT")
    # 1 name on a (3, 2) launch: each of i = 0, 1, 2 ran twice, elements 3..5 never
    assert "rows=[2, 2, 2, 0, 0, 0]" in error
    # 2 names on a 1-D launch: j is always 0, only column 0 was visited
    assert "columns=[4, 0, 0, 0]" in error


def test_matching_ranks_pass(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def rows(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


@wp.kernel
def grid(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = 1.0


def run(a, b, n, m):
    shape = (n, m)
    wp.launch(rows, dim=n + 1, inputs=[a])
    wp.launch(rows, dim=(n,), inputs=[a])
    wp.launch(grid, dim=(n, m), inputs=[b])
    wp.launch(grid, dim=shape, inputs=[b])
"""
    assert analyse(source, select=["WH007"]) == []
    assert warp_error(source) is None


def test_launch_tiled_adds_the_block_dimension(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def per_tile(a: wp.array(dtype=float)):
    i = wp.tid()


@wp.kernel
def per_lane(a: wp.array(dtype=float)):
    i, lane = wp.tid()


@wp.kernel
def too_many(a: wp.array(dtype=float)):
    i, j, k = wp.tid()
    a[i + j + k] = 1.0


def run(a):
    wp.launch_tiled(per_tile, dim=[8], inputs=[a], block_dim=64)
    wp.launch_tiled(per_lane, dim=8, inputs=[a], block_dim=64)
    wp.launch_tiled(too_many, dim=[8], inputs=[a], block_dim=64)
"""
    (record,) = analyse(source, select=["WH007"])
    assert record.location.kernel == "too_many" and record.expected == "1 or 2"
    assert "launch_tiled adds the block dimension" in record.related[0].message


def test_uncertain_dims_are_not_judged(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def grid(a: wp.array2d(dtype=float)):
    i, j = wp.tid()


def run(a, n, shape, dims):
    wp.launch(grid, dim=n, inputs=[a])          # n may be a tuple
    wp.launch(grid, dim=a.shape, inputs=[a])
    wp.launch(grid, dim=(*dims,), inputs=[a])
    wp.launch(grid, dim=shape, inputs=[a])
"""
    assert analyse(source, select=["WH007"]) == []


def test_unread_extra_names_and_recorded_launches_are_not_judged(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def first_axis(a: wp.array(dtype=float)):
    i, _j, _k = wp.tid()
    a[i] = 1.0


@wp.kernel
def rows(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


def run(a, n):
    wp.launch(first_axis, dim=n + 1, inputs=[a])
    cmd = wp.launch(rows, dim=1, inputs=[a], record_cmd=True)
    cmd.set_dim((n, 2))
    wp.launch(rows, dim=(0, 4), inputs=[a])
"""
    assert analyse(source, select=["WH007"]) == []


# the symbolic spellings of dims (`warp_harness.model.shapes`), one module run on the CPU
SYMBOLIC = """
import numpy as np
import warp as wp


@wp.kernel
def relax(heights: wp.array2d(dtype=float), columns: wp.array(dtype=int)):
    i, j = wp.tid()
    if i < heights.shape[0]:
        heights[i, j] = 0.5 * heights[i, j]
    wp.atomic_add(columns, j, 1)


@wp.kernel
def blur(img: wp.array2d(dtype=float), visits: wp.array2d(dtype=int)):
    i = wp.tid()
    for j in range(img.shape[1]):
        wp.atomic_add(visits, i, j, 1)


class HeightField:
    def __init__(self, nx, ny):
        self.nx = nx
        self.ny = ny
        self.heights = wp.zeros((nx, ny), dtype=float, device="cpu")
        self.columns = wp.zeros(ny, dtype=int, device="cpu")

    def step(self):
        wp.launch(relax, dim=self.nx * self.ny, inputs=[self.heights, self.columns], device="cpu")


def filter_image(img, visits):
    wp.launch(blur, dim=img.shape, inputs=[img, visits], device="cpu")


def run():
    field = HeightField(3, 4)
    field.step()
    img = wp.zeros((3, 4), dtype=float, device="cpu")
    visits = wp.zeros((3, 4), dtype=int, device="cpu")
    filter_image(img, visits)
    raise RuntimeError(
        f"RESULT relax={field.columns.numpy().tolist()} blur={visits.numpy().sum(axis=1).tolist()}"
    )
"""


def test_symbolic_dims_of_the_wrong_rank_are_flagged(analyse: Analyse) -> None:
    records = analyse(SYMBOLIC, select=["WH007"])
    assert [(r.location.line, r.location.kernel) for r in records] == [
        (_line(SYMBOLIC, "i, j = wp.tid()"), "relax"),
        (_line(SYMBOLIC, "i = wp.tid()"), "blur"),
    ]
    relax, blur = records
    assert "1-D dim" in relax.message and "always 0" in relax.message
    assert "`self.nx * self.ny` is one integer" in relax.related[0].message
    assert "2-D dim" in blur.message and "`img.shape` has 2 extents" in blur.related[0].message


@pytest.mark.slow
def test_warp_runs_the_symbolic_spellings_silently_wrong() -> None:
    error = warp_error(SYMBOLIC, launch=True)
    assert error is not None and error.startswith("RuntimeError: RESULT"), error
    # the 12 threads of the flat `nx * ny` launch all have j == 0: column 0 seen 12 times, the others never
    assert "relax=[12, 0, 0, 0]" in error
    # `i = wp.tid()` on `img.shape` (3, 4): each row's loop ran 4 times (the second dim folded away)
    assert "blur=[16, 16, 16]" in error


def test_symbolic_dims_of_the_right_rank_pass(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def per_cell(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = 1.0


@wp.kernel
def flat(a: wp.array2d(dtype=float)):
    tid = wp.tid()
    a[tid // a.shape[1], tid % a.shape[1]] = 1.0


class Grid:
    def __init__(self, nx, ny):
        self.nx = nx
        self.ny = ny
        self.cells = wp.zeros((nx, ny), dtype=float)

    def step(self):
        wp.launch(per_cell, dim=self.cells.shape, inputs=[self.cells])
        wp.launch(per_cell, dim=(self.nx, self.ny), inputs=[self.cells])
        wp.launch(flat, dim=self.nx * self.ny, inputs=[self.cells])
        wp.launch(flat, dim=self.cells.size, inputs=[self.cells])


def run(img, p, q):
    h, w = img.shape
    wp.launch(per_cell, dim=img.shape, inputs=[img])
    wp.launch(per_cell, dim=img.shape[:2], inputs=[img])
    wp.launch(flat, dim=h * w, inputs=[img])
    wp.launch(flat, dim=img.shape[0] * img.shape[1], inputs=[img])
    wp.launch(flat, dim=len(img), inputs=[img])
    wp.launch(per_cell, dim=p * q, inputs=[img])    # p, q unknown: `(n, m) * 1` is 2-D
"""
    assert analyse(source, select=["WH007"]) == []
    assert warp_error(source) is None
