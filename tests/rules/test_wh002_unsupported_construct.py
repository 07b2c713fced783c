from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

TEMPLATE = """
import math
import warp as wp

@wp.kernel
def k(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
{body}
"""

BAD = {
    "list comprehension": ("    out[0] = float(len([x[j] for j in range(4)]))", "ListComp"),
    "sum": ("    out[0] = sum(x)", "Could not find function sum"),
    "lambda": ("    f = lambda v: v\n    out[i] = x[i]", "Lambda"),
    "try": ("    try:\n        out[i] = x[i]\n    except Exception:\n        pass", "Try"),
    "with": ("    with wp.ScopedDevice('cpu'):\n        out[i] = x[i]", "With"),
    "nested def": ("    def g(v: float) -> float:\n        return v\n    out[i] = x[i]", "undefined symbol"),
    "generator": ("    out[0] = float(max(x[j] for j in range(3)))", "GeneratorExp"),
}

GOOD = [
    "    out[i] = math.sqrt(x[i])",
    "    out[i] = wp.sqrt(x[i]) + math.sin(x[i])",
    "    s = float(0.0)\n    for j in range(4):\n        s += x[j]\n    out[i] = s",
    "    out[i] = float(min(i, 3)) + abs(x[i])",
]


@pytest.mark.parametrize("name", sorted(BAD))
def test_unsupported_construct_is_flagged_and_warp_rejects_it(analyse: Analyse, name: str) -> None:
    body, warp_says = BAD[name]
    source = TEMPLATE.format(body=body)
    records = analyse(source, select=["WH002"])
    assert [r.rule for r in records] == ["WH002"], records
    assert records[0].location.line >= 8 and records[0].location.kernel == "k"
    error = warp_error(source)
    assert error is not None and warp_says in error


@pytest.mark.parametrize("body", GOOD)
def test_supported_code_passes_and_warp_agrees(analyse: Analyse, body: str) -> None:
    source = TEMPLATE.format(body=body)
    assert analyse(source, select=["WH002"]) == []
    assert warp_error(source) is None


def test_plain_python_helper_called_from_kernel(analyse: Analyse) -> None:
    source = TEMPLATE.replace("@wp.kernel", "def helper(v):\n    return v\n\n@wp.kernel").format(
        body="    out[i] = helper(x[i])"
    )
    (record,) = analyse(source, select=["WH002"])
    assert "plain Python function" in record.message and "@wp.func" in (record.hint or "")
    error = warp_error(source)
    assert error is not None and "helper" in error
    fixed = source.replace("def helper(v):", "@wp.func\ndef helper(v: float):")
    assert analyse(fixed, select=["WH002"]) == []
    assert warp_error(fixed) is None


@pytest.mark.parametrize(
    "body",
    [
        "    v = wp.vec3(*x[:3])\n    out[i] = v[0]",  # star-unpacking: supported since Warp 1.x
        "    if wp.static(3 in {2, 3}):\n        out[i] = 1.0",  # evaluated by Python at codegen
        "    n = wp.static(len([1 for _ in range(3)]))\n    out[i] = float(n)",
        "    out[i] = type(x[i])(2.0)",  # generic cast
        "    for j in reversed(range(3)):\n        out[i] = float(j)",
    ],
)
def test_constructs_warp_accepts_are_not_flagged(analyse: Analyse, body: str) -> None:
    source = TEMPLATE.format(body=body)
    assert analyse(source, select=["WH002"]) == []
    assert warp_error(source) is None


@pytest.mark.parametrize("call", ["enumerate(wp.vec3(1.0, 2.0, 3.0))", "zip(x, x)"])
def test_enumerate_and_zip_are_flagged_and_warp_agrees(analyse: Analyse, call: str) -> None:
    source = TEMPLATE.format(body=f"    for a in {call}:\n        out[i] = 1.0")
    assert [r.rule for r in analyse(source, select=["WH002"])] == ["WH002"]
    error = warp_error(source)
    assert error is not None and "Could not find function" in error
