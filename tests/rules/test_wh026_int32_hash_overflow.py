"""WH026: an overflowing int32 hash whose (possibly negative) remainder is used as an index offset or as a
random number."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import warp as wp


@wp.kernel
def count_cells(
    x: wp.array(dtype=wp.vec3i), body: wp.array(dtype=int), counts: wp.array(dtype=int), n: int
):
    i = wp.tid()
    c = x[i]
    h = (c[0] * 73856093) ^ (c[1] * 19349663) ^ (c[2] * 83492791)
    wp.atomic_add(counts, body[i] * n + h % n, 1)


@wp.kernel
def cell_range(keys: wp.array(dtype=int), start: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = keys[i] * 2654435761
    b = h % n
    out[i] = start[b + 1] - start[b]


@wp.kernel
def fnv(keys: wp.array2d(dtype=int), table: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = 216613
    for k in range(4):
        h = (h ^ keys[i, k]) * 16777619
    table[n + h % n] = i


@wp.kernel
def jitter(seeds: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    s = seeds[i] * 1103515245 + 12345
    seeds[i] = s
    out[i] = float(s % 1000) / 1000.0
"""

GOOD = """
import warp as wp


@wp.kernel
def whole_index(keys: wp.array(dtype=int), counts: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = (keys[i] * 73856093) ^ (i * 19349663)
    wp.atomic_add(counts, h % n, 1)


@wp.kernel
def unsigned(keys: wp.array(dtype=int), table: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = wp.uint32(keys[i]) * wp.uint32(73856093)
    table[1 + int(h % wp.uint32(n))] = i


@wp.kernel
def sign_checked(keys: wp.array(dtype=int), start: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    b = (keys[i] * 73856093) % n
    if b < 0:
        b += n
    out[i] = start[b + 1] - start[b]


@wp.kernel
def masked(keys: wp.array(dtype=int), table: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = keys[i] * 73856093
    table[n + (h & (n - 1))] = i


@wp.kernel
def small_factor(keys: wp.array(dtype=int), table: wp.array(dtype=int), n: int):
    i = wp.tid()
    table[n + (keys[i] * 31 + 7) % n] = i


@wp.kernel
def made_positive(keys: wp.array(dtype=int), table: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = keys[i] * 73856093
    table[n + (h % n + n) % n] = i


@wp.kernel
def wide(keys: wp.array(dtype=wp.int64), table: wp.array(dtype=int), n: wp.int64):
    i = wp.tid()
    h = keys[i] * wp.int64(73856093)
    table[1 + int(h % n)] = i
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_negative_remainders_used_as_offsets_or_random_numbers_are_flagged(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH026"])
    assert [(r.location.kernel, r.location.line, r.severity) for r in records] == [
        ("count_cells", _line(BAD, "body[i] * n + h % n"), Severity.ERROR),
        ("cell_range", _line(BAD, "b = h % n"), Severity.ERROR),
        ("fnv", _line(BAD, "table[n + h % n]"), Severity.ERROR),
        ("jitter", _line(BAD, "float(s % 1000)"), Severity.WARNING),
    ]
    assert "index `b + 1`" in records[1].message and "`b` (`h % n`)" in records[1].message
    assert "negative random numbers" in records[3].message


def test_warp_compiles_all_of_it() -> None:
    assert warp_error(BAD) is None


def test_the_fix_makes_the_remainder_non_negative(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH026"])
    fixed, applied = apply_fixes(BAD, records)
    assert applied == 4
    assert "body[i] * n + (h % n + n) % n" in fixed and "b = (h % n + n) % n" in fixed
    assert "float((s % 1000 + 1000) % 1000)" in fixed
    assert analyse(fixed, select=["WH026"]) == []
    assert warp_error(fixed) is None


def test_whole_indices_unsigned_masked_and_checked_hashes_pass(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH026"]) == []
    assert warp_error(GOOD) is None


RUN = """
import numpy as np
import warp as wp

wp.set_module_options({"mode": "debug"})


@wp.kernel
def whole_index(counts: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = (i * 73856093) ^ (i * 19349663)
    wp.atomic_add(counts, h % n, 1)


@wp.kernel
def per_object(counts: wp.array(dtype=int), n: int):
    i = wp.tid()
    obj = i % 4
    h = (i * 73856093) ^ (i * 19349663)
    wp.atomic_add(counts, obj * n + h % n, 1)


@wp.kernel
def per_object_fixed(counts: wp.array(dtype=int), n: int):
    i = wp.tid()
    obj = i % 4
    h = (i * 73856093) ^ (i * 19349663)
    wp.atomic_add(counts, obj * n + (h % n + n) % n, 1)


@wp.kernel
def jitter(seeds: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    s = seeds[i] * 1103515245 + 12345
    out[i] = float(s % 1000) / 1000.0


def run():
    whole = wp.zeros(16, dtype=int, device="cpu")
    wp.launch(whole_index, dim=4000, inputs=[whole, 16], device="cpu")
    bad = wp.zeros(64, dtype=int, device="cpu")
    wp.launch(per_object, dim=4000, inputs=[bad, 16], device="cpu")
    good = wp.zeros(64, dtype=int, device="cpu")
    wp.launch(per_object_fixed, dim=4000, inputs=[good, 16], device="cpu")
    seeds = wp.array(np.arange(1000, dtype=np.int32), device="cpu")
    samples = wp.zeros(1000, dtype=float, device="cpu")
    wp.launch(jitter, dim=1000, inputs=[seeds, samples], device="cpu")
    wp.synchronize()
    raise RuntimeError(
        f"RESULT whole={int(whole.numpy().sum())} "
        f"bad={bad.numpy().reshape(4, 16).sum(axis=1).tolist()} "
        f"good={good.numpy().reshape(4, 16).sum(axis=1).tolist()} "
        f"negative={int((samples.numpy() < 0.0).sum())}"
    )
"""


@pytest.mark.slow
def test_on_the_cpu_negative_offsets_land_in_another_segment_and_whole_indices_wrap() -> None:
    """Debug mode: Warp's bounds assertion accepts a whole negative index (it wraps like Python) and the
    offset one alike, so nothing but the counts shows the bug."""
    error = warp_error(RUN, launch=True)
    assert error is not None and "RESULT" in error, error
    assert "whole=4000" in error, error  # every thread counted: a bare `counts[h % n]` is fine
    assert "bad=[1251, 1000, 999, 750]" in error, error
    assert "good=[1000, 1000, 1000, 1000]" in error, error
    negative = int(error.split("negative=")[1].split()[0])
    assert negative > 300, error  # about half of the "uniform [0, 1)" samples are negative


NAMED = """
import warp as wp

HASH = wp.constant(73856093)
SMALL = 1000003


@wp.kernel
def rolled(keys: wp.array(dtype=int), table: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = int(2166136)
    for _ in range(keys[i]):
        h *= 16777619
    table[n + h % n] = i


@wp.kernel
def named(keys: wp.array(dtype=int), start: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    b = (keys[i] * HASH) % n
    out[i] = start[b + 1]


@wp.kernel
def small(keys: wp.array(dtype=int), table: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = keys[i] * SMALL
    table[n + h % n] = i
"""


def test_products_in_place_or_by_a_named_constant_are_followed(analyse: Analyse) -> None:
    records = analyse(NAMED, select=["WH026"])
    assert [(r.location.kernel, r.location.line) for r in records] == [
        ("rolled", _line(NAMED, "table[n + h % n]")),
        ("named", _line(NAMED, "b = (keys[i] * HASH) % n")),
    ]
    assert warp_error(NAMED) is None
