"""Pull diagnostics in the real Neovim, headless (nvim/pull.lua): Neovim 0.11 sends
`textDocument/diagnostic` itself when the server offers it; the diagnostics must arrive in its pull
namespace only (the server no longer pushes to a pulling client) and follow an edit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_neovim import BUGGY, NVIM, SERVER, _records, _safe_fix

PULL = Path(__file__).parent / "nvim" / "pull.lua"


@pytest.mark.skipif(NVIM is None or NVIM[1] < (0, 11, 0), reason="needs Neovim 0.11+ (pull diagnostics)")
def test_neovim_pulls_diagnostics(tmp_path: Path) -> None:
    assert NVIM is not None
    records = _records(BUGGY)
    record = next(r for r in records if _safe_fix(r))
    (edit,) = record["fix"]["edits"]
    assert edit["range"]["line"] == edit["range"]["end_line"] == record["location"]["line"]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    kernel = workspace / BUGGY.name
    shutil.copyfile(BUGGY, kernel)
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[name] = str(tmp_path / name.lower())
    report = tmp_path / "result.json"
    env.update(
        WH_SERVER_CMD=json.dumps(SERVER),
        WH_FILE=str(kernel),
        WH_RULE=record["rule"],
        WH_LINE=str(record["location"]["line"]),
        WH_COL=str(edit["range"]["col"]),
        WH_END_COL=str(edit["range"]["end_col"]),
        WH_NEW_TEXT=edit["new_text"],
        WH_RESULT=str(report),
        WH_TIMEOUT_MS="60000",
    )
    proc = subprocess.run(
        [NVIM[0], "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(PULL)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = json.loads(report.read_text()) if report.exists() else {}
    assert proc.returncode == 0 and result.get("ok"), (proc.stderr[-2000:], result)
    assert result["server_pull"] is True
    assert len(result["before"]) == len(records)
    assert result["pushed_before"] == 0 and result["pushed_after"] == 0
    assert len(result["after"]) == len(records) - 1
