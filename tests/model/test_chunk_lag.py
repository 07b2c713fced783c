"""Chunks moved without their nodes (`Chunk.shift`): the nodes lag until `Chunk.settle`, or until the
chunk parser reuses the chunk for a later text, which moves them to their lines."""

from __future__ import annotations

import ast

from warp_harness.model.chunks import ChunkParser, parse_chunk

_TEXT = "import warp as wp\n\n\ndef a():\n    x = 1\n\n\ndef b():\n    y = 2\n    return y\n\n\nZ = 3\n"


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=True)


def _added_line(text: str) -> str:
    """``text`` with a line added in ``a``'s body (the chunks below move one line down)."""
    return text.replace("    x = 1\n", "    x = 1\n    w = x\n")


def test_shifted_chunks_lag_until_settled() -> None:
    parser = ChunkParser()
    _, chunks = parser.parse(_TEXT)
    assert chunks is not None and [c.first for c in chunks] == [0, 3, 7, 12]
    for chunk in chunks[2:]:
        chunk.shift(1)
    b = chunks[2]
    assert (b.first, b.end, b.lag) == (8, 13, 1)
    assert b.body is not None and b.body[0].lineno == 8  # its node still where it was
    b.settle()
    assert b.lag == 0 and b.body[0].lineno == 9 and b.body[0].end_lineno == 11
    b.settle()  # once only
    assert b.body[0].lineno == 9


def test_the_parser_moves_lagging_chunks_it_reuses() -> None:
    """An edit re-chunked by the caller (the changed chunk replaced, those below shifted), then a parse of
    another text: the same tree as a fresh parse, positions included."""
    parser = ChunkParser()
    _, chunks = parser.parse(_TEXT)
    assert chunks is not None
    edited = _added_line(_TEXT)
    old = chunks[1]
    new = parse_chunk(old.first, old.end + 1, "".join(edited.splitlines(keepends=True)[3:8]))
    for chunk in chunks[2:]:
        chunk.shift(1)
    parser.replace(old, new)
    later = edited.replace("Z = 3", "Z = 4")
    parsed, reused = parser.parse(later)
    assert reused is not None
    assert any(c is chunks[2] for c in reused)  # reused, moved from where its nodes were
    assert _dump(parsed.tree) == _dump(ast.parse(later))
    # lines deleted the same way: the chunks below move up
    _, chunks = parser.parse(later)
    assert chunks is not None
    for chunk in chunks[2:]:
        chunk.shift(-1)
    parser.replace(chunks[1], parse_chunk(chunks[1].first, chunks[1].end - 1, "def a():\n    x = 1\n\n\n"))
    parser.settle()
    back = later.replace("    w = x\n", "")
    assert [s.lineno for s in chunks[2].body or []] == [s.lineno for s in ast.parse(back).body[2:3]]
    assert _dump(parser.parse(back)[0].tree) == _dump(ast.parse(back))
