"""The session's workspace-wide events: `initialize` (workspace folders, the editor's settings, the
workspace model), `initialized` (the daemon links, file watchers), folders added or removed, settings
and watched files changed, `shutdown`."""

from __future__ import annotations

import asyncio
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from warp_harness.server import analyses, daemon_control
from warp_harness.server.options import SECTION
from warp_harness.server.text_document import use_lsp_lines

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer

# the documents an editor opens at start-up come with `initialized`, or within this long: if none did, the
# analysis thread warms up at once (a notebook, a pull, a file event wait for it)
START_UP_OPEN_GRACE_S = 0.05


def initialize(ls: WarpHarnessServer, params: types.InitializeParams) -> None:
    ls.loop = asyncio.get_running_loop()
    use_lsp_lines(ls.workspace)
    folders = params.workspace_folders or []
    roots = [to_fs_path(f.uri) for f in folders]
    if not roots and params.root_uri:
        roots = [to_fs_path(params.root_uri)]
    ls.roots = [Path(r).resolve() for r in roots if r]
    ls.apply_client_settings(params.initialization_options)
    if ls.stack_warm:  # warm before the loop was known (`stack_warmed`)
        ls.start_up_over()
    elif ls.start_up is not None:  # after the reply (sent as this returns): the request's pickle waits
        ls.loop.call_soon(ls.start_up.open_workspace, ls.loop, dict(ls.tier.overrides), list(ls.roots))
    ls.in_worker(partial(ls.tier.open_workspace, ls.roots))  # the workspace model: kernels across modules
    ls.imported_at_initialize = tuple(sys.modules)  # what the reply waited for (`serverInfo` tells)


def initialized(ls: WarpHarnessServer) -> None:
    # after the start-up work handed to the analysis thread (warm-up, the workspace model): by then
    # the client's didOpen has come, and the links wait for its analysis (the first diagnostics)
    loop = ls.loop
    if loop is not None:
        ls.worker.call_soon(lambda: loop.call_soon_threadsafe(daemon_control.connect_after_start_up, ls))
        if ls.start_up is not None:
            loop.call_later(START_UP_OPEN_GRACE_S, ls.start_up_quiet_if_idle)
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if watched and watched.dynamic_registration:
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[
                types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                types.FileSystemWatcher(glob_pattern="**/*.py"),  # the workspace model
            ]
        )
        registration = types.Registration(
            id="warp-harness-pyproject",
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=options,
        )
        ls.client_register_capability(types.RegistrationParams(registrations=[registration]))


def folders_changed(ls: WarpHarnessServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    removed = {Path(p).resolve() for f in params.event.removed if (p := to_fs_path(f.uri))}
    added = [Path(p).resolve() for f in params.event.added if (p := to_fs_path(f.uri))]
    ls.roots = [r for r in ls.roots if r not in removed] + [r for r in added if r not in ls.roots]
    for root in removed:
        daemon_control.folder_removed(ls, root)


async def settings_changed(ls: WarpHarnessServer, params: types.DidChangeConfigurationParams) -> None:
    """New settings (pushed, or asked for when the notification carries none): every document again."""
    payload = params.settings
    if not payload or payload == {SECTION: None}:
        workspace = ls.client_capabilities.workspace
        if workspace and workspace.configuration:
            items = [types.ConfigurationItem(section=SECTION)]
            answers = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
            payload = answers[0] if answers else None
    if ls.apply_client_settings(payload):
        analyses.reanalyse_all(ls)
        daemon_control.connect(ls)


def files_changed(ls: WarpHarnessServer, params: types.DidChangeWatchedFilesParams) -> None:
    """A pyproject.toml changed: every document again; a module changed: the workspace model, then the open
    documents launching its kernels."""
    if any(change.uri.endswith("pyproject.toml") for change in params.changes):
        analyses.reanalyse_all(ls)
        return
    for change in params.changes:
        path = to_fs_path(change.uri)
        if path is None or not path.endswith(".py"):
            continue
        deleted = change.type == types.FileChangeType.Deleted
        ls.then_dependents(partial(ls.tier.file_changed, path, deleted=deleted), change.uri)


def shutdown(ls: WarpHarnessServer) -> None:
    ls.end_start_up(now=True)
    daemon_control.stop_links(ls)


__all__ = ["files_changed", "folders_changed", "initialize", "initialized", "settings_changed", "shutdown"]
