"""What the server imports on its way to the first diagnostics (issue 15: start-up to first diagnostics
within 100 ms of an empty pygls server's). Modules only some requests need (TCP's token, pulled
diagnostics' digests, "did you mean" suggestions, package-data readers) are imported when used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from warp_harness.launch import safe_path_flags

# stdlib modules no step to the first diagnostics of a stdio client needs
DEFERRED = ("importlib.resources", "zipfile", "secrets", "hmac", "difflib")

_FIRST_DIAGNOSTICS = """
import json, sys
from pathlib import Path
from warp_harness.server.app import build_server

path = Path(sys.argv[1])
server = build_server()
server.tier.warm_up()
server.collector.start_up_done()
server.tier.open_workspace([path.parent])
analysis = server.tier.analyse(path.read_text(), str(path))
print(json.dumps({"records": len(analysis.records), "modules": sorted(sys.modules)}))
"""


def test_the_first_analysis_imports_nothing_only_other_requests_need(tmp_path: Path) -> None:
    source = tmp_path / "k.py"
    source.write_text(
        "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = wp.sqrt()\n"
    )
    out = subprocess.run(  # a fresh interpreter: this one has imported whatever other tests needed
        [sys.executable, *safe_path_flags(), "-c", _FIRST_DIAGNOSTICS, str(source)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    result = json.loads(out.splitlines()[-1])
    assert result["records"] >= 1  # analysed for real: the builtin table and a hardware profile were used
    assert [m for m in DEFERRED if m in result["modules"]] == []


def test_the_deferred_modules_are_there_when_their_requests_come() -> None:
    from warp_harness.builtins import load_table
    from warp_harness.hardware import bundled_profiles, load_profile
    from warp_harness.server import pull, transport

    assert "sqrt" in load_table().closest("sqr")
    assert "sm_86" in bundled_profiles() and load_profile("sm86").name == "sm_86"
    assert len(pull.result_id([], 1)) == 20
    assert transport.authenticate({"method": "initialize", "id": 1, "params": {}}, "token") is not None
    assert sys.modules.get("difflib") is not None
