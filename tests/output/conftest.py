"""Fixtures for the renderer tests; the sample data lives in output_samples.py."""

from __future__ import annotations

import pytest
from output_samples import make_results, make_rules

from warp_harness.output.model import FileResult, RuleInfo


@pytest.fixture
def rules() -> dict[str, RuleInfo]:
    return make_rules()


@pytest.fixture
def results() -> list[FileResult]:
    return make_results()
