"""Pinned releases of real Warp code, fetched with pip into a cache folder (never vendored).

newton and mujoco-warp come from their wheels on the package index; warp-lang's own tests and
examples come from the installed warp-lang when it is the pinned version, else from its wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "warp-harness-bench"


@dataclass(frozen=True)
class Release:
    """One pinned distribution and the folder of its wheel that holds the package's code."""

    project: str
    version: str
    package: str

    @property
    def label(self) -> str:
        return f"{self.project} {self.version}"


NEWTON = Release("newton", "1.8.0", "newton")
MUJOCO_WARP = Release("mujoco-warp", "4.0.0", "mujoco_warp")
WARP_LANG = Release("warp-lang", "1.19.0", "warp")


def fetch(release: Release) -> Path:
    """The package folder of ``release``'s wheel, unpacked under the cache on first use."""
    root = CACHE / f"{release.project}-{release.version}"
    if (root / release.package).is_dir():
        return root / release.package
    with tempfile.TemporaryDirectory() as tmp:
        spec = f"{release.project}=={release.version}"
        pip = [sys.executable, "-m", "pip", "download", spec, "--no-deps", "-d", tmp, "-q"]
        subprocess.run(pip, check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        root.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(root)
    return root / release.package


def warp_lang() -> Path:
    """warp-lang's package folder: the installed one when it is the pinned release (no download)."""
    code = "import os, warp; print(os.path.dirname(warp.__file__), warp.config.version)"
    # in a child: importing Warp here would cost every caller Warp's start-up and memory
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    out = child.stdout.split()
    if len(out) == 2 and out[1] == WARP_LANG.version:
        return Path(out[0])
    return fetch(WARP_LANG)


def trees() -> dict[str, Path]:
    """Label → folder of every tree the real-code benchmarks check."""
    warp = warp_lang()
    return {
        NEWTON.label: fetch(NEWTON),
        MUJOCO_WARP.label: fetch(MUJOCO_WARP),
        f"{WARP_LANG.label} examples": warp / "examples",
        f"{WARP_LANG.label} tests": warp / "tests",
    }
