"""attrs' methods for lsprotocol's classes, compiled at one start and evaluated from the kept code objects at
the next (server/generated_code.py), in fresh interpreters as the server's starts are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from warp_harness.launch import safe_path_flags
from warp_harness.server import generated_code

# a start: pygls imported under `kept`, the kept code saved; what it compiled, and lsprotocol at work
_START = """
import json, sys
from pathlib import Path
from warp_harness.server.generated_code import kept

with kept(Path(sys.argv[1])) as code:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer
compiled, used = code.compiled, len(code.used)
code.save()
params = types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=7)
server = LanguageServer("t", "0")
structured = server.protocol._converter.structure(
    {"processId": 7, "capabilities": {}, "rootUri": "file:///x"}, types.InitializeParams
)
print(json.dumps({
    "compiled": compiled,
    "used": used,
    "repr": repr(params),
    "equal": structured.process_id == 7 and structured.root_uri == "file:///x",
    "unstructured": server.protocol._converter.unstructure(params),
}))
"""


def _start(root: Path, script: str = _START, *args: str) -> dict[str, Any]:
    """What ``script`` (a start of the server's imports, in a fresh interpreter) prints last, as JSON."""
    out = subprocess.run(
        [sys.executable, *safe_path_flags(), "-c", script, str(root), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    found: dict[str, Any] = json.loads(out.splitlines()[-1])
    return found


def _kept_files(root: Path) -> list[Path]:
    return sorted((root / generated_code.FOLDER).glob("*.marshal"))


def test_a_second_start_evaluates_the_kept_code_and_lsprotocol_behaves_the_same(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = _start(root)
    assert first["used"] > 300 and first["compiled"] == first["used"]  # lsprotocol's ~590 scripts
    [kept] = _kept_files(root)
    assert (
        kept.stat().st_mode & 0o777 == 0o600
        and (root / generated_code.FOLDER).stat().st_mode & 0o777 == 0o700
    )
    second = _start(root)
    assert second["used"] == first["used"]
    assert second["compiled"] <= generated_code.RENEW_SHARE * first["used"]  # not compiled again
    assert second["repr"] == first["repr"] and second["unstructured"] == first["unstructured"]
    assert second["equal"] is True and first["equal"] is True


def test_kept_code_another_user_could_write_is_not_run(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = _start(root)
    [kept] = _kept_files(root)
    os.chmod(kept, 0o666)
    assert _start(root)["compiled"] == first["used"]
    os.chmod(kept, 0o600)
    os.chmod(root / generated_code.FOLDER, 0o777)
    assert _start(root)["compiled"] == first["used"]


def test_a_damaged_kept_file_is_compiled_over(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    first = _start(root)
    [kept] = _kept_files(root)
    kept.write_bytes(kept.read_bytes()[:1000])
    damaged = _start(root)
    assert damaged["compiled"] == first["used"] and damaged["repr"] == first["repr"]
    assert _start(root)["compiled"] <= generated_code.RENEW_SHARE * first["used"]  # written again


def test_the_cache_root_is_the_harness_s(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from warp_harness.user_state import user_cache_root

    for env in ({}, {"XDG_CACHE_HOME": str(tmp_path / "x")}, {"WARP_HARNESS_CACHE_DIR": str(tmp_path / "w")}):
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
        monkeypatch.delenv("WARP_HARNESS_CACHE_DIR", raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        assert generated_code.cache_root() == user_cache_root()


# a start of the start-up process's kind: the analysis stack imported under `kept_dataclasses`, a kernel file
# analysed; what it compiled, and the records
_STACK = """
import json, sys
from pathlib import Path
from warp_harness.server.generated_code import kept_dataclasses

with kept_dataclasses(Path(sys.argv[1])) as code:
    from warp_harness.engine import analyse_source
    from warp_harness.rules import all_rules

    all_rules()
    result = analyse_source(Path(sys.argv[2]).read_text(), sys.argv[2])
compiled, used = code.compiled, len(code.used)
code.save()
print(json.dumps({"compiled": compiled, "used": used, "records": [repr(r) for r in result.records]}))
"""


def test_the_analysis_stack_s_dataclasses_from_kept_code_give_the_same_records(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    source = tmp_path / "k.py"
    source.write_text(
        "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float), n: int):\n"
        "    i = wp.tid()\n    a[i] = wp.sqrt()\n    for j in range(n):\n        x = 1\n"
    )

    def start() -> dict[str, Any]:
        return _start(root, _STACK, str(source))

    first = start()
    assert first["used"] > 200 and first["compiled"] == first["used"] and first["records"]
    assert [p.name.split("-")[0] for p in _kept_files(root)] == ["dataclasses"]
    second = start()
    assert (
        second["used"] == first["used"] and second["compiled"] <= generated_code.RENEW_SHARE * first["used"]
    )
    assert second["records"] == first["records"]
