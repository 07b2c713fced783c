"""What belongs to a workspace when the checker walks it or the daemon watches it."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from warp_harness.config import is_excluded, load_settings

# folders never walked nor watched: VCS, caches, virtual environments, build output, our own state
IGNORED_DIRS = frozenset(
    {
        ".warp-harness",
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "node_modules",
        "build",
        "dist",
        ".eggs",
    }
)


def iter_python_files(paths: Sequence[Path], overrides: Mapping[str, Any] | None = None) -> Iterator[Path]:
    """Python files under ``paths``; explicitly named files are always included."""
    seen: set[Path] = set()
    for root in paths:
        if not root.is_dir():
            # named files are always yielded, FIFOs and devices too: check_file reports them
            if (root.exists() or root.is_symlink()) and root.resolve() not in seen:
                seen.add(root.resolve())
                yield root
            continue
        settings = load_settings(root, overrides)
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in IGNORED_DIRS
                and not d.endswith(".egg-info")
                and not is_excluded(Path(folder) / d, settings)
            )
            for name in sorted(files):
                if not name.endswith((".py", ".ipynb")):
                    continue
                file = Path(folder) / name
                if is_excluded(file, settings) or file.resolve() in seen:
                    continue
                seen.add(file.resolve())
                yield file
