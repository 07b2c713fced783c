"""Driving the server: open/change documents, wait for the diagnostics of a version."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from warp_harness.fixes import apply_edits
from warp_harness.record import TextEdit

TIMEOUT_S = 30.0
DAEMON_STATE = "warp-harness/daemonState"
SERVER = [sys.executable, "-m", "warp_harness", "serve"]

CAPABILITIES = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(configuration=True, apply_edit=True),
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(
                    value_set=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]
                )
            )
        ),
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
    ),
)


def initialize_params(root: Path, options: object = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=CAPABILITIES,
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options,
    )


class Document:
    """One open document as the client sees it: its text and version, kept in step with the server."""

    def __init__(self, client: LanguageClient, path: Path, text: str | None = None) -> None:
        self.client = client
        self.path = path
        self.uri = path.as_uri()
        self.text = path.read_text(encoding="utf-8") if text is None else text
        self.version = 1

    def open(self) -> Document:
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=self.uri, language_id="python", version=1, text=self.text
                )
            )
        )
        return self

    def replace(self, line: int, col: int, end_line: int, end_col: int, new_text: str) -> None:
        """An incremental change; positions 0-based (ASCII text, so characters are UTF-16 units)."""
        self.version += 1
        self.text, _ = apply_edits(self.text, [TextEdit(line + 1, col, end_line + 1, end_col, new_text)])
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(types.Position(line, col), types.Position(end_line, end_col)),
                        text=new_text,
                    )
                ],
            )
        )

    def apply(self, edit: types.WorkspaceEdit) -> None:
        """Apply a workspace edit of this document the way an editor does (as one incremental change)."""
        edits: list[types.TextEdit] = []
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit) and change.text_document.uri == self.uri
            edits.extend(e for e in change.edits if isinstance(e, types.TextEdit))
        for e in (edit.changes or {}).get(self.uri, []):
            edits.append(e)
        # bottom-up, so earlier positions stay valid
        for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
            self.replace(
                e.range.start.line,
                e.range.start.character,
                e.range.end.line,
                e.range.end.character,
                e.new_text,
            )

    def save(self) -> None:
        self.path.write_text(self.text, encoding="utf-8")
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=self.uri))
        )

    def close(self) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=self.uri))
        )

    async def diagnostics(self, timeout: float = TIMEOUT_S) -> list[types.Diagnostic]:
        """The diagnostics published for the current version (waits for them)."""
        return await diagnostics_for(self.client, self.uri, self.version, timeout)

    async def cleared(self, timeout: float = TIMEOUT_S) -> list[types.Diagnostic]:
        """Wait for the unversioned empty publication a close sends."""
        return (await wait_published(self.client, self.uri, lambda v, d: v is None and not d, timeout))[1]

    async def actions(
        self, diagnostics: list[types.Diagnostic], only: list[str] | None = None
    ) -> list[types.CodeAction]:
        start = min(
            (d.range.start for d in diagnostics),
            key=lambda p: (p.line, p.character),
            default=types.Position(0, 0),
        )
        end = max(
            (d.range.end for d in diagnostics),
            key=lambda p: (p.line, p.character),
            default=types.Position(0, 0),
        )
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=self.uri),
                range=types.Range(start, end),
                context=types.CodeActionContext(diagnostics=diagnostics, only=only),
            )
        )
        return [a for a in result or [] if isinstance(a, types.CodeAction)]


async def diagnostics_for(
    client: LanguageClient, uri: str, version: int | None, timeout: float = TIMEOUT_S
) -> list[types.Diagnostic]:
    """Wait until the server has published diagnostics of ``uri`` for ``version``."""
    return (await wait_published(client, uri, lambda v, _: v == version, timeout))[1]


async def wait_published(
    client: LanguageClient,
    uri: str,
    predicate: Callable[[int | None, list[types.Diagnostic]], bool],
    timeout: float = TIMEOUT_S,
) -> tuple[int | None, list[types.Diagnostic]]:
    """Wait until the last publication for ``uri`` satisfies ``predicate(version, diagnostics)``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        seen = published(client).get(uri)
        if seen is not None and predicate(*seen):
            return seen
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError(f"no matching diagnostics for {uri}; last seen: {seen}")
        try:
            await asyncio.wait_for(
                client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), remaining
            )
        except asyncio.TimeoutError:
            continue


def published(client: LanguageClient) -> dict[str, tuple[int | None, list[types.Diagnostic]]]:
    """uri -> (version, diagnostics) of the last publication, recorded by ``track_versions``."""
    store: dict[str, tuple[int | None, list[types.Diagnostic]]] = getattr(client, "_wh_published", {})
    return store


def track_versions(client: LanguageClient) -> None:
    """Record the version of each publication (pytest-lsp keeps only the diagnostics)."""
    store: dict[str, tuple[int | None, list[types.Diagnostic]]] = {}
    client._wh_published = store  # type: ignore[attr-defined]
    original = client.protocol.fm.features.get(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    def on_publish(params: types.PublishDiagnosticsParams) -> Any:
        store[params.uri] = (params.version, list(params.diagnostics))
        if original is not None:
            return original(params)
        return None

    client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish
    states: list[dict[str, Any]] = []
    client._wh_daemon_states = states  # type: ignore[attr-defined]

    def on_daemon_state(params: Any) -> None:
        states.append(plain(params))

    client.protocol.fm.features[DAEMON_STATE] = on_daemon_state


def daemon_states(client: LanguageClient) -> list[dict[str, Any]]:
    """Every `warp-harness/daemonState` notification received, in order."""
    states: list[dict[str, Any]] = getattr(client, "_wh_daemon_states", [])
    return states


async def server_info(client: LanguageClient) -> dict[str, Any]:
    result = await client.protocol.send_request_async("warp-harness/serverInfo", {})
    info = plain(result)
    assert isinstance(info, dict)
    return info


def plain(value: Any) -> Any:
    """Plain dicts and lists, as JSON carries them: tuples become lists, and the (nested) named
    tuples pygls hands back for results of custom requests become dicts."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def fresh_diagnostic_data(text: str, path: str) -> list[dict[str, Any]]:
    """What a fresh `analyse_source` of ``text`` says, as the ``data`` of the server's diagnostics."""
    from warp_harness.engine import analyse_source

    return [plain({**record.to_dict(), "tier": "static"}) for record in analyse_source(text, path).records]
