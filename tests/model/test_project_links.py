"""The workspace model never reads a workspace's link that leads out of the tree (as `check` never checks
one): a `.py` link to another project's file would put that file's kernels, names and text into the
hovers and messages of the files that launch from it. Links that stay inside are indexed as before."""

from __future__ import annotations

from pathlib import Path

from warp_harness.model.project import ProjectIndex

SECRET_KERNEL = """import warp as wp

@wp.kernel
def secret_kernel(x: wp.array(dtype=float)):
    x[0] = 42.0
"""


def test_a_link_out_of_the_tree_is_not_indexed(tmp_path: Path) -> None:
    outside = tmp_path / "other_project"
    outside.mkdir()
    (outside / "private.py").write_text(SECRET_KERNEL, encoding="utf-8")
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (ws / "pkg" / "kernels.py").write_text(SECRET_KERNEL.replace("secret", "own"), encoding="utf-8")
    (ws / "pkg" / "ext.py").symlink_to(outside / "private.py")
    (ws / "pkg" / "alias.py").symlink_to(ws / "pkg" / "kernels.py")
    index = ProjectIndex()
    index.add_tree(ws)
    modules = index.modules
    assert "pkg.kernels" in modules and "pkg.alias" in modules  # a link inside the tree is fine
    assert "pkg.ext" not in modules
    assert all(p.resolve() != (outside / "private.py").resolve() for p in modules.values())
