"""Every subcommand's ``--help`` works, through the real console entry point.

The subcommands are enumerated from the parser itself, so one added later is covered
without touching this file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from warp_harness.cli import build_parser


def _subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert actions, "the top-level parser has no subcommands"
    return sorted(name for a in actions for name in a.choices)


def test_the_dynamic_and_static_subcommands_are_enumerated() -> None:
    names = set(_subcommands())
    assert {"check", "rule", "rules", "ci", "bench", "replay", "tune", "calibrate", "daemon"} <= names


@pytest.mark.parametrize("command", _subcommands())
def test_subcommand_help_exits_0_with_usage(command: str) -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", command, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: warp-harness {command}"), result.stdout[:200]
    assert "Traceback" not in result.stderr


def test_top_level_help_exits_0() -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and result.stdout.startswith("usage: warp-harness"), result.stderr
