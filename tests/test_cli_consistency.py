"""One spelling per idea across the subcommands, and no option without help (#35: `--format` on some,
`--output-format` on others, `--output`/`--output-file`, `--profile`/`--target`)."""

from __future__ import annotations

import argparse

import pytest

from warp_harness.cli import build_parser


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


SUBCOMMANDS = _subcommands()


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_option_has_help(name: str) -> None:
    actions = [a for a in SUBCOMMANDS[name]._actions if not isinstance(a, argparse._HelpAction)]
    assert [a.option_strings or [a.dest] for a in actions if not a.help] == []


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_the_same_idea_has_the_same_spelling(name: str) -> None:
    options = {o for a in SUBCOMMANDS[name]._actions for o in a.option_strings}
    if "--format" in options or "--json" in options:
        assert "--output-format" in options, name
    if "--output" in options:
        assert "--output-file" in options, name
    if "--profile" in options:
        assert "--target" in options, name


def test_the_aliases_mean_the_same() -> None:
    parser = build_parser()
    assert parser.parse_args(["results", "--output-format", "json"]).json is True
    assert parser.parse_args(["results", "--json"]).json is True
    assert parser.parse_args(["results"]).json is False
    assert parser.parse_args(["calibrate", "--output-file", "p.toml"]).output == "p.toml"
    assert parser.parse_args(["bench", "--target", "sm_90"]).profile == "sm_90"
    assert parser.parse_args(["replay", "--output-format", "json"]).format == "json"
    assert parser.parse_args(["check", "--format", "json"]).output_format == "json"
