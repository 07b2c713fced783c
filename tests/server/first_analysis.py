"""A fresh interpreter's way to a server's first analysis, for the start-up tests: what it imports and
creates there is what a user's first diagnostics wait for (this interpreter has imported whatever other
tests needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from warp_harness.launch import safe_path_flags

KERNEL = "import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = wp.sqrt()\n"

_ANALYSE = """
import json, sys
from pathlib import Path
from warp_harness.server.app import build_server

path = Path(sys.argv[1])
server = build_server()
server.tier.warm_up()
server.collector.start_up_done()
server.tier.open_workspace([path.parent])
analysis = server.tier.analyse(path.read_text(), str(path))
found = {"records": len(analysis.records), "modules": sorted(sys.modules)}
"""


def first_analysis(folder: Path, before: str = "", after: str = "") -> dict[str, Any]:
    """Run a server to its first analysis of a kernel file in ``folder``, in a fresh interpreter: ``before``
    runs first, ``after`` then adds to ``found`` (records, modules); ``found`` comes back."""
    source = folder / "k.py"
    source.write_text(KERNEL)
    script = f"{before}\n{_ANALYSE}\n{after}\nprint(json.dumps(found))\n"
    out = subprocess.run(
        [sys.executable, *safe_path_flags(), "-c", script, str(source)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    found: dict[str, Any] = json.loads(out.splitlines()[-1])
    assert found["records"] >= 1  # analysed for real: the builtin table and a hardware profile were used
    return found
