"""Half-typed code, syntax errors and a storm of edits: the server stays up and ends up right."""

from __future__ import annotations

import random
from pathlib import Path

from lsp_helpers import Document, fresh_diagnostic_data, plain, server_info
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_server_documents import EXAMPLES, copy_example

TWO_KERNELS = (
    (EXAMPLES / "saxpy.py").read_text() + "\n\n" + (EXAMPLES / "buggy/mixed_precision.py").read_text()
)


async def test_half_typed_line_gives_a_syntax_diagnostic_and_keeps_the_rest(
    client: LanguageClient, tmp_path: Path
) -> None:
    path = tmp_path / "two.py"
    path.write_text(TWO_KERNELS)
    doc = Document(client, path).open()
    before = await doc.diagnostics()
    assert sorted(str(d.code) for d in before) == ["WH003", "WH003", "WH004"]
    line = next(i for i, t in enumerate(doc.text.splitlines()) if "y[i] = a * x[i]" in t)
    doc.replace(line, 4, line, 4, "z = (x[i] + ")  # typing, bracket not closed yet
    during = await doc.diagnostics()
    syntax = [d for d in during if d.code == "WH000"]
    assert len(syntax) == 1 and syntax[0].range.start.line >= line
    assert sorted(str(d.code) for d in during if d.code != "WH000") == ["WH003", "WH003", "WH004"]
    doc.replace(line, 4, line, 16, "")
    assert sorted(str(d.code) for d in await doc.diagnostics()) == ["WH003", "WH003", "WH004"]


async def test_a_thousand_rapid_random_edits(client: LanguageClient, tmp_path: Path) -> None:
    """1,000 didChange notifications sent without waiting, with edits that break the syntax in
    every way typing does; the last diagnostics must be those of the final text."""
    rng = random.Random(20261202)
    path = tmp_path / "storm.py"
    path.write_text(TWO_KERNELS)
    doc = Document(client, path).open()
    await doc.diagnostics()
    pieces = [
        "(",
        ")",
        "[",
        "]",
        ":",
        "\n",
        "    ",
        "x[i]",
        " * 0.5",
        "wp.",
        "def ",
        '"',
        "#",
        "é",
        "中",
        "1.0",
        "\t",
    ]
    for _ in range(1000):
        lines = doc.text.split("\n")
        line = rng.randrange(len(lines))
        col = rng.randrange(len(lines[line]) + 1)
        if rng.random() < 0.4 and doc.text:
            end_line = min(len(lines) - 1, line + rng.choice([0, 0, 0, 1]))
            end_col = (
                rng.randrange(col, len(lines[end_line]) + 1)
                if end_line == line
                else rng.randrange(len(lines[end_line]) + 1)
            )
            doc.replace(line, col, end_line, end_col, "")
        else:
            doc.replace(line, col, line, col, "".join(rng.choice(pieces) for _ in range(rng.randint(1, 3))))
    final = await doc.diagnostics(timeout=60)
    assert [plain(d.data) for d in final] == fresh_diagnostic_data(doc.text, str(path))
    info = await server_info(client)
    # the debounce coalesced the storm: far fewer analyses than edits
    assert info["analyses"] < 500


async def test_non_ascii_columns_are_utf16(client: LanguageClient, tmp_path: Path) -> None:
    """A non-BMP character before the finding takes two UTF-16 units (LSP's default encoding)."""
    path = copy_example(tmp_path, "buggy/mixed_precision.py")
    text = path.read_text().replace("x[i] = x[i] * 0.5", 'x[i] = x[i] * 0.5 if "😀" else x[i]')
    text = text.replace('x[i] = x[i] * 0.5 if "😀" else x[i]', 's = "😀"; x[i] = x[i] * 0.5')
    doc = Document(client, path, text).open()
    diagnostics = await doc.diagnostics()
    line_text = text.splitlines()[8]
    target = next(d for d in diagnostics if d.code == "WH003" and "float16" in d.message)
    char_col = line_text.index("x[i] * 0.5")
    assert target.range.start.character == char_col + 1  # 😀 is one character, two UTF-16 units
    assert target.data["location"]["col"] == char_col


async def test_hover_shows_signature_and_launch_sites(client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(client, copy_example(tmp_path, "saxpy.py")).open()
    await doc.diagnostics()
    lines = doc.text.splitlines()
    use = next(i for i, t in enumerate(lines) if "wp.launch(saxpy" in t)
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            position=types.Position(use, lines[use].index("saxpy") + 2),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    text = hover.contents.value
    assert "def saxpy(a: float32, x: array(dtype=float32, ndim=1), y: array(dtype=float32, ndim=1))" in text
    assert f"- line {use + 1}: `wp.launch(dim=n)`" in text
    assert "no daemon results yet" in text
    nothing = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri), position=types.Position(0, 1)
        )
    )
    assert nothing is None


async def test_exotic_line_separators_do_not_desync_the_document(
    client: LanguageClient, tmp_path: Path
) -> None:
    """\\u2028 and \\x0c are not line ends for LSP or Python; an edit below them must land on its line."""
    path = copy_example(tmp_path, "saxpy.py")
    text = path.read_text().replace('"""y = a * x + y', '"""y\u2028=\x0ca * x + y', 1)
    doc = Document(client, path, text).open()
    assert await doc.diagnostics() == []
    line = next(i for i, t in enumerate(doc.text.split("\n")) if "y[i] = a * x[i]" in t)
    doc.replace(line, 4, line, 4, "q = [k for k in range(3)]\n    ")
    (diagnostic,) = await doc.diagnostics()
    assert diagnostic.code == "WH002" and diagnostic.range.start.line == line
    assert [plain(diagnostic.data)] == fresh_diagnostic_data(doc.text, str(path))
