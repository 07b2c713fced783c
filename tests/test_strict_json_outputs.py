"""Every JSON the command line prints parses with a strict parser (no NaN/Infinity literals, which
``JSON.parse`` rejects): each format and command that writes JSON, run for real on files that give
findings. (The daemon's clients are covered by tests/daemon/test_strict_json.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]


def strict_loads(text: str) -> Any:
    def reject(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("strict-json")
    (folder / ".git").mkdir()
    for name in ("mixed_precision.py", "launches.py", "big_tiles.py"):
        shutil.copy(REPO / "examples" / "buggy" / name, folder / name)
    return folder


COMMANDS = [
    ["check", ".", "--output-format", "json"],
    ["check", ".", "--output-format", "json-lines"],
    ["check", ".", "--output-format", "sarif"],
    ["check", ".", "--output-format", "gitlab"],
    ["check", ".", "--output-format", "rdjson"],
    ["check", ".", "--statistics", "--output-format", "json"],
    ["ci", ".", "--output-format", "json"],
    ["ci", ".", "--static-only", "--output-format", "sarif"],
    ["rules", "--output-format", "json"],
    ["rule", "WH003", "--output-format", "json"],
    ["rule", "WHD020", "--output-format", "json"],
    ["replay", ".", "--output-format", "json"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_the_json_parses_strictly(ws: Path, command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *command, "--trust"]
        if command[0] == "replay"
        else [sys.executable, "-I", "-m", "warp_harness", *command],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ws,
    )
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines() if "json-lines" in command else [done.stdout]
    assert lines and all(strict_loads(line) is not None for line in lines if line.strip())
