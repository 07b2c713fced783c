"""``require_hermetic`` (issue #37 item 1) is set by the command line only: a workspace's
pyproject.toml can neither turn it on for itself nor off (one line on stderr), as the defences
of ``options.DEFENCES``."""

from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.daemon.cli import _runtime_overrides
from warp_harness.daemon.options import load_runtime_options


@pytest.mark.parametrize("value", ["true", "false"])
def test_the_workspace_cannot_set_require_hermetic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.warp-harness]\ntrust = true\n[tool.warp-harness.runtime]\nrequire-hermetic = {value}\n"
        "bench_repeats = 7\n"
    )
    opts = load_runtime_options(tmp_path)
    assert opts.require_hermetic is False and opts.bench_repeats == 7
    err = capsys.readouterr().err
    assert f"`require-hermetic = {value}` ignored" in err and "--require-hermetic" in err


def test_the_command_line_sets_it(tmp_path: Path) -> None:
    from warp_harness.cli import build_parser

    args = build_parser().parse_args(["ci", str(tmp_path), "--require-hermetic"])
    assert _runtime_overrides(args)["require_hermetic"] is True
    assert "require_hermetic" not in _runtime_overrides(build_parser().parse_args(["ci", str(tmp_path)]))
    assert load_runtime_options(tmp_path, _runtime_overrides(args)).require_hermetic is True
