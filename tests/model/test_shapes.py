"""Symbolic shapes and launch dims (`warp_harness.model.shapes`): ranks of dims and arrays, extents, and
how a dim covers an extent, in the spellings real host code uses."""

from __future__ import annotations

from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel, build_model
from warp_harness.model.shapes import Cover, Extent, ShapeEnv, compare, launch_env, param_ranks

HEADER = """
import math
import numpy as np
import warp as wp

N = 64


@wp.kernel
def k1(a: wp.array(dtype=float)):
    i = wp.tid()


@wp.kernel
def k2(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
"""


def _sites(body: str) -> tuple[ModuleModel, list[LaunchSite]]:
    model = build_model(HEADER + body)
    return model, model.launches


def _env(model: ModuleModel, site: LaunchSite) -> ShapeEnv:
    kernel = model.kernel_named(site.kernel_name)
    assert kernel is not None
    return launch_env(site, model.constants.values, model.imports, param_ranks(kernel))


def _ranks(body: str) -> list[int | None]:
    model, sites = _sites(body)
    return [_env(model, s).dim_rank() for s in sites]


def test_dim_rank_of_each_spelling() -> None:
    body = """
def run(a, img, n: int, m: int, p, q, dims):
    nx, ny = img.shape
    shape = (n, m)
    count = len(a)
    wp.launch(k1, dim=a.shape, inputs=[a])             # a is passed to a 1-D parameter
    wp.launch(k2, dim=img.shape, inputs=[img])         # img to a 2-D one
    wp.launch(k2, dim=img.shape[0], inputs=[img])
    wp.launch(k2, dim=img.shape[:1], inputs=[img])
    wp.launch(k2, dim=img.shape[-2:], inputs=[img])
    wp.launch(k1, dim=len(a), inputs=[a])
    wp.launch(k2, dim=nx * ny, inputs=[img])           # unpacked from a shape: integers
    wp.launch(k2, dim=n * m, inputs=[img])             # annotated `int`
    wp.launch(k2, dim=shape, inputs=[img])
    wp.launch(k2, dim=count, inputs=[img])
    wp.launch(k2, dim=(n,) * 2, inputs=[img])
    wp.launch(k2, dim=(n,) + (m,), inputs=[img])
    wp.launch(k1, dim=N // 2, inputs=[a])
    wp.launch(k1, dim=-(-n // 256) * 256, inputs=[a])
    wp.launch(k1, dim=math.ceil(n / 32) * 32, inputs=[a])
    wp.launch(k2, dim=p * q, inputs=[img])             # p, q unknown: (2, 3) * 1 is a tuple
    wp.launch(k2, dim=p, inputs=[img])
    wp.launch(k2, dim=(*dims,), inputs=[img])
"""
    assert _ranks(body) == [1, 2, 1, 1, 2, 1, 1, 1, 2, 1, 2, 2, 1, 1, 1, None, None, None]


def test_array_ranks_from_allocations_parameters_and_fields() -> None:
    body = """
class Grid:
    def __init__(self, nx, ny):
        self.nx = nx
        self.ny = ny
        self.heights = wp.zeros((nx, ny), dtype=float)
        self.flat = wp.zeros(self.nx * self.ny, dtype=float)

    def step(self):
        wp.launch(k1, dim=self.heights.shape, inputs=[self.flat])
        wp.launch(k1, dim=self.flat.shape, inputs=[self.flat])
        wp.launch(k1, dim=self.nx * self.ny, inputs=[self.flat])   # shape elements: integers


def run(n: int, m: int, x):
    grid = wp.zeros((n, m), dtype=float)
    copy = wp.empty_like(grid)
    host = np.zeros((n, 3), dtype=np.float32)
    points = wp.array(host)
    vectors = wp.array(host, dtype=wp.vec3)
    wp.launch(k1, dim=copy.shape, inputs=[x])
    wp.launch(k1, dim=points.shape, inputs=[x])
    wp.launch(k1, dim=vectors.shape, inputs=[x])      # a vec3 dtype eats the last axis: rank unsure
    wp.launch(k1, dim=wp.zeros(n).shape, inputs=[x])
"""
    assert _ranks(body) == [2, 1, 1, 2, 2, None, 1]


