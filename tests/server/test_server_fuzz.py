"""A hypothesis state machine against the real server: random open/change/close sequences with
edits that cut tokens, unbalance brackets, add huge lines, non-ASCII and NUL characters.

Invariants: the server process stays alive and answers; each awaited version gets its
diagnostics; they equal a fresh analysis of the text the client holds.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule
from lsp_helpers import fresh_diagnostic_data
from stdio_client import StdioClient, utf16_col

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = [p.read_text() for p in sorted(EXAMPLES.glob("*.py")) + sorted((EXAMPLES / "buggy").glob("*.py"))]
PIECES = [
    "(",
    ")",
    "[",
    "]",
    "{",
    ":",
    "\n",
    "    ",
    "\t",
    '"',
    "'''",
    "#",
    "\\",
    "x[i]",
    "wp.",
    "def ",
    "@wp.kernel\n",
]
INSERTS = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),  # any code point, NUL and non-BMP included
    # huge lines, long but shallow: a deep expression's fate depends on the recursion limit, which
    # hypothesis raises while it runs (tests/model/test_source.py covers deep nesting)
    st.integers(1000, 20000).map(lambda n: "y = [" + "1, " * n + "1]\n"),
    st.integers(1000, 80000).map(lambda n: 's = "' + "x" * n + '"\n'),
)
EDITS_TRIED = itertools.count()


def line_starts(text: str) -> list[int]:
    """Offsets where LSP lines start: after each \\r\\n, \\r or \\n (the spec's only line ends)."""
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r(?!\n)|\n", text)]


def snap(text: str, offset: int) -> int:
    """An offset moved off the middle of a \\r\\n pair (no LSP position points there)."""
    return offset - 1 if offset > 0 and text[offset - 1 : offset + 1] == "\r\n" else offset


def position(text: str, starts: list[int], offset: int) -> dict[str, int]:
    """The LSP position (UTF-16 columns) of a character offset."""
    line = bisect.bisect_right(starts, offset) - 1
    return {"line": line, "character": utf16_col(text[starts[line] :], offset - starts[line])}


class ServerMachine(RuleBasedStateMachine):
    documents = Bundle("documents")

    def __init__(self) -> None:
        super().__init__()
        self.client = CLIENT
        self.texts: dict[str, tuple[str, int]] = {}

    def _check(self, uri: str) -> None:
        text, version = self.texts[uri]
        _, diagnostics = self.client.wait_diagnostics(uri, version, timeout=60)
        path = uri.removeprefix("file://")
        assert [d.get("data") for d in diagnostics] == fresh_diagnostic_data(text, path)

    @rule(target=documents, seed=st.sampled_from(SEEDS))
    def open(self, seed: str) -> str:
        uri = (ROOT / f"doc{next(NAMES)}.py").as_uri()
        self.texts[uri] = (seed, 1)
        self.client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": seed}},
        )
        self._check(uri)
        return uri

    def _edit(self, uri: str, data: st.DataObject) -> None:
        text, version = self.texts[uri]
        starts = line_starts(text)
        offset = snap(text, data.draw(st.integers(0, len(text))))
        length = data.draw(st.sampled_from([0, 0, 1, 2, 7, 40]))
        end = snap(text, min(len(text), offset + length))
        new = data.draw(INSERTS) if length == 0 or data.draw(st.booleans()) else ""
        change = {
            "range": {"start": position(text, starts, offset), "end": position(text, starts, end)},
            "text": new,
        }
        text = text[:offset] + new + text[end:]
        self.texts[uri] = (text, version + 1)
        next(EDITS_TRIED)
        self.client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version + 1}, "contentChanges": [change]},
        )

    @rule(uri=documents, data=st.data())
    def edit(self, uri: str, data: st.DataObject) -> None:
        self._edit(uri, data)
        self._check(uri)

    @rule(uri=documents, data=st.data(), count=st.integers(2, 30))
    def burst(self, uri: str, data: st.DataObject, count: int) -> None:
        """Edits faster than the debounce: only the last version must be published."""
        for _ in range(count):
            self._edit(uri, data)
        self._check(uri)

    @rule(uri=consumes(documents))
    def close(self, uri: str) -> None:
        del self.texts[uri]
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        _, diagnostics = self.client.wait_diagnostics(uri, None, timeout=60)
        assert diagnostics == []

    @invariant()
    def alive(self) -> None:
        assert self.client.alive()

    def teardown(self) -> None:
        for uri in list(self.texts):
            self.close(uri)
        assert self.client.request("warp-harness/serverInfo", {}, timeout=30)["warp_imported"] is False


NAMES = itertools.count()
ROOT = Path("/nonexistent")
CLIENT: StdioClient


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    global CLIENT, ROOT
    ROOT = tmp_path_factory.mktemp("fuzz")
    CLIENT = StdioClient([sys.executable, "-m", "warp_harness", "serve"], ROOT)
    CLIENT.initialize(ROOT, {"settings": {"debounce_ms": 20}})
    yield CLIENT
    CLIENT.close()
    print(f"\nserver fuzzing: {next(EDITS_TRIED)} edits tried")


def test_server_state_machine(server: StdioClient) -> None:
    ServerMachine.TestCase.settings = settings(
        max_examples=int(os.environ.get("WH_FUZZ_EXAMPLES", "25")),
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    ServerMachine.TestCase().runTest()
