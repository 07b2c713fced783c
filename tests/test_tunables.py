"""Tunable constants as text: where they are assigned, their values, the edits that set them."""

from __future__ import annotations

import pytest

from warp_harness.fixes import apply_edits
from warp_harness.tunables import constant_edits, current_values

SOURCE = """import warp as wp

TILE_M = wp.constant(32)  # rows per tile
TILE_K: int = 16
THREADS = 64
"""


def test_current_values_and_edits() -> None:
    assert current_values(SOURCE, ["TILE_M", "TILE_K", "THREADS", "MISSING"]) == {
        "TILE_M": 32,
        "TILE_K": 16,
        "THREADS": 64,
    }
    edits = constant_edits(SOURCE, {"TILE_M": 64, "THREADS": 128})
    assert [(e.line, e.col, e.end_col, e.new_text) for e in edits] == [
        (3, 9, 24, "wp.constant(64)"),
        (5, 10, 12, "128"),
    ]
    text, _ = apply_edits(SOURCE, edits)
    assert "TILE_M = wp.constant(64)  # rows per tile" in text and "THREADS = 128\n" in text
    assert current_values(text, ["TILE_M", "THREADS"]) == {"TILE_M": 64, "THREADS": 128}
    with pytest.raises(KeyError):
        constant_edits(SOURCE, {"NOPE": 1})
