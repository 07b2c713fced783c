"""Every `warp-harness` command shown in README.md and docs/ runs as written, in a workspace holding the
repository's examples (the README's `k.py` is a copy of a buggy example; `h200.toml`, which `calibrate`
writes on a GPU, a copy of the sm_90 profile): it exits 0 or 1 (1: findings), never with a usage error or
a traceback. A command that needs what CI lacks (a GPU, a Ray cluster, a running daemon, minutes of
compiling already covered elsewhere) is listed in SKIPPED with the reason, and a listed command that no
longer appears in the docs fails the test, so the list cannot rot."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

SKIPPED = {
    "warp-harness check PATH...": "a synopsis (PATH... is a placeholder)",
    "warp-harness daemon . --trust": "runs until stopped (tests/daemon/test_daemon_cli.py starts it)",
    "warp-harness daemon . --trust -v": "runs until stopped (tests/daemon/test_daemon_cli.py)",
    "warp-harness status": "needs a running daemon (tests/daemon/test_client_cli.py)",
    "warp-harness results [--json]": "needs a running daemon (tests/daemon/test_client_cli.py)",
    "warp-harness watch [--json]": "needs a running daemon (tests/daemon/test_client_cli.py)",
    "warp-harness stop": "needs a running daemon (tests/daemon/test_client_cli.py)",
    "warp-harness ci examples/ --trust --sarif out.sarif --junit out.xml": (
        "2-3 minutes of compiling every contract on 2 cores; tests/daemon/test_ci_rich.py runs ci --trust "
        "with --sarif/--junit on the contracts"
    ),
    "warp-harness ci . --trust --executor ray --address head:6379": "needs a Ray cluster",
    "warp-harness bench examples/contracts --trust --device cuda:0": "needs a GPU",
    "warp-harness calibrate --device cuda:0 -o h200.toml": "needs a GPU (the fixture writes h200.toml)",
    "warp-harness tune examples/contracts/tile_gemm_tune.py --trust --target sm_90": (
        "2-3 minutes of compiling tile GEMMs on 2 cores; tests/daemon/test_tune.py tunes tile kernels"
    ),
    "warp-harness capture -- python -m pytest tests/test_cloth.py": (
        "a project's own test file (tests/capture/test_capture_command.py captures a real pytest run)"
    ),
    "warp-harness accept sim/cloth.py::integrate --trust": (
        "the example project's capture (tests/daemon/test_captured_replay.py accepts a real one)"
    ),
    "warp-harness serve --tcp --port 2087": "a server that runs until stopped (tests/server/test_transport*)",
    "warp-harness serve --log-file /tmp/wh.log --log-level debug": "a stdio server (tests/server)",
    "warp-harness serve --no-start-up-process": "a stdio server (tests/server/test_start_up_process.py)",
}
SKIPPED_PREFIXES = {
    "warp-harness mcp": "a stdio server (tests/agents/test_mcp_server.py)",
    # a full run's report needs every shard's (tests/daemon/test_shards.py merges real ones)
    "warp-harness merge-reports": "needs all the shards' reports",
}


def _commands() -> list[tuple[str, str]]:
    """(doc, command) for each `warp-harness ...` line of an indented or fenced code block."""
    found = []
    for doc in DOCS:
        in_fence = False
        for line in doc.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            stripped = line.strip()
            if not (in_fence or line.startswith("    ")) or not stripped.startswith("warp-harness "):
                continue
            if re.match(r"warp-harness: ", stripped):  # output shown, not a command
                continue
            command = re.split(r"\s+#\s", stripped, maxsplit=1)[0].strip()
            found.append((doc.name, command))
    return found


COMMANDS = _commands()
RUNNABLE = [
    (doc, c)
    for doc, c in COMMANDS
    if c not in SKIPPED
    and not any(c.startswith(p) for p in SKIPPED_PREFIXES)
    and "--executor ray" not in c  # a Ray cluster (tests/daemon/test_ray_executor.py starts a real one)
    and "${{" not in c  # a CI workflow's template, filled in by GitHub Actions
]


def test_the_skip_list_names_commands_the_docs_still_show() -> None:
    shown = {c for _, c in COMMANDS}
    assert sorted(set(SKIPPED) - shown) == []
    assert len(RUNNABLE) >= 15


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("docs-commands")
    shutil.copytree(REPO / "examples", ws / "examples")
    shutil.copy(REPO / "examples" / "buggy" / "mixed_precision.py", ws / "k.py")
    shutil.copy(REPO / "warp_harness" / "hardware" / "sm_90.toml", ws / "h200.toml")
    for command in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *command], cwd=ws, check=True, capture_output=True)
    (ws / "k.py").write_text((ws / "k.py").read_text() + "\n# changed\n")  # for --changed-files
    return ws


# the trusted `ci` and `replay` commands run the dynamic tier over the whole workspace: over every example
# that compiled every kernel module (capture.md's `ci . --trust` alone took 194 s of the file's 470 on 2
# cores, load 4-8, as the skipped `ci examples/ --trust` would). They run as written in a workspace of a
# few contracts: one that passes, one whose validation fails (a failing case stored, for `replay`), and
# a sibling contract; test_ci_rich.py, test_shards.py and test_file_status.py run ci --trust on contracts.
DYNAMIC_CONTRACTS = ("saxpy.py", "boundary_bug.py", "scale.py", "scale_contract.py")


@pytest.fixture(scope="module")
def dynamic_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("docs-dynamic")
    (ws / "examples" / "contracts").mkdir(parents=True)
    for name in DYNAMIC_CONTRACTS:
        shutil.copy(REPO / "examples" / "contracts" / name, ws / "examples" / "contracts" / name)
    return ws


def _runs_the_dynamic_tier_over_the_workspace(words: list[str]) -> bool:
    return words[1] in ("ci", "replay") and "--trust" in words


@pytest.mark.slow
@pytest.mark.parametrize(("doc", "command"), RUNNABLE, ids=[f"{d}:{c}" for d, c in RUNNABLE])
def test_a_documented_command_runs_as_written(
    workspace: Path, dynamic_workspace: Path, doc: str, command: str
) -> None:
    words = shlex.split(command.split(" < ")[0])
    if _runs_the_dynamic_tier_over_the_workspace(words):
        workspace = dynamic_workspace
    stdin = (workspace / command.split(" < ")[1].strip()).read_text() if " < " in command else None
    expanded: list[str] = []
    for word in words[1:]:
        globbed = sorted(workspace.glob(word)) if "*" in word else []
        expanded += [str(p) for p in globbed] or [word]
    done = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *expanded],
        cwd=workspace,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=600,
    )
    assert done.returncode in (0, 1), f"{doc}: {command}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr and "usage:" not in done.stderr, done.stderr[-2000:]
