"""Jupyter notebooks (``.ipynb``): the code cells checked as one module, records placed by cell.

Reading uses ``nbformat`` (the Jupyter project's reference implementation of the format: it
validates against the published schema, upgrades nbformat 3 files, and normalises a cell's
``source`` whether it is stored as one string or a list of lines). Writing does not go through
``nbformat.write``: that re-serialises the whole document (key order, indentation, escapes), so a
fix would rewrite metadata and outputs too. Fixes are written by replacing the bytes of the edited
cells' ``source`` values in the original JSON text, in the style they were stored in; every byte
outside those values stays as it was.

The module the checker sees is every code cell in order, each ending in a newline, with IPython
syntax masked line for line (``%magic`` and ``!shell`` lines, ``x = !cmd``, ``obj?``, and whole
``%%bash``-style cell magics), so a record's line maps back to one (cell, line in cell).
``Location.cell`` is the 1-based position of the cell in the notebook's ``cells`` list (markdown
cells count too: "cell 3" is the third cell from the top); ``line`` is then the line inside it.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_harness.record import Fix, Location, Record, TextEdit

if TYPE_CHECKING:
    pass

NOTEBOOK_SUFFIX = ".ipynb"
# cell magics whose body is Python (IPython runs it): only their first line is masked
PYTHON_BODY_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pypy"})
_LINE_MAGIC = re.compile(r"^(\s*)[%!]")
_ASSIGNED_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[%!]")
_HELP = re.compile(r"^(\s*)(\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")


def is_notebook(path: str | Path) -> bool:
    return str(path).endswith(NOTEBOOK_SUFFIX)


# ---------------------------------------------------------------------------------------- masking


def mask_cell(source: str) -> tuple[str, frozenset[int]]:
    """``source`` with IPython syntax replaced by plain Python of the same line count, and the
    0-based lines that were masked (their columns no longer match the cell's)."""
    lines = source.splitlines(keepends=True)
    masked: set[int] = set()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(None, 1)[0] if lines[first].strip() != "%%" else ""
        masked.add(first)
        lines[first] = _newline_of(lines[first])
        if name not in PYTHON_BODY_CELL_MAGICS:  # %%bash, %%writefile, %%html ...: not Python at all
            for i in range(first + 1, len(lines)):
                masked.add(i)
                lines[i] = _newline_of(lines[i])
    for i, line in enumerate(lines):
        if i in masked:
            continue
        assigned = _ASSIGNED_MAGIC.match(line)
        if assigned is not None:
            lines[i] = f"{assigned.group(1)}{assigned.group(2)} = None{_newline_of(line)}"
            masked.add(i)
            continue
        magic = _LINE_MAGIC.match(line) or _HELP.match(line)
        if magic is not None:
            lines[i] = f"{magic.group(1)}pass{_newline_of(line)}"
            masked.add(i)
    return "".join(lines), frozenset(masked)


def _newline_of(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


# ---------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Cell:
    """One cell: its 1-based number in the notebook, its kind and its source text."""

    number: int
    kind: str
    source: str


@dataclass(frozen=True)
class Notebook:
    cells: tuple[Cell, ...]
    python: bool  # the notebook's language is Python (or unstated)
    major: int  # nbformat major version of the file as stored


class NotebookError(ValueError):
    """The file is not a notebook nbformat can read."""


def read_notebook(text: str) -> Notebook:
    """The notebook in ``text``. A notebook is untrusted input: anything that is not one (not JSON,
    nested past the parser's depth, cells that are not objects, a source that is neither text nor a
    list of lines) raises NotebookError, which `check` reports as one record for the file."""
    import nbformat

    try:
        raw = json.loads(text)
    except RecursionError as exc:
        raise NotebookError("not a JSON notebook: nested too deeply to read") from exc
    except ValueError as exc:
        raise NotebookError(f"not a JSON notebook: {exc}") from exc
    if not isinstance(raw, dict):
        raise NotebookError("not a notebook: the top level is not a JSON object")
    try:
        from_dict: Any = nbformat.from_dict  # nbformat has no type hints
        convert: Any = nbformat.convert
        node = from_dict(raw)
        major = int(node.get("nbformat", 4))
        if major != 4:
            node = convert(node, 4)
        if not isinstance(node, dict):
            raise NotebookError("the top level is not a JSON object")
        cells = tuple(_cells(node.get("cells")))
        python = _is_python(node.get("metadata"))
    except NotebookError as exc:
        raise NotebookError(f"not a notebook: {exc}") from exc
    except RecursionError as exc:
        raise NotebookError("not a notebook: nested too deeply to read") from exc
    except Exception as exc:  # nbformat raises many kinds on a malformed document
        raise NotebookError(f"not a notebook nbformat can read: {exc}") from exc
    return Notebook(cells, python, major)


def _cells(value: object) -> Iterable[Cell]:
    if value is None:
        return
    if not isinstance(value, list):
        raise NotebookError("`cells` is not a list")
    for number, cell in enumerate(value, 1):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {number} is not a JSON object")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f"the source of cell {number} is neither text nor a list of lines")
        kind = cell.get("cell_type", "code")
        if not isinstance(kind, str):
            raise NotebookError(f"the cell_type of cell {number} is not text")
        yield Cell(number, kind, source)


def _is_python(metadata: object) -> bool:
    """The notebook's language is Python, or unstated."""
    if metadata is None:
        return True
    if not isinstance(metadata, dict):
        raise NotebookError("`metadata` is not a JSON object")
    language = None
    for key, name in (("language_info", "name"), ("kernelspec", "language")):
        section = metadata.get(key)
        if isinstance(section, dict) and section.get(name):
            language = section[name]
            break
    return language is None or str(language).lower() in ("python", "python3", "ipython")


# ---------------------------------------------------------------------------------------- joining


@dataclass(frozen=True)
class Joined:
    """The code cells as one module, and where each cell's lines are in it."""

    text: str
    numbers: tuple[int, ...]  # cell number of each code cell joined
    starts: tuple[int, ...]  # 1-based module line of each joined cell's first line
    counts: tuple[int, ...]  # lines each joined cell takes
    masked: frozenset[int] = field(default_factory=frozenset)  # 1-based module lines masked

    def place(self, line: int) -> tuple[int, int] | None:
        """(cell number, 1-based line in the cell) of module ``line``; None without code cells."""
        if not self.numbers:
            return None
        pos = max(bisect.bisect_right(self.starts, line) - 1, 0)
        # a line past a cell (the end of the module, an empty cell) belongs to the last one holding lines
        while pos > 0 and self.counts[pos] == 0:
            pos -= 1
        local = line - self.starts[pos] + 1
        return self.numbers[pos], min(max(local, 1), max(self.counts[pos], 1))

    def module_line(self, cell: int, line: int) -> int | None:
        """The module line of ``line`` (1-based) of cell ``cell``; None when that cell is not joined."""
        try:
            pos = self.numbers.index(cell)
        except ValueError:
            return None
        return self.starts[pos] + line - 1


def join_cells(cells: Sequence[Cell] | Sequence[tuple[int, str]]) -> Joined:
    """Join code cells (``Cell`` objects of kind ``code``, or ``(number, source)`` pairs)."""
    parts: list[str] = []
    numbers: list[int] = []
    starts: list[int] = []
    counts: list[int] = []
    masked: set[int] = set()
    line = 1
    for item in cells:
        if isinstance(item, Cell):
            if item.kind != "code":
                continue
            number, source = item.number, item.source
        else:
            number, source = item
        text, hidden = mask_cell(source)
        if text and not text.endswith("\n"):
            text += "\n"
        n = text.count("\n")
        numbers.append(number)
        starts.append(line)
        counts.append(n)
        masked.update(line + i for i in hidden)
        parts.append(text)
        line += n
    return Joined("".join(parts), tuple(numbers), tuple(starts), tuple(counts), frozenset(masked))


# ---------------------------------------------------------------------------------------- placing records


def _cell_lines(cells: Mapping[int, str], number: int) -> list[str]:
    return cells.get(number, "").splitlines() or [""]


def place_location(loc: Location, joined: Joined, cells: Mapping[int, str]) -> Location:
    """``loc`` (module lines) as a location in a cell; an end past the cell is clamped to its end."""
    start = joined.place(loc.line)
    if start is None:
        return loc
    number, line = start
    end_line, end_col = loc.end_line, loc.end_col
    if end_line is not None:
        end = joined.place(end_line)
        local_end = end_line - joined.starts[joined.numbers.index(number)] + 1
        if end is None or end[0] != number or local_end != end[1]:
            text = _cell_lines(cells, number)
            end_line, end_col = len(text), len(text[-1])
        else:
            end_line = end[1]
    return replace(loc, line=line, end_line=end_line, end_col=end_col, cell=number)


def _place_fix(fix: Fix, cell: int, joined: Joined) -> Fix | None:
    """The fix in the cell's coordinates; None when an edit leaves the cell or touches a masked line."""
    edits: list[TextEdit] = []
    for edit in fix.edits:
        start, end = joined.place(edit.line), joined.place(edit.end_line)
        if start is None or end is None or start[0] != cell or end[0] != cell:
            return None
        if any(line in joined.masked for line in range(edit.line, edit.end_line + 1)):
            return None
        base = joined.module_line(cell, 1)
        assert base is not None
        edits.append(replace(edit, line=edit.line - base + 1, end_line=edit.end_line - base + 1))
    return replace(fix, edits=tuple(edits))


def place_records(
    records: Iterable[Record], path: str, joined: Joined, cells: Mapping[int, str]
) -> list[Record]:
    """Records of the joined module placed in their cells, sorted by stage, severity, cell, line."""
    placed: list[Record] = []
    for record in records:
        loc = place_location(record.location, joined, cells)
        fix = record.fix
        if fix is not None and loc.cell is not None:
            fix = _place_fix(fix, loc.cell, joined)
        related = tuple(
            replace(r, location=place_location(r.location, joined, cells)) if r.location.path == path else r
            for r in record.related
        )
        placed.append(replace(record, location=loc, fix=fix, related=related))
    placed.sort(key=Record.report_key)
    return placed


# ---------------------------------------------------------------------------------------- writing


def source_spans(raw: str) -> list[tuple[int, int]]:
    """The character spans of each cell's ``source`` value in a notebook's JSON text (nbformat 4),
    in cell order. Raises NotebookError when the text is not laid out as nbformat 4."""
    decoder = json.JSONDecoder()
    scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]
    ws = re.compile(r"[ \t\n\r]*")

    def skip(i: int) -> int:
        m = ws.match(raw, i)
        return m.end() if m else i

    def value_end(i: int) -> int:
        try:
            _, end = decoder.raw_decode(raw, i)
        except (ValueError, RecursionError) as exc:
            raise NotebookError(f"bad JSON at {i}: {exc}") from exc
        return int(end)

    def members(i: int) -> Iterable[tuple[str, int, int]]:
        """(key, value start, value end) of the object starting at ``i``."""
        if raw[i : i + 1] != "{":
            raise NotebookError(f"expected an object at {i}")
        i = skip(i + 1)
        if raw[i : i + 1] == "}":
            return
        while True:
            if raw[i : i + 1] != '"':
                raise NotebookError(f"expected a key at {i}")
            key, i = scanstring(raw, i + 1)
            i = skip(i)
            if raw[i : i + 1] != ":":
                raise NotebookError(f"expected ':' at {i}")
            start = skip(i + 1)
            end = value_end(start)
            yield key, start, end
            i = skip(end)
            if raw[i : i + 1] == ",":
                i = skip(i + 1)
                continue
            if raw[i : i + 1] == "}":
                return
            raise NotebookError(f"expected ',' or '}}' at {i}")

    spans: list[tuple[int, int]] = []
    start = skip(0)
    for key, value_start, _ in members(start):
        if key != "cells":
            continue
        if raw[value_start : value_start + 1] != "[":
            raise NotebookError("cells is not a list")
        i = skip(value_start + 1)
        while raw[i : i + 1] != "]":
            cell_end = value_end(i)
            found = [(s, e) for k, s, e in members(i) if k == "source"]
            if not found:
                raise NotebookError(f"a cell without source at {i}")
            spans.append(found[0])
            i = skip(cell_end)
            if raw[i : i + 1] == ",":
                i = skip(i + 1)
        return spans
    raise NotebookError("no cells list")


def _render_source(raw: str, span: tuple[int, int], new: str) -> str:
    """``new`` as a JSON value in the style of the value at ``span`` (a string, or a list of lines
    laid out as the original list was)."""
    old = raw[span[0] : span[1]]
    ascii_only = "\\u" in old and old.isascii()
    if old.startswith('"'):
        return json.dumps(new, ensure_ascii=ascii_only)
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in new.splitlines(keepends=True)]
    if not items:
        return "[]"
    inner = old[1:-1]
    lead = re.match(r"\s*", inner)
    opening = lead.group() if lead else ""
    closing = inner[len(inner.rstrip()) :]
    if not inner.strip():  # an empty list: indent one step past the key's line, as nbformat writes
        line_start = raw.rfind("\n", 0, span[0]) + 1
        indent = re.match(r"[ \t]*", raw[line_start:])
        key_indent = indent.group() if indent else ""
        opening, closing = "\n" + key_indent + " ", "\n" + key_indent
    separator = "," + (opening if opening else " ")
    if inner.strip():
        between = re.search(r'"\s*,(\s*)"', inner)  # the layout between two items, when there are two
        if between is not None:
            separator = "," + between.group(1)
    return "[" + opening + separator.join(items) + closing + "]"


