"""Parse Warp codegen error text into file/line/column positions.

Warp keeps the exception class of a codegen failure (RuntimeError, ValueError, TypeError,
WarpCodegen*Error, KeyError ...) and prefixes the message with one
``Error while parsing function "NAME" at FILE:LINE:`` block per function on the call chain
(the kernel first, then each ``@wp.func`` it calls), each followed by the source line and
a ``;``. The original message comes last. There is no column: we place it on the line.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FRAME_RE = re.compile(r'Error while parsing function "(?P<func>[^"]+)" at (?P<path>.+?):(?P<line>\d+):\n')


@dataclass(frozen=True)
class CodegenFrame:
    function: str
    path: str
    line: int
    source: str  # the offending source line as Warp printed it (may be empty)
    col: int
    end_col: int


@dataclass(frozen=True)
class CodegenError:
    frames: tuple[CodegenFrame, ...]  # outermost (the kernel) first
    message: str  # Warp's own message, without the location prefix
    exc_type: str

    def primary(self, path: str | Path | None = None) -> CodegenFrame | None:
        """The innermost frame in ``path`` (the file being checked), else the outermost frame."""
        if not self.frames:
            return None
        if path is not None:
            wanted = _norm(path)
            for frame in reversed(self.frames):
                if _norm(frame.path) == wanted:
                    return frame
        return self.frames[0]


def _norm(path: str | Path) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return str(path)


def exception_text(exc: BaseException) -> str:
    """The message of an exception as Warp wrote it (KeyError quotes its str(): use args[0])."""
    if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc)


_QUOTED_RE = re.compile(r"`([^`]+)`|'([^']+)'|\"([^\"]+)\"|\b(wp\.[A-Za-z_][A-Za-z0-9_.]*)")


def _span(source: str, message: str) -> tuple[int, int]:
    """Columns on the line: a name the message mentions if it is on the line, else the statement."""
    stripped = source.strip()
    if not stripped:
        return 0, 0
    start = len(source) - len(source.lstrip())
    end = start + len(stripped)
    for m in _QUOTED_RE.finditer(message):
        token = next(g for g in m.groups() if g)
        if len(token) > 1 and token in source:
            col = source.index(token)
            return col, col + len(token)
    return start, end


def parse_codegen_error(text: str, exc_type: str = "Exception") -> CodegenError | None:
    """Split Warp's error text into frames and the message; None if it carries no location."""
    pos = 0
    frames: list[CodegenFrame] = []
    raw: list[tuple[str, str, int, str]] = []
    while True:
        m = _FRAME_RE.match(text, pos)
        if m is None:
            break
        end = text.find("\n;", m.end())
        if end < 0:
            source, pos = text[m.end() :], len(text)
        else:
            source, pos = text[m.end() : end], end + 2
        raw.append((m.group("func"), m.group("path"), int(m.group("line")), source.rstrip("\n")))
    if not raw:
        # some errors are wrapped by another prefix; look for the first frame anywhere
        idx = text.find('Error while parsing function "')
        if idx <= 0:
            return None
        inner = parse_codegen_error(text[idx:], exc_type)
        if inner is None:
            return None
        return CodegenError(inner.frames, inner.message, exc_type)
    message = text[pos:].strip()
    for func, path, line, source in raw:
        col, end_col = _span(source, message)
        frames.append(CodegenFrame(func, path, line, source, col, end_col))
    return CodegenError(tuple(frames), message, exc_type)


_ASSERT_RE = re.compile(r"Assertion failed: '(?P<cond>[^']*)'(?:\s*\n\s*At '(?P<where>[^']+)')?")


_PY_ASSERT_RE = re.compile(r'^\(\(void\)"(?P<src>(?:[^"\\]|\\.)*)",')


@dataclass(frozen=True)
class NativeAssertion:
    condition: str
    # where it fired: a native header and line (.../warp/native/array.h:442), or, for an
    # ``assert`` in Python kernel code built in debug mode, the Python file and line
    where: str | None

    @property
    def is_bounds_check(self) -> bool:
        return "arr.shape" in self.condition

    @property
    def python_source(self) -> str | None:
        """The Python source text of a kernel-level ``assert`` (Warp emits
        ``assert(((void)"<source>", cond))``), else None."""
        m = _PY_ASSERT_RE.match(self.condition)
        return m.group("src").replace('\\"', '"') if m else None

    @property
    def python_location(self) -> tuple[str, int] | None:
        """(file, line) when the assertion fired in a ``.py`` file (through ``#line``)."""
        if not self.where or ":" not in self.where:
            return None
        file, _, line = self.where.rpartition(":")
        if not file.endswith(".py") or not line.isdigit():
            return None
        return file, int(line)


def parse_native_assertion(output: str) -> NativeAssertion | None:
    """The last ``Assertion failed: '...'`` a native Warp build printed before dying, if any."""
    found = list(_ASSERT_RE.finditer(output))
    if not found:
        return None
    m = found[-1]
    return NativeAssertion(m.group("cond"), m.group("where"))


def kernel_return_error(kernel: Any) -> str | None:
    """Warp's refusal of a kernel that returns a value or has a return annotation, or None.

    Warp checks this in ``ModuleBuilder.build_kernel`` (when the module is loaded), not in
    ``adj.build``, so the codegen stage asks the same question itself: the kernel then gets
    a codegen error (WHD002) with Warp's own message instead of a failed module compile.
    Call after ``kernel.adj.build`` (``adj.tree`` and ``adj.return_var`` exist then).
    """
    context: Any = importlib.import_module("warp._src.context")
    builder: Any = getattr(context, "ModuleBuilder", None)
    text = getattr(context, "_KERNEL_RETURN_ERROR", "Warp kernels cannot return values.")
    try:
        refused = bool(
            builder._kernel_has_invalid_return_annotation(kernel) or builder._kernel_has_value_return(kernel)
        )
    except AttributeError:  # another Warp version: its two checks, as of 1.19
        refused = getattr(kernel, "return_annotation", None) is not None
    refused = refused or getattr(kernel.adj, "return_var", None) is not None
    return f"'{kernel.key}': {text}" if refused else None
