"""Code actions: applying what the server returns removes the diagnostic it was offered for."""

from __future__ import annotations

from pathlib import Path

from lsp_helpers import Document
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_server_documents import copy_example

from warp_harness.engine import analyse_source
from warp_harness.fixes import apply_fixes


async def test_quick_fix_removes_its_diagnostic(client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    diagnostics = await doc.diagnostics()
    target = next(d for d in diagnostics if d.code == "WH003" and "float16" in d.message)
    actions = await doc.actions([target])
    fix = next(a for a in actions if a.kind == types.CodeActionKind.QuickFix and a.title.startswith("Write"))
    assert fix.is_preferred and list(fix.diagnostics or []) == [target] and fix.edit is not None
    doc.apply(fix.edit)
    after = await doc.diagnostics()
    assert "wp.float16(0.5)" in doc.text
    assert not any(d.code == "WH003" and "float16" in d.message for d in after)
    assert len(after) == len(diagnostics) - 1


async def test_suppress_action_silences_only_that_rule_on_that_line(
    client: LanguageClient, tmp_path: Path
) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    diagnostics = await doc.diagnostics()
    target = next(d for d in diagnostics if d.code == "WH004")
    actions = await doc.actions([target])
    suppress = next(a for a in actions if a.title == "Suppress WH004 on this line")
    assert suppress.edit is not None
    doc.apply(suppress.edit)
    assert "# wh: ignore[WH004]" in doc.text.splitlines()[target.range.start.line]
    after = await doc.diagnostics()
    assert [d.code for d in after] == [d.code for d in diagnostics if d.code != "WH004"]
    # a second rule on a line that already has an ignore comment joins its list
    line = target.range.start.line
    doc.replace(line, 0, line, 0, "    counts[i] = 2.0\n")
    extra = next(d for d in await doc.diagnostics() if d.range.start.line == line)
    doc.replace(line, 0, line + 1, 0, "")
    await doc.diagnostics()
    assert extra.code == "WH003"


async def test_fix_all_applies_every_safe_fix(client: LanguageClient, tmp_path: Path) -> None:
    path = copy_example(tmp_path, "buggy/mixed_precision.py")
    doc = Document(client, path).open()
    await doc.diagnostics()
    actions = await doc.actions([], only=[types.CodeActionKind.SourceFixAll])
    (fix_all,) = actions
    assert fix_all.kind == "source.fixAll.warp-harness" and fix_all.edit is not None
    doc.apply(fix_all.edit)
    after = await doc.diagnostics()
    assert [d.code for d in after] == ["WH004"]  # its fix is unsafe: a fix-all leaves it
    expected, applied = apply_fixes(path.read_text(), analyse_source(path.read_text(), str(path)).records)
    assert applied == 2 and doc.text == expected


async def test_actions_follow_the_current_text_not_a_stale_analysis(
    client: LanguageClient, tmp_path: Path
) -> None:
    """A code action asked for right after an edit (before the debounce fires) uses the edited text."""
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    diagnostics = await doc.diagnostics()
    target = next(d for d in diagnostics if d.code == "WH003" and "int32" in d.message)
    doc.replace(0, 0, 0, 0, "# a new first line\n")
    stale = await doc.actions([target])
    assert not any(a.kind == types.CodeActionKind.QuickFix for a in stale)
    moved = next(d for d in await doc.diagnostics() if d.code == "WH003" and "int32" in d.message)
    assert moved.range.start.line == target.range.start.line + 1
    fresh = await doc.actions([moved])
    fix = next(a for a in fresh if a.title.startswith("Write"))
    assert fix.edit is not None
    doc.apply(fix.edit)
    assert not any("int32" in d.message for d in await doc.diagnostics())
