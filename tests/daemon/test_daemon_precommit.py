""".pre-commit-hooks.yaml: a manifest pre-commit accepts, whose entries run.

With ``pre-commit`` installed the manifest goes through ``pre-commit validate-manifest``;
without it, it is checked against the fields pre-commit's manifest schema requires and the
values it allows. Either way every hook's entry is run the way pre-commit runs it (the
entry's words, then the staged file names).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import REPO

MANIFEST = REPO / ".pre-commit-hooks.yaml"

# pre-commit 4.x (pre_commit/clientlib.py, pre_commit/languages/__init__.py)
REQUIRED = {"id": str, "name": str, "entry": str, "language": str}
OPTIONAL: dict[str, type] = {
    "alias": str,
    "files": str,
    "exclude": str,
    "types": list,
    "types_or": list,
    "exclude_types": list,
    "additional_dependencies": list,
    "args": list,
    "always_run": bool,
    "fail_fast": bool,
    "pass_filenames": bool,
    "description": str,
    "language_version": str,
    "log_file": str,
    "minimum_pre_commit_version": str,
    "require_serial": bool,
    "stages": list,
    "verbose": bool,
}
LANGUAGES = {
    "conda", "coursier", "dart", "docker", "docker_image", "dotnet", "fail", "golang", "haskell",
    "julia", "lua", "node", "perl", "pygrep", "python", "r", "ruby", "rust", "script", "swift",
    "system", "unsupported", "unsupported_script",
}  # fmt: skip
STAGES = {
    "commit-msg", "post-checkout", "post-commit", "post-merge", "post-rewrite", "pre-commit",
    "pre-merge-commit", "pre-push", "pre-rebase", "prepare-commit-msg", "manual",
}  # fmt: skip
FILE_TYPES = {"file", "text", "python", "pyi", "python3", "toml", "yaml", "jupyter"}  # tags of `identify`


def _scalar(text: str) -> Any:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(v) for v in text[1:-1].split(",") if v.strip()]
    if text in ("true", "false"):
        return text == "true"
    if text[:1] in "'\"":
        return ast.literal_eval(text)
    return text


def load_manifest(text: str) -> Any:
    """The manifest as data: PyYAML when installed, else the subset of YAML it is written in
    (a block list of maps of plain/quoted scalars and flow lists, with comments)."""
    if importlib.util.find_spec("yaml") is not None:
        import yaml  # type: ignore[import-untyped]

        return yaml.safe_load(text)
    hooks: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = re.sub(r"\s+#.*$", "", raw) if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        item = re.match(r"^- (\w+):\s*(.*)$", line)
        field = re.match(r"^  (\w+):\s*(.*)$", line)
        if item:
            hooks.append({item.group(1): _scalar(item.group(2))})
        elif field and hooks:
            hooks[-1][field.group(1)] = _scalar(field.group(2))
        else:
            raise AssertionError(f"not in the YAML subset this test reads: {raw!r}")
    return hooks


def structural_errors(hooks: Any) -> list[str]:
    if not isinstance(hooks, list) or not hooks:
        return ["the manifest must be a non-empty list of hooks"]
    errors = []
    ids = [h.get("id") for h in hooks if isinstance(h, dict)]
    if len(ids) != len(set(ids)):
        errors.append(f"duplicate hook ids: {ids}")
    for hook in hooks:
        if not isinstance(hook, dict):
            errors.append(f"a hook must be a map, got {hook!r}")
            continue
        for key, kind in REQUIRED.items():
            if not isinstance(hook.get(key), kind) or not hook.get(key):
                errors.append(f"{hook.get('id')}: missing or empty `{key}`")
        for key, value in hook.items():
            if key not in REQUIRED and key not in OPTIONAL:
                errors.append(f"{hook.get('id')}: unknown key `{key}`")
            elif key in OPTIONAL and not isinstance(value, OPTIONAL[key]):
                errors.append(f"{hook.get('id')}: `{key}` must be a {OPTIONAL[key].__name__}")
        if hook.get("language") not in LANGUAGES:
            errors.append(f"{hook.get('id')}: unknown language {hook.get('language')!r}")
        for stage in hook.get("stages", []):
            if stage not in STAGES:
                errors.append(f"{hook.get('id')}: unknown stage {stage!r}")
        for key in ("types", "types_or", "exclude_types"):
            for tag in hook.get(key, []):
                if tag not in FILE_TYPES:
                    errors.append(f"{hook.get('id')}: unknown file type {tag!r}")
        for key in ("files", "exclude"):
            if key in hook:
                re.compile(hook[key])
        if "types" not in hook and "types_or" not in hook and "files" not in hook:
            errors.append(f"{hook.get('id')}: no `types`/`files`: it would run on every file")
    return errors


HOOKS = load_manifest(MANIFEST.read_text(encoding="utf-8"))


def test_manifest_is_valid() -> None:
    if importlib.util.find_spec("pre_commit") is not None:
        p = subprocess.run(
            [sys.executable, "-m", "pre_commit", "validate-manifest", str(MANIFEST)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stdout + p.stderr
    assert structural_errors(HOOKS) == []
    assert {h["id"] for h in HOOKS} == {"warp-harness", "warp-harness-fix", "warp-harness-dynamic"}
    assert all("jupyter" in h.get("types_or", []) for h in HOOKS)  # notebooks are checked too


def test_the_checker_rejects_broken_manifests() -> None:
    assert structural_errors([{"id": "x", "name": "x", "entry": "x"}])  # no language
    assert structural_errors([{"id": "x", "name": "x", "entry": "x", "language": "pyhton", "types": []}])
    good = {"id": "x", "name": "x", "entry": "x", "language": "python", "types": ["python"]}
    assert structural_errors([good]) == []
    assert structural_errors([dict(good, stages=["push-it"])])
    assert structural_errors([dict(good, typo=True)])


def test_entries_are_console_scripts_of_this_package() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    scripts = re.search(r"^\[project\.scripts\]\n((?:.+\n)+)", text, re.MULTILINE)
    assert scripts is not None
    declared = {line.split("=")[0].strip() for line in scripts.group(1).splitlines() if "=" in line}
    for hook in HOOKS:
        assert shlex.split(hook["entry"])[0] in declared, hook  # `language: python` installs them


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    kernel = "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float), y: wp.array(dtype=float)):\n    i = wp.tid()\n    y[i] = wp.{fn}(x[i])\n"  # noqa: E501
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(kernel.format(fn="sqrt"))
    bad.write_text(kernel.format(fn="sqroot"))
    return good, bad


def _run_hook(hook: dict[str, Any], *names: Path) -> subprocess.CompletedProcess[str]:
    words = shlex.split(hook["entry"]) + list(hook.get("args", []))
    # pre-commit runs the installed `warp-harness` script; its module is warp_harness.cli
    cmd = [sys.executable, "-m", "warp_harness", *words[1:], *map(str, names)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=names[0].parent)


def test_static_hook_runs_like_pre_commit_runs_it(files: tuple[Path, Path]) -> None:
    (hook,) = [h for h in HOOKS if h["id"] == "warp-harness"]
    good, bad = files
    assert _run_hook(hook, good).returncode == 0
    p = _run_hook(hook, good, bad)
    assert p.returncode == 1 and "WH004" in p.stdout and "bad.py" in p.stdout


def test_dynamic_hook_arguments_parse() -> None:
    from warp_harness.cli import build_parser

    (hook,) = [h for h in HOOKS if h["id"] == "warp-harness-dynamic"]
    args = build_parser().parse_args([*shlex.split(hook["entry"])[1:], "k.py"])
    assert args.trust is True and args.no_bench is True and args.paths == ["k.py"]


def test_fix_hook_writes_the_safe_fixes(tmp_path: Path) -> None:
    (hook,) = [h for h in HOOKS if h["id"] == "warp-harness-fix"]
    path = tmp_path / "k.py"
    path.write_text(
        "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    x[wp.tid()] = 1.0  # wh: ignore[WH003]\n",
        encoding="utf-8",
    )
    (tmp_path / ".git").mkdir()
    done = _run_hook(hook, path)
    assert "# wh: ignore" not in path.read_text(encoding="utf-8"), done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr  # nothing left once the fix is in


def test_static_hook_checks_a_notebook(tmp_path: Path) -> None:
    import json

    (hook,) = [h for h in HOOKS if h["id"] == "warp-harness"]
    source = (
        "import warp as wp\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    x[wp.tid()] = wp.sqroot(1.0)\n"
    )
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    done = _run_hook(hook, path)
    assert done.returncode == 1 and "WH004" in done.stdout, done.stdout + done.stderr
