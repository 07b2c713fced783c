"""Every subpackage under the mapped folders is listed in pyproject.toml, so a wheel ships it."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = config["package-dir"]
    listed = set(config["packages"])
    found = set()
    for package, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO / folder)
            dotted = ".".join((package, *relative.parts)) if relative.parts else package
            # a folder mapped on its own (warp_harness.rules) is found from both sides
            found.add(dotted)
    nested_in_core = {
        p
        for p in found
        if p.startswith("warp_harness.")
        and p.split(".")[1] in {"rules", "server", "daemon"}
        and not any(p.startswith(k) for k in mapping if k != "warp_harness")
    }
    assert found - nested_in_core <= listed, f"missing from [tool.setuptools] packages: {found - listed}"


def test_no_top_level_module_named_like_a_folder() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert all(p == "warp_harness" or p.startswith("warp_harness.") for p in config["packages"])
