"""Hover on a kernel's name: its inferred signature, its launch sites, its last daemon results."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warp_harness.server import analyses, notebooks
from warp_harness.server.convert import PositionMapper
from warp_harness.server.text_document import lsp_lines

if TYPE_CHECKING:
    from warp_harness.model.kernel import KernelDef
    from warp_harness.model.module import ModuleModel
    from warp_harness.server.app import WarpHarnessServer


async def hover(ls: WarpHarnessServer, params: types.HoverParams) -> types.Hover | None:
    """``textDocument/hover``: on a kernel's or func's name, from the last analysis (after waiting a while
    for the one of the text as it is now) and the daemon's last result for the file."""
    uri = params.text_document.uri
    if notebooks.notebook_of(ls, uri) is not None:
        return None  # a notebook cell: no model of its own
    document = await analyses.settled(ls, uri)
    state = document.static if document is not None else None
    if document is None or state is None or state.analysis.model is None:
        return None
    model = state.analysis.model
    text_document = ls.workspace.text_documents.get(uri)
    # the document's own lines when it is the text analysed (cutting 200,000 lines again: ~30 ms)
    lines = text_document.lines if text_document is not None and text_document.source is state.text else None
    mapper = PositionMapper(
        lines if lines is not None else lsp_lines(state.text), ls.workspace.position_encoding
    )
    line = params.position.line + 1
    col = mapper.server_column(params.position.line, params.position.character)
    kernel = kernel_at(model, line, col)
    if kernel is None:
        return None
    dynamic = ls.documents.daemon_state(uri)
    info = dynamic.kernels.get(kernel.name) if dynamic is not None else None
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=hover_markdown(model, kernel, info)
        )
    )


def kernel_at(model: ModuleModel, line: int, col: int) -> KernelDef | None:
    """The kernel or func whose name is under (1-based line, character col): at its def or any use."""
    for kernel in model.kernels:
        node = kernel.node
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            text = model.lines[line - 1] if line - 1 < len(model.lines) else ""
            start = text.find(f"def {kernel.name}")
            if line == node.lineno and start >= 0 and start + 4 <= col <= start + 4 + len(kernel.name):
                return kernel
    word = _word_at(model.lines, line, col)
    if word is None:
        return None
    matches = [k for k in model.kernels if k.name == word]
    return matches[0] if len(matches) == 1 else None


def _word_at(lines: list[str], line: int, col: int) -> str | None:
    if not 0 < line <= len(lines):
        return None
    text = lines[line - 1]
    start = end = min(col, len(text))
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[start:end] or None


def _expr(node: ast.expr | None) -> str:
    if node is None:
        return "-"
    try:
        return ast.unparse(node)
    except Exception:  # a node the recovery parser left odd
        return "?"


def signature(kernel: KernelDef) -> str:
    params = ", ".join(f"{p.name}: {p.type}" for p in kernel.params)
    decorator = "@wp.kernel" if kernel.is_kernel else f"@wp.{kernel.kind}"
    returns = f" -> {_expr(kernel.return_annotation)}" if kernel.return_annotation is not None else ""
    return f"{decorator}\ndef {kernel.name}({params}){returns}"


def _daemon_lines(kernel_info: dict[str, Any] | None) -> list[str]:
    if not kernel_info:
        return ["_no daemon results yet (save the file with the daemon running in a trusted workspace)_"]
    out = []
    for key in ("codegen", "compile", "validate"):
        value = kernel_info.get(key)
        if value:
            shown = (
                ", ".join(f"{d}: {v}" for d, v in value.items()) if isinstance(value, dict) else str(value)
            )
            out.append(f"- {key}: {shown}")
    bench = kernel_info.get("bench")
    if isinstance(bench, dict):
        for device, data in bench.items():
            metrics = data.get("metrics") if isinstance(data, dict) else None
            if isinstance(metrics, dict):
                shown = ", ".join(
                    f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in metrics.items()
                    if isinstance(v, (int, float, str))
                )
                out.append(f"- bench on {device}: {shown}")
    return out or ["_no daemon results for this kernel_"]


def hover_markdown(model: ModuleModel, kernel: KernelDef, kernel_info: dict[str, Any] | None) -> str:
    blocks = [f"```python\n{signature(kernel)}\n```"]
    if kernel.is_kernel:
        sites = [launch for launch in model.launches if launch.kernel_name == kernel.name]
        launches = ["**Launch sites**"]
        for site in sites:
            what = "wp.launch_tiled" if site.tiled else "wp.launch"
            extra = f", block_dim={_expr(site.block_dim)}" if site.block_dim is not None else ""
            launches.append(f"- line {site.node.lineno}: `{what}(dim={_expr(site.dim)}{extra})`")
        if not sites:
            launches.append("_no launch site in this file_")
        blocks.append("\n".join(launches))
        blocks.append("\n".join(["**Daemon**", *_daemon_lines(kernel_info)]))
    return "\n\n".join(blocks)