def _cover(body: str, axis: int = 0, position: int = 0) -> list[tuple[Cover, int, int]]:
    """For each launch: how its dim along ``axis`` covers the first input's extent along ``position``."""
    model, sites = _sites(body)
    found = []
    for site in sites:
        env = _env(model, site)
        dim = env.dim_value(axis)
        args = site.argument_list("inputs")
        assert args
        verdicts = [compare(dim, e) for e in env.extents(args[0], position)] if dim is not None else []
        known = [v for v in verdicts if v.cover != Cover.UNKNOWN]
        found.append((known[0].cover, known[0].low, known[0].high) if known else (Cover.UNKNOWN, 0, 0))
    return found


def test_dims_against_allocated_and_parameter_extents() -> None:
    body = """
def run(a, n: int, m: int):
    b = wp.zeros(n, dtype=float)
    c = wp.empty_like(b)
    d = wp.array(np.ones(n, dtype=np.float32))
    e = wp.zeros(60, dtype=float)
    size = a.shape[0]
    wp.launch(k1, dim=a.shape[0] + 1, inputs=[a])
    wp.launch(k1, dim=len(a) + 1, inputs=[a])
    wp.launch(k1, dim=size + 1, inputs=[a])
    wp.launch(k1, dim=n + 1, inputs=[b])
    wp.launch(k1, dim=n + 1, inputs=[c])
    wp.launch(k1, dim=n + 2, inputs=[d])
    wp.launch(k1, dim=N, inputs=[e])
    wp.launch(k1, dim=a.shape[0], inputs=[a])
    wp.launch(k1, dim=n - 1, inputs=[b])
    wp.launch(k1, dim=m + 1, inputs=[b])
"""
    assert _cover(body) == [
        (Cover.MORE, 1, 1),
        (Cover.MORE, 1, 1),
        (Cover.MORE, 1, 1),
        (Cover.MORE, 1, 1),
        (Cover.MORE, 1, 1),  # empty_like copies b's extent
        (Cover.MORE, 2, 2),  # wp.array(data) has the data's
        (Cover.MORE, 4, 4),
        (Cover.EXACT, 0, 0),
        (Cover.WITHIN, -1, -1),
        (Cover.UNKNOWN, 0, 0),
    ]


def test_dims_rounded_up_to_whole_blocks() -> None:
    body = """
def run(a, n: int):
    b = wp.zeros(n, dtype=float)
    blocks = (n + 255) // 256
    wp.launch(k1, dim=((n + 255) // 256) * 256, inputs=[b])
    wp.launch(k1, dim=blocks * 256, inputs=[b])
    wp.launch(k1, dim=256 * blocks, inputs=[b])
    wp.launch(k1, dim=math.ceil(n / 128) * 128, inputs=[b])
    wp.launch(k1, dim=-(-a.shape[0] // 64) * 64, inputs=[a])
    wp.launch(k1, dim=(n // 256) * 256, inputs=[b])       # rounded down: never past the end
    wp.launch(k1, dim=((1000 + 255) // 256) * 256, inputs=[wp.zeros(1000)])
"""
    assert _cover(body) == [
        (Cover.MAYBE_MORE, 0, 255),
        (Cover.MAYBE_MORE, 0, 255),
        (Cover.MAYBE_MORE, 0, 255),
        (Cover.MAYBE_MORE, 0, 127),
        (Cover.MAYBE_MORE, 0, 63),
        (Cover.WITHIN, -255, 0),
        (Cover.MORE, 24, 24),  # constants fold: 1024 threads for 1000 elements
    ]


def test_two_dimensional_dims_and_extents() -> None:
    body = """
def run(img, n: int, m: int):
    grid = wp.zeros((n, m), dtype=float)
    h, w = img.shape
    wp.launch(k2, dim=(n, m + 1), inputs=[grid])
    wp.launch(k2, dim=(h, w + 1), inputs=[img])
    wp.launch(k2, dim=img.shape, inputs=[img])
    wp.launch(k2, dim=grid.shape, inputs=[grid])
"""
    assert _cover(body, axis=1, position=1) == [
        (Cover.MORE, 1, 1),
        (Cover.MORE, 1, 1),
        (Cover.EXACT, 0, 0),
        (Cover.EXACT, 0, 0),
    ]


