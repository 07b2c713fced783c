"""daemon/crash_records.py ``python_access``: where a debug build's bounds assertion places the access.

Warp's module hash leaves out where a kernel's text stands, so a kernel cache serves a debug build of
the same text made when the kernel stood at other lines or in another file, and the build's ``#line``s
name that place. The record goes where the access's text is now (it lost its line, or landed on the
kernel's def, in two CI runs whose shared build cache held another test's build of the same kernel).
"""

from __future__ import annotations

from pathlib import Path

from warp_harness.daemon.codegen_errors import NativeAssertion
from warp_harness.daemon.crash_records import python_access

KERNEL = """import warp as wp


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i + 2] * 2.0
"""
LINE = 7


def _probe(file: Path, line: int) -> NativeAssertion:
    # the shape of the bounds probe's assertion (steps/localize: `assert(((void)"<source>", cond))`)
    return NativeAssertion('((void)"x[i + 2]", i + 2 < x.shape[0])', f"{file}:{line}")


def test_the_named_line_holds_the_access(tmp_path: Path) -> None:
    path = tmp_path / "kernels.py"
    path.write_text(KERNEL, encoding="utf-8")
    assert python_access(_probe(path, LINE), path) == (LINE, 11, 19, "x[i + 2]")


def test_a_build_made_when_the_kernel_stood_lower_is_placed_where_it_is_now(tmp_path: Path) -> None:
    path = tmp_path / "kernels.py"
    path.write_text(KERNEL, encoding="utf-8")
    assert python_access(_probe(path, LINE + 2), path) == (LINE, 11, 19, "x[i + 2]")


def test_a_build_made_from_another_file_is_placed_in_this_one(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "kernels.py"
    other.parent.mkdir()
    other.write_text("# two lines more\n\n" + KERNEL, encoding="utf-8")
    path = tmp_path / "kernels.py"
    path.write_text(KERNEL, encoding="utf-8")
    assert python_access(_probe(other, LINE + 2), path) == (LINE, 11, 19, "x[i + 2]")
    # an access whose text is not in this file: not placed here
    assert python_access(_probe(other, LINE + 2), tmp_path / "missing.py") is None
