"""Mutated real kernels never make a rule raise (a raising rule becomes a WH999 record)."""

from __future__ import annotations

import os
import random
from importlib.util import find_spec
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warp_harness.engine import analyse_source

_SPEC = find_spec("warp")
assert _SPEC is not None and _SPEC.origin is not None
_EXAMPLES = sorted((Path(_SPEC.origin).parent / "examples").rglob("*.py"))
_SOURCES = [p.read_text(encoding="utf-8") for p in _EXAMPLES if "@wp.kernel" in p.read_text(encoding="utf-8")]
_TOKENS = [
    "wp.tid()",
    "0",
    "1.0",
    "wp.float16(1.0)",
    "i",
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    "x[i, j]",
    "wp.tile_load(a, shape=(8, 8))",
    "return 1",
    "+=",
    "*",
    "\n",
    "\n    ",
    "é",
    "\x00",
    "lambda: 0",
    "wp.launch(k, dim=1, inputs=[])",
    "TILE_M",
    "wp.constant(4)",
    "@wp.kernel\ndef k(x):\n",
]


def _mutate(source: str, seed: int, edits: int) -> str:
    rng = random.Random(seed)
    text = source
    for _ in range(edits):
        if not text:
            break
        position = rng.randrange(len(text))
        kind = rng.random()
        if kind < 0.4:
            text = text[:position] + text[position + rng.randrange(1, 40) :]
        elif kind < 0.8:
            text = text[:position] + rng.choice(_TOKENS) + text[position:]
        else:
            other = rng.randrange(len(text))
            text = text[:position] + text[other : other + rng.randrange(1, 200)] + text[position:]
    return text


# WH_FUZZ_EXAMPLES=5000 for a longer hunt; CI runs the default
@settings(
    max_examples=int(os.environ.get("WH_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.integers(min_value=0, max_value=len(_SOURCES) - 1),
    st.integers(0, 2**32),
    st.integers(1, 12),
    st.sampled_from(["sm_86", "sm_90", "cpu"]),
)
def test_mutated_examples_never_crash_a_rule(index: int, seed: int, edits: int, target: str) -> None:
    text = _mutate(_SOURCES[index], seed, edits)
    records = analyse_source(text, "mutated.py", overrides={"target": target}).records
    internal = [r.message for r in records if r.rule == "WH999"]
    assert internal == [], internal


_SKELETON = """import warp as wp

TILE = wp.constant({const})


@wp.kernel
def k(x: wp.array(dtype={dtype}), y: wp.array2d(dtype=float)):
    i = wp.tid()
    {body}


wp.launch(k, dim={dim}, inputs=[{args}])
"""


@settings(
    max_examples=int(os.environ.get("WH_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.text(max_size=400),
    st.lists(st.sampled_from(_TOKENS), max_size=40),
    st.sampled_from(["0", "TILE", "-1", "2**40", "'x'", "None"]),
    st.sampled_from(["float", "wp.float16", "int", "wp.vec3", "Foo", "wp.array(dtype=float)"]),
    st.sampled_from(["1", "(4, 4)", "n", "-5", "(1, 2, 3, 4, 5)", "x.shape"]),
    st.sampled_from(["", "x", "x, y", "x, y, x, y", "*xs", "x=1"]),
)
def test_random_sources_never_crash_a_rule(
    noise: str, tokens: list[str], const: str, dtype: str, dim: str, args: str
) -> None:
    """Random text, and random statements in a kernel skeleton with random launch arguments."""
    for text in (
        noise,
        _SKELETON.format(const=const, dtype=dtype, body=" ".join(tokens), dim=dim, args=args),
    ):
        records = analyse_source(text, "random.py").records
        internal = [r.message for r in records if r.rule == "WH999"]
        assert internal == [], (text, internal)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes_never_raise(data: bytes) -> None:
    from warp_harness.engine import check_bytes

    result = check_bytes(data, "bytes.py")
    assert [r for r in result.records if r.rule == "WH999"] == []


_TWO_FINDINGS = """import warp as wp


@wp.kernel
def k(x: wp.array(dtype=wp.float16), y: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 0.5
    return 1
"""


def test_a_raising_rule_is_isolated_and_reported_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from warp_harness.rules import all_rules

    baseline = {r.rule for r in analyse_source(_TWO_FINDINGS, "k.py").records}
    assert {"WH003", "WH005"} <= baseline
    broken = next(r for r in all_rules() if r.id == "WH003")
    calls = []

    def explode(self: object, ctx: object, kernel: object) -> list[object]:
        calls.append(1)
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(type(broken), "check_kernel", explode)
    records = analyse_source(_TWO_FINDINGS, "k.py").records
    internal = [r for r in records if r.rule == "WH999"]
    assert len(internal) == 1 and len(calls) == 1
    assert "WH003" in internal[0].message and "ZeroDivisionError: boom" in internal[0].message
    assert internal[0].severity.value == "warning" and internal[0].location.line == 1
    # every other rule still ran: the same findings as before, minus the broken rule's
    assert {r.rule for r in records} - {"WH999"} == baseline - {"WH003"}
    # a second broken rule: one record each, the rest unchanged
    other = next(r for r in all_rules() if r.id == "WH005")
    monkeypatch.setattr(type(other), "check_kernel", explode)
    records = analyse_source(_TWO_FINDINGS, "k.py").records
    assert sorted(r.message.split(" (")[0] for r in records if r.rule == "WH999") == [
        "internal error in rule WH003",
        "internal error in rule WH005",
    ]
    assert {r.rule for r in records} - {"WH999"} == baseline - {"WH003", "WH005"}


@pytest.mark.parametrize("text", [")", ")\n", "\n)\n", "x = 1\n)\n@wp.kernel\n"])
def test_known_crashers_of_the_parser_do_not_raise(text: str) -> None:
    """Found by benchmarks/stress_daemon.py: a stray `)` made the chunked parser raise ValueError."""
    analyse_source(text, "stray.py")