def write_cells(raw: str, sources: Mapping[int, str]) -> str:
    """``raw`` (a notebook's JSON text) with the ``source`` of each cell number in ``sources``
    replaced; every other byte unchanged."""
    spans = source_spans(raw)
    out: list[str] = []
    last = 0
    for number in sorted(sources):
        if not 1 <= number <= len(spans):
            raise NotebookError(f"no cell {number}")
        start, end = spans[number - 1]
        out.append(raw[last:start])
        out.append(_render_source(raw, (start, end), sources[number]))
        last = end
    out.append(raw[last:])
    return "".join(out)


# ---------------------------------------------------------------------------------------- fixing


def fix_records_in_cells(
    sources: Mapping[int, str], records: Sequence[Record], safe_only: bool
) -> tuple[dict[int, str], list[Record]]:
    """Each cell's text with the fixes of its records applied (each fix whole or not at all)."""
    from warp_harness.fixes import apply_fixes, compatible_fixes

    changed: dict[int, str] = {}
    chosen_all: list[Record] = []
    for number in sorted({r.location.cell for r in records if r.location.cell is not None}):
        text = sources.get(number, "")
        mine = [r for r in records if r.location.cell == number]
        chosen = compatible_fixes(text, mine, safe_only)
        new_text, applied = apply_fixes(text, chosen, safe_only)
        if applied and new_text != text:
            changed[number] = new_text
            chosen_all.extend(chosen)
    return changed, chosen_all


__all__ = [
    "Cell",
    "Joined",
    "Notebook",
    "NotebookError",
    "is_notebook",
    "join_cells",
    "mask_cell",
    "place_records",
    "read_notebook",
    "source_spans",
    "write_cells",
]
