"""Pull against push diagnostics, over stdio, on the real `warp-harness serve`.

(a) The generated 2,000-line module (benchmarks/corpus.py `generated_module`): single-character
    edits inside one kernel body, one every ``--pause-ms``. Push: didChange -> the matching
    publishDiagnostics. Pull: didChange, then at once ``textDocument/diagnostic`` -> its reply
    (the server analyses the new text on the request, without waiting for the debounce).
(b) A 50-cell notebook holding the same module (cell 1 the imports, then one top-level definition
    group per cell): the same edits in one cell through ``notebookDocument/didChange``; push waits
    for that cell's publication, pull asks for that cell's report.
(c) ``workspace/diagnostic`` on a workspace of ``--files`` unopened modules (copies of the 2,000-line
    module, analysed from disk on the server's worker thread): the first pull until every file is
    reported (the client pulls again while the server answers with what is ready), a pull where
    nothing changed (every report ``unchanged``), and a pull after one file changed on disk. Its
    peer, measured in the same run: `warp-harness check` on the same folder, in a child process.

Prints p50/p95 per mode. ``python benchmarks/bench_pull.py [--edits 40] [--pause-ms 150] [--files 20]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "server"))

import itertools

from bench_lsp import SERVER_ENV, edit_position
from corpus import generated_module
from stdio_client import StdioClient

from warp_harness.launch import module_command

CELLS = 50
BUGGY_KERNEL = (
    "\n\n@wp.kernel\n"
    "def scale_half(x: wp.array(dtype=wp.float16)):\n"
    "    i = wp.tid()\n"
    "    x[i] = x[i] * 2.0\n"
)


def split_cells(text: str, cells: int = CELLS) -> list[str]:
    """The module cut at top-level statements into ``cells`` cells of about equal size."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line[:1] not in ("", " ", "\t", "\n", ")", "]")]
    # a decorator belongs with the definition after it
    starts = [i for i in starts if i == 0 or not lines[i - 1].startswith("@")]
    step = max(1, len(starts) // cells)
    cuts = [*starts[::step][:cells], len(lines)]
    cuts[0] = 0
    return ["".join(lines[a:b]) for a, b in itertools.pairwise(cuts) if b > a]


def _change(n: int, line: int, col: int) -> dict[str, Any]:
    if n % 2 == 0:  # type a character into a name, then take it out: every version is valid code
        return {
            "range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col}},
            "text": "x",
        }
    return {
        "range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + 1}},
        "text": "",
    }


def _start(root: Path, pull: bool) -> StdioClient:
    client = StdioClient(module_command("warp_harness", "serve"), root, env=SERVER_ENV)
    caps: dict[str, Any] = {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}
    if pull:
        caps["textDocument"]["diagnostic"] = {"dynamicRegistration": False}
    caps["notebookDocument"] = {"synchronization": {}}
    client.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": caps})
    client.notify("initialized", {})
    return client


def _stats(name: str, latencies: list[float]) -> dict[str, Any]:
    latencies.sort()
    return {
        "case": name,
        "p50": statistics.median(latencies),
        "p95": latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))],
        "n": len(latencies),
    }


def bench_file(path: Path, pull: bool, edits: int, pause_s: float) -> dict[str, Any]:
    text = path.read_text()
    uri = path.as_uri()
    client = _start(path.parent, pull)
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    if pull:
        client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout=60)
    else:
        client.wait_diagnostics(uri, 1, timeout=60)
    line, col = edit_position(text)
    latencies = []
    previous = None
    for n in range(edits):
        time.sleep(pause_s)
        version = n + 2
        sent = time.perf_counter()
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [_change(n, line, col)]},
        )
        if pull:
            report = client.request(
                "textDocument/diagnostic", {"textDocument": {"uri": uri}, "previousResultId": previous}
            )
            previous = report.get("resultId")
            latencies.append((time.perf_counter() - sent) * 1000)
        else:
            latencies.append((client.wait_diagnostics(uri, version)[0] - sent) * 1000)
    client.close()
    return _stats(f"{path.name} {'pull' if pull else 'push'}", latencies)


