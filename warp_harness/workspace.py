"""What belongs to a workspace when the checker walks it or the daemon watches it."""

from __future__ import annotations

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
