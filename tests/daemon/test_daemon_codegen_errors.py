from __future__ import annotations

from warp_harness.daemon.codegen_errors import (
    exception_text,
    parse_codegen_error,
    parse_native_assertion,
)

# texts as Warp 1.19 prints them (see WARP-FACTS.md; the live check is in test_daemon_worker.py)
CHAINED = (
    'Error while parsing function "bad" at /ws/k1.py:15:\n    y[i] = helper(wp.float16(1.0), x[i])\n'
    ';Error while parsing function "helper" at /ws/k1.py:5:\n    return a * b\n'
    ";Input types must be the same, got ['float16', 'float32']"
)
SIMPLE = (
    'Error while parsing function "bad2" at /ws/k1.py:20:\n    y[i] = wp.sqroot(x[i])\n'
    ";Could not find function wp.sqroot as a built-in or user-defined function."
)


def test_chained_func_error() -> None:
    err = parse_codegen_error(CHAINED, "RuntimeError")
    assert err is not None
    assert [(f.function, f.line) for f in err.frames] == [("bad", 15), ("helper", 5)]
    assert err.message.startswith("Input types must be the same")
    assert err.primary("/ws/k1.py").function == "helper"  # innermost frame in the file
    assert err.primary("/elsewhere.py").function == "bad"


def test_column_points_at_the_named_function() -> None:
    err = parse_codegen_error(SIMPLE)
    assert err is not None
    frame = err.frames[0]
    assert frame.source[frame.col : frame.end_col] == "wp.sqroot"


def test_column_falls_back_to_the_statement() -> None:
    err = parse_codegen_error(CHAINED)
    assert err is not None
    f = err.frames[1]
    assert f.source[f.col : f.end_col] == "return a * b"


def test_prefixed_and_unlocated_texts() -> None:
    assert parse_codegen_error("Incomplete argument annotations on function k") is None
    wrapped = parse_codegen_error("Module build failed: " + SIMPLE)
    assert wrapped is not None and wrapped.frames[0].line == 20


def test_key_error_text_is_unquoted() -> None:
    assert exception_text(KeyError("a 'b'")) == "a 'b'"
    assert exception_text(ValueError("v")) == "v"


def test_native_assertion() -> None:
    out = (
        "noise\nAssertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'\n"
        "At '/venv/warp/native/array.h:442'\n"
    )
    a = parse_native_assertion(out)
    assert a is not None and a.is_bounds_check and a.where.endswith("array.h:442")
    assert parse_native_assertion("nothing here") is None
