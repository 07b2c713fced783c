"""The bounds probe's AST transform (stages/probe.py), and the assertion text it is read back from.

The end-to-end behaviour (a real debug build dying at the Python line of the access) is in
test_daemon_worker.py: test_debug_bounds_assertion_crash, test_segfault_kills_only_the_worker,
test_silent_read_past_the_end_is_placed_on_its_line.
"""

from __future__ import annotations

import ast
import textwrap

from warp_harness.daemon.codegen_errors import parse_native_assertion
from warp_harness.daemon.steps.probe import BoundsProbe


def _probe(src: str, arrays: dict[str, int]) -> tuple[list[str], list[tuple[int, int]], BoundsProbe]:
    tree = ast.parse(textwrap.dedent(src))
    probe = BoundsProbe(arrays)
    tree = probe.visit(tree)
    func = tree.body[0]
    asserts = [n for n in ast.walk(func) if isinstance(n, ast.Assert)]
    return [ast.unparse(a.test) for a in asserts], [(a.lineno, a.col_offset) for a in asserts], probe


def test_every_index_of_an_array_parameter_gets_both_bounds_in_evaluation_order() -> None:
    tests, where, probe = _probe(
        """
        def k(x, idx, out, n: int):
            i = wp.tid()
            out[idx[i]] = x[i]
        """,
        {"x": 1, "idx": 1, "out": 1},
    )
    assert tests == [
        "int(i) >= -x.shape[0]",
        "int(i) < x.shape[0]",
        "int(i) >= -idx.shape[0]",
        "int(i) < idx.shape[0]",
        "int(idx[i]) >= -out.shape[0]",
        "int(idx[i]) < out.shape[0]",
    ]
    # each assert carries the location of its subscript: Warp's #line and printed source
    assert where == [(4, 18), (4, 18), (4, 8), (4, 8), (4, 4), (4, 4)]
    assert probe.checked == 3


def test_multi_dimensional_nested_blocks_and_loop_headers() -> None:
    tests, _, _ = _probe(
        """
        def k(a, flags, out):
            i, j = wp.tid()
            while flags[0] == 0:
                pass
            if i < 3:
                for t in range(4):
                    out[i] += a[i, j + t]
        """,
        {"a": 2, "flags": 1, "out": 1},
    )
    assert "int(0) < flags.shape[0]" in tests
    assert "int(i) < a.shape[0]" in tests and "int(j + t) < a.shape[1]" in tests
    assert "int(i) < out.shape[0]" in tests


def test_indices_with_side_effects_locals_and_slices_are_left_alone() -> None:
    tests, _, probe = _probe(
        """
        def k(x, out, counter):
            i = wp.tid()
            row = x[i]
            out[wp.atomic_add(counter, 0, 1)] = row[0]
            out[helper(i)] = 1.0
            x[1:3] = 0.0
        """,
        {"x": 1, "out": 1, "counter": 1},
    )
    assert tests == ["int(i) >= -x.shape[0]", "int(i) < x.shape[0]"]  # only `x[i]`
    assert probe.checked == 1


def test_the_assertion_is_read_back_as_a_python_location() -> None:
    output = (
        "Warp CUDA warning: ...\n"
        "Assertion failed: '((void)\"y[i + 1]\",var_15)'\n"
        "At '/ws/kernels/shift.py:9'\n"
    )
    a = parse_native_assertion(output)
    assert a is not None
    assert a.python_source == "y[i + 1]" and a.python_location == ("/ws/kernels/shift.py", 9)
    native = parse_native_assertion(
        "Assertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'\nAt '/x/warp/native/array.h:442'\n"
    )
    assert native is not None and native.is_bounds_check
    assert native.python_source is None and native.python_location is None
