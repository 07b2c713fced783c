"""WH016 unused-suppression: which comments are unused, which are never judged, and its fix."""

from __future__ import annotations

from warp_harness.config import Settings
from warp_harness.engine import analyse_source
from warp_harness.fixes import apply_fixes
from warp_harness.incremental import IncrementalAnalyser

HEAD = """\
import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
"""
RACE = "    out[0] = out[0] + x[i]"  # WH010 on this line


def _wh016(text: str, settings: Settings | None = None) -> list[tuple[int, str]]:
    records = analyse_source(text, "k.py", settings).records
    return [(r.location.line, r.message) for r in records if r.rule == "WH016"]


def test_a_used_suppression_is_not_reported() -> None:
    assert _wh016(HEAD + RACE + "  # wh: ignore[WH010]\n") == []
    assert _wh016(HEAD + RACE + "  # wh: ignore[WH01]\n") == []  # a prefix
    assert _wh016(HEAD + RACE + "  # wh: ignore\n") == []


def test_unused_line_and_file_suppressions() -> None:
    text = HEAD + "    x[i] = 1.0  # wh: ignore\n" + "# wh: ignore-file[WH012]\n"
    assert _wh016(text) == [
        (7, "unused suppression `# wh: ignore`: it silences nothing"),
        (8, "unused suppression `# wh: ignore-file[WH012]`: it silences nothing"),
    ]


def test_codes_outside_the_static_rules_are_never_judged() -> None:
    text = HEAD + "    x[i] = 1.0  # wh: ignore[WHD021, WH000, WH016]\n"
    assert _wh016(text) == []


def test_nothing_is_judged_in_a_file_with_a_syntax_error() -> None:
    assert _wh016(HEAD + "    x[i] = 1.0  # wh: ignore[WH010]\ndef broken(:\n") == []


def test_only_an_explicit_wh016_silences_the_report() -> None:
    # a bare `# wh: ignore` does not silence its own report, `# wh: ignore[WH010, WH016]` does
    assert _wh016(HEAD + "    x[i] = 1.0  # wh: ignore\n") != []
    assert _wh016(HEAD + "    x[i] = 1.0  # wh: ignore[WH010, WH016]\n") == []


def test_the_fix_removes_the_comment_or_the_unused_codes() -> None:
    text = (
        HEAD + RACE + "  # wh: ignore[WH010, WH003]\n" + "    # wh: ignore-file[WH012]\n" + "    x[i] = 1.0\n"
    )
    records = analyse_source(text, "k.py").records
    fixed, applied = apply_fixes(text, [r for r in records if r.rule == "WH016"])
    assert applied == 2
    assert fixed == HEAD + RACE + "  # wh: ignore[WH010]\n" + "    x[i] = 1.0\n"
    assert _wh016(fixed) == []


def test_a_rule_the_settings_leave_out_still_counts() -> None:
    # WH010 does not run (ignored, or not selected), yet it would report the line: the comment is used
    for settings in (Settings().merged({"ignore": ["WH010"]}), Settings().merged({"select": ["WH016"]})):
        assert _wh016(HEAD + RACE + "  # wh: ignore[WH010]\n", settings) == []
        assert _wh016(HEAD + RACE + "  # wh: ignore\n", settings) == []
        assert _wh016(HEAD + RACE + "  # wh: ignore[WH010, WH003]\n", settings) == [
            (7, "unused code WH003 in `# wh: ignore`")
        ]


def test_the_incremental_analysis_judges_alike_after_edits() -> None:
    analyser = IncrementalAnalyser()
    texts = [
        HEAD + RACE + "  # wh: ignore[WH010]\n",
        HEAD + "    out[0] = x[i]  # wh: ignore[WH010]\n",  # the race is gone: the comment is unused
        HEAD + RACE + "  # wh: ignore[WH010]\n",
    ]
    for settings in (Settings(), Settings().merged({"ignore": ["WH010"]})):
        for text in texts:
            assert (
                analyser.analyse(text, "k.py", settings).records
                == analyse_source(text, "k.py", settings).records
            )
    assert _wh016(texts[1]) == [(7, "unused suppression `# wh: ignore[WH010]`: it silences nothing")]
