"""Mutated real kernels never make a rule raise (a raising rule becomes a WH999 record)."""

from __future__ import annotations

import os
import random
from importlib.util import find_spec
from pathlib import Path

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