def bench_notebook(path: Path, cells: list[str], pull: bool, edits: int, pause_s: float) -> dict[str, Any]:
    nb_uri = path.as_uri()
    uris = [f"vscode-notebook-cell:{path}#C{i}" for i in range(len(cells))]
    client = _start(path.parent, pull)
    client.notify(
        "notebookDocument/didOpen",
        {
            "notebookDocument": {
                "uri": nb_uri,
                "notebookType": "jupyter-notebook",
                "version": 1,
                "cells": [{"kind": 2, "document": u} for u in uris],
            },
            "cellTextDocuments": [
                {"uri": u, "languageId": "python", "version": 1, "text": t}
                for u, t in zip(uris, cells, strict=True)
            ],
        },
    )
    # the edited cell: the middle kernel's, at the spot bench_lsp edits
    joined = "".join(cells)
    module_line, col = edit_position(joined)
    offsets = [0]
    for cell in cells:
        offsets.append(offsets[-1] + cell.count("\n"))
    index = max(i for i in range(len(cells)) if offsets[i] <= module_line)
    line = module_line - offsets[index]
    target = uris[index]
    if pull:
        client.request("textDocument/diagnostic", {"textDocument": {"uri": target}}, timeout=60)
    else:
        client.wait_diagnostics(target, 1, timeout=60)
    latencies = []
    previous = None
    for n in range(edits):
        time.sleep(pause_s)
        version = n + 2
        sent = time.perf_counter()
        client.notify(
            "notebookDocument/didChange",
            {
                "notebookDocument": {"uri": nb_uri, "version": version},
                "change": {
                    "cells": {
                        "textContent": [
                            {
                                "document": {"uri": target, "version": version},
                                "changes": [_change(n, line, col)],
                            }
                        ]
                    }
                },
            },
        )
        if pull:
            report = client.request(
                "textDocument/diagnostic", {"textDocument": {"uri": target}, "previousResultId": previous}
            )
            previous = report.get("resultId")
            latencies.append((time.perf_counter() - sent) * 1000)
        else:
            latencies.append((client.wait_diagnostics(target, version)[0] - sent) * 1000)
    client.close()
    return _stats(f"{len(cells)}-cell notebook {'pull' if pull else 'push'}", latencies)


def _workspace_pull(client: StdioClient, previous: dict[str, str]) -> dict[str, dict[str, Any]]:
    params = {"previousResultIds": [{"uri": u, "value": v} for u, v in previous.items()]}
    report = client.request("workspace/diagnostic", params, timeout=300)
    return {item["uri"]: item for item in report["items"]}


def bench_workspace(root: Path, files: int, repeats: int = 10) -> list[dict[str, Any]]:
    """Rows for the workspace pull of ``files`` unopened modules under ``root``, and for the peer."""
    module = generated_module()
    paths = [root / f"module_{i:03}.py" for i in range(files)]
    for path in paths:
        path.write_text(module)
    expected = {p.as_uri() for p in paths}
    client = _start(root, pull=True)
    started = time.perf_counter()
    items: dict[str, dict[str, Any]] = {}
    while not expected <= set(items):
        items.update(_workspace_pull(client, {}))
    cold = (time.perf_counter() - started) * 1000
    ids = {u: i["resultId"] for u, i in items.items()}
    unchanged = []
    for _ in range(repeats):
        sent = time.perf_counter()
        again = _workspace_pull(client, ids)
        unchanged.append((time.perf_counter() - sent) * 1000)
        assert all(i["kind"] == "unchanged" for i in again.values()), "an unchanged file was reported anew"
    edited = []
    for n in range(repeats):
        # a kernel with a mixed-precision bug added, then taken out: each edit changes the report
        paths[0].write_text(module + (BUGGY_KERNEL if n % 2 == 0 else ""))
        sent = time.perf_counter()
        again = _workspace_pull(client, ids)
        edited.append((time.perf_counter() - sent) * 1000)
        ids = {u: i["resultId"] for u, i in again.items()}
        assert again[paths[0].as_uri()]["kind"] == "full"
    client.close()
    started = time.perf_counter()
    subprocess.run(
        [*module_command("warp_harness", "check"), str(root), "--no-cache", "--exit-zero"],
        cwd=root,
        env=SERVER_ENV,
        capture_output=True,
        check=True,
    )
    peer = (time.perf_counter() - started) * 1000
    for path in paths:
        path.unlink()
    return [
        {"case": f"workspace pull, {files} files, cold", "p50": cold, "p95": cold, "n": 1},
        {"case": f"`check` on the {files} files (peer)", "p50": peer, "p95": peer, "n": 1},
        _stats("workspace pull, unchanged", unchanged),
        _stats("workspace pull, 1 file edited", edited),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--pause-ms", type=float, default=150)
    parser.add_argument("--files", type=int, default=20, help="unopened files for the workspace pull")
    args = parser.parse_args()
    pause = args.pause_ms / 1000
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generated = root / "generated.py"
        generated.write_text(generated_module())
        for pull in (False, True):
            rows.append(bench_file(generated, pull, args.edits, pause))
        cells = split_cells(generated_module())
        for pull in (False, True):
            rows.append(bench_notebook(root / "generated.ipynb", cells, pull, args.edits, pause))
        with tempfile.TemporaryDirectory() as workspace:
            rows.extend(bench_workspace(Path(workspace), args.files))
    print(f"{'case':<36}{'p50 ms':>10}{'p95 ms':>10}{'runs':>8}")
    for row in rows:
        print(f"{row['case']:<36}{row['p50']:>10.1f}{row['p95']:>10.1f}{row['n']:>8}")


if __name__ == "__main__":
    main()
