"""Every output format through the real `warp-harness check` on the bundled buggy examples."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from warp_harness.output import FORMATS

REPO = Path(__file__).resolve().parents[1]


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "check", "examples/buggy", "--exit-zero", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.parametrize("format", FORMATS)
def test_check_writes_every_format(format: str) -> None:
    done = _check("--output-format", format)
    assert done.returncode == 0, done.stderr
    assert "mixed_precision.py" in done.stdout


def test_the_line_formats_agree_with_json_on_what_was_found() -> None:
    entries = json.loads(_check("--output-format", "json").stdout)["results"]
    places = [(e["path"], e["location"]["line"], e["rule"]) for e in entries]
    concise = _check("--output-format", "concise").stdout.splitlines()
    assert [
        (p, int(line), rest.split()[0]) for p, line, _, rest in (c.split(":", 3) for c in concise)
    ] == places
    lines = [json.loads(line) for line in _check("--output-format", "json-lines").stdout.splitlines()]
    assert lines == entries
    gitlab = json.loads(_check("--output-format", "gitlab").stdout)
    assert [
        (i["location"]["path"], i["location"]["lines"]["begin"], i["check_name"]) for i in gitlab
    ] == places
