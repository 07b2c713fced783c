"""`warp-harness capture -- COMMAND` on real processes: a script, `python -m pytest` and a bare `pytest`.

The recorder lives in the child only (a private sitecustomize); the launches it saw are filed into
the workspace's store even when the command fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from warp_harness.capture.store import CaptureStore, KernelIndex

pytestmark = pytest.mark.slow

KERNELS = """
import numpy as np
import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i]


@wp.kernel
def fill(out: wp.array2d(dtype=wp.int32)):
    i, j = wp.tid()
    out[i, j] = i * 10 + j


def run(n=8):
    x = wp.array(np.arange(n, dtype=np.float32))
    y = wp.zeros(n, dtype=float)
    wp.launch(scale, dim=n, inputs=[x, y, 2.0])
    out = wp.zeros((3, 4), dtype=wp.int32)
    wp.launch(fill, dim=(3, 4), inputs=[out])
    return y.numpy(), out.numpy()
"""


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def _indexes(ws: Path) -> dict[str, KernelIndex]:
    return {e.name: e for e in CaptureStore(ws).indexes() if isinstance(e, KernelIndex)}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("capws")
    (ws / "kernels.py").write_text(KERNELS.lstrip(), encoding="utf-8")
    return ws


def test_a_failing_script_leaves_its_launches(ws: Path) -> None:
    script = ws / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import kernels
            import warp as wp
            kernels.run()
            kernels.run(16)  # a second distinct launch of each kernel
            y = wp.zeros(4, dtype=float)
            wp.launch(kernels.scale, dim=4, inputs=[y, y, 1.0], record_cmd=True)  # a wp.Launch object
            raise SystemExit("the script fails after its launches")
            """
        ),
        encoding="utf-8",
    )
    p = _cli("capture", "--", sys.executable, "script.py", cwd=ws)
    assert p.returncode == 1, p.stdout + p.stderr  # the command's own exit status
    assert "captured 3 launch(es) of 2 kernel(s)" in p.stdout, p.stdout + p.stderr
    assert "record_cmd=True" in p.stdout  # what it cannot record is listed
    found = _indexes(ws)
    scale = found["scale"]
    assert scale.path == "kernels.py" and len(scale.launches) == 2
    first = next(launch for launch in scale.launches if launch["dim"] == [8])
    assert first["written"] == ["y"]
    launch_line = KERNELS.lstrip().splitlines().index("    wp.launch(scale, dim=n, inputs=[x, y, 2.0])") + 1
    assert first["provenance"]["file"] == "kernels.py" and first["provenance"]["line"] == launch_line
    assert "script.py" in first["provenance"]["command"]
    x = CaptureStore(ws).blob(first["args"][0]["blob"])
    y = CaptureStore(ws).blob(first["baseline"]["y"])
    assert x.tolist() == list(range(8)) and y.tolist() == [2.0 * i for i in range(8)]
    assert first["args"][2] == {"name": "a", "kind": "scalar", "dtype": "float", "value": 2.0}
    fill = found["fill"].launches[0]
    assert fill["dim"] == [3, 4]
    assert CaptureStore(ws).blob(fill["baseline"]["out"])[2, 3] == 23
    listing = _cli("capture", "--list", cwd=ws)
    assert "kernels.py::scale  2 launch(es)" in listing.stdout, listing.stdout


def test_a_pytest_run_records_test_ids(ws: Path, tmp_path: Path) -> None:
    (ws / "test_k.py").write_text(
        "import kernels\n\n\ndef test_scale():\n    y, _ = kernels.run(5)\n    assert y[1] == 3.0  # fails\n",
        encoding="utf-8",
    )
    p = _cli(
        "capture", "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_k.py", cwd=ws
    )
    assert p.returncode == 1, p.stdout + p.stderr  # the test failed; its launches are kept
    five = next(x for x in _indexes(ws)["scale"].launches if x["dim"] == [5])
    assert five["provenance"]["test"] == "test_k.py::test_scale"
    # a bare `pytest` (a console script on PATH, as pip installs it)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "pytest"
    shim.write_text(
        f"#!{sys.executable}\nimport sys, pytest\nsys.exit(pytest.console_main())\n", encoding="utf-8"
    )
    shim.chmod(0o755)
    (ws / "test_k.py").write_text(
        "import kernels\n\n\ndef test_six():\n    assert kernels.run(6)[0][1] == 2.0\n", encoding="utf-8"
    )
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    p = _cli("capture", "--", "pytest", "-q", "-p", "no:cacheprovider", "test_k.py", cwd=ws, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    six = next(x for x in _indexes(ws)["scale"].launches if x["dim"] == [6])
    assert six["provenance"]["test"] == "test_k.py::test_six"


def test_max_per_kernel_and_argument_cap(ws: Path) -> None:
    (ws / "many.py").write_text(
        "import kernels\nfor n in range(20, 26):\n    kernels.run(n)\n", encoding="utf-8"
    )
    p = _cli(
        "capture", "--max-per-kernel", "2", "--max-arg-mb", "0.00005", "--", sys.executable, "many.py", cwd=ws
    )
    assert p.returncode == 0, p.stderr
    assert "more than 2 distinct launches" in p.stdout
    big = [x for x in _indexes(ws)["scale"].launches if x["dim"][0] >= 20]
    assert len(big) == 2  # at most N new distinct launches from this run
    assert all(x["incomplete"] and "per-argument cap" in x["incomplete"][0] for x in big)
    assert all(a["kind"] == "too-large" and "blob" not in a for x in big for a in x["args"][:2])
    index = json.loads(
        next((ws / ".warp-harness/captures/kernels").glob("kernels.py__scale*.json")).read_text()
    )
    assert isinstance(index["tag"], str) and len(index["tag"]) == 64


def test_capture_without_a_command_runs_the_configured_ones(ws: Path) -> None:
    (ws / "seven.py").write_text("import kernels\nkernels.run(7)\n", encoding="utf-8")
    (ws / "pyproject.toml").write_text(
        f'[tool.warp-harness.runtime]\ncapture = [["{sys.executable}", "seven.py"]]\n', encoding="utf-8"
    )
    try:
        p = _cli("capture", cwd=ws)
    finally:
        (ws / "pyproject.toml").unlink()
    assert p.returncode == 0 and "seven.py" in p.stdout, p.stdout + p.stderr
    assert any(x["dim"] == [7] for x in _indexes(ws)["scale"].launches)
    nothing = _cli("capture", cwd=ws)
    assert nothing.returncode == 2 and "no command" in nothing.stderr