def test_self_fields_allocated_in_the_class() -> None:
    body = """
class Cloth:
    def __init__(self, n):
        self.n = n
        self.x = wp.zeros(n, dtype=wp.vec3)
        self.v = wp.zeros(self.n, dtype=wp.vec3)

    def step(self):
        wp.launch(k1, dim=self.n + 1, inputs=[self.x])
        wp.launch(k1, dim=self.n + 1, inputs=[self.v])
        wp.launch(k1, dim=self.n - 1, inputs=[self.x])
        wp.launch(k1, dim=self.x.shape[0] + 1, inputs=[self.x])
"""
    assert _cover(body) == [
        (Cover.MORE, 1, 1),
        (Cover.MORE, 1, 1),
        (Cover.WITHIN, -1, -1),
        (Cover.MORE, 1, 1),
    ]


def test_names_bound_twice_or_fields_reallocated_are_not_followed() -> None:
    body = """
class Resized:
    def __init__(self, n):
        self.n = n
        self.x = wp.zeros(n)

    def resize(self, n):
        self.x = wp.zeros(2 * n)

    def step(self):
        wp.launch(k1, dim=self.n + 1, inputs=[self.x])


class Recounted:
    def __init__(self, n):
        self.count = n
        self.counter = wp.zeros((self.count,), dtype=int)

    def rebuild(self, m):
        self.count = m                                    # bound twice in the class

    def step(self):
        wp.launch(k1, dim=self.count + 1, inputs=[self.counter])


def run(n: int):
    b = wp.zeros(n, dtype=float)
    n = n // 2
    wp.launch(k1, dim=n + 1, inputs=[b])


def loop(sizes):
    for n in sizes:
        b = wp.zeros(n, dtype=float)
        wp.launch(k1, dim=n + 1, inputs=[b])
"""
    assert _cover(body) == [(Cover.UNKNOWN, 0, 0)] * 4


def test_compare_reads_the_difference_of_two_extents() -> None:
    from warp_harness.model.constants import Linear

    n = Linear(0.0, (("n", 1.0),))
    assert compare(Extent(n), Extent(n)).cover == Cover.EXACT
    assert compare(Extent(n - Linear(-3.0)), Extent(n)).cover == Cover.MORE
    assert compare(Extent(n, 7), Extent(n)).cover == Cover.MAYBE_MORE
    assert compare(Extent(n - Linear(8.0), 7), Extent(n)).cover == Cover.WITHIN
    assert compare(Extent(n), Extent(Linear(0.0, (("m", 1.0),)))).cover == Cover.UNKNOWN
    # the extent's own slack counts against the dim: `n .. n + 3` elements, `n + 2` threads
    assert compare(Extent(n - Linear(-2.0)), Extent(n, 3)).cover == Cover.MAYBE_MORE


def test_param_ranks_only_for_plain_arrays() -> None:
    model = build_model(
        HEADER
        + """
@wp.kernel
def mixed(a: wp.array3d(dtype=float), s: float, idx: wp.indexedarray(dtype=float)):
    pass
"""
    )
    kernel = model.kernel_named("mixed")
    assert kernel is not None and param_ranks(kernel) == [3, None, None]


def test_a_dim_that_folds_reads_nothing_of_its_scope(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The scope's facts and the constants-with-locals env are made when first read: a literal dim or one
    of module constants needs neither (most launch dims)."""
    import warp_harness.model.shapes as shapes

    model, sites = _sites("""
def run(a):
    wp.launch(k1, dim=N, inputs=[a])
    wp.launch(k2, dim=(N, 2), inputs=[a])
""")

    def refused(scope):  # type: ignore[no-untyped-def]
        raise AssertionError("scope facts read")

    monkeypatch.setattr(shapes, "_scope_info", refused)
    assert [_env(model, s).dim_rank() for s in sites] == [1, 2]
    env = _env(model, sites[0])
    assert env.env is model.constants.values  # no local value: the constants themselves, not a copy
