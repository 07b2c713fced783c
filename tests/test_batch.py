"""`check` over many files (warp_harness.batch): a process pool gives the same results, in the same
order, as one process; trimmed source lines render the same output; the CLI imports only what the
chosen subcommand needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import warp

from warp_harness.batch import MIN_PARALLEL_FILES, check_files, folder_groups, lines_for_format
from warp_harness.cli import _LAZY_COMMANDS, _LAZY_MODULES, build_parser
from warp_harness.engine import check_paths
from warp_harness.output import FORMATS, render
from warp_harness.rules.info import rule_infos

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
WARP_EXAMPLES = Path(warp.__file__).parent / "examples"
CORPORA = [EXAMPLES, WARP_EXAMPLES]


def _cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("corpus", CORPORA, ids=["examples", "warp-examples"])
def test_a_pool_returns_what_one_process_returns_in_the_same_order(corpus: Path) -> None:
    sequential = check_paths([corpus])  # the per-file loop `check` ran before
    assert len(sequential) >= MIN_PARALLEL_FILES  # the pool is really used below
    one = check_files([corpus], jobs=1, cache=False)
    two = check_files([corpus], jobs=2, cache=False)
    assert [r.path for r in two] == [r.path for r in sequential]
    assert one == sequential
    assert two == sequential
    assert any(r.records for r in two)


@pytest.mark.parametrize("output_format", FORMATS)
def test_only_the_lines_a_format_reads_are_kept_and_the_output_is_the_same(output_format: str) -> None:
    full = check_paths(CORPORA)
    trimmed = check_files(CORPORA, jobs=2, cache=False, lines=lines_for_format(output_format))
    infos = rule_infos()

    def show(results: list) -> str:  # type: ignore[type-arg]
        return render(output_format, results, rules=infos, tool_version="0", color=False)

    assert show(trimmed) == show(full)
    kept = sum(1 for r in trimmed for line in r.source_lines or () if line)
    total = sum(1 for r in full for line in r.source_lines or () if line)
    assert kept < total / 10  # most lines are not held until the output


def test_check_jobs_1_and_2_print_the_same_report() -> None:
    outputs = [
        _cli("check", str(EXAMPLES), str(WARP_EXAMPLES), "--no-cache", "--output-format", fmt, "--jobs", jobs)
        for fmt in ("json", "text")
        for jobs in ("1", "2")
    ]
    assert all(o.returncode == 1 for o in outputs), outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout and outputs[2].stdout == outputs[3].stdout
    assert '"rule": "WH003"' in outputs[0].stdout


def test_jobs_must_be_a_positive_number() -> None:
    result = _cli("check", str(EXAMPLES), "--jobs", "0")
    assert result.returncode == 2
    assert "--jobs" in result.stderr and "Traceback" not in result.stderr


def test_an_empty_file_or_none_is_checked_in_one_process(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("")
    assert check_files([tmp_path], jobs=8, cache=False)[0].records == ()
    assert check_files([tmp_path / "nothing-here"], jobs=8, cache=False) == []


def test_check_imports_neither_the_daemon_nor_the_server_nor_asyncio(tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "warp_harness", "check", str(empty)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert "warp_harness.engine" in imported  # the measurement works
    for module in ("asyncio", "warp_harness.daemon.cli", "warp_harness.server.cli", "pygls", "lsprotocol"):
        assert module not in imported, module


@pytest.mark.parametrize("output_format", ["text", "concise", "json"])
def test_a_file_without_kernels_is_checked_without_importing_the_rules(
    tmp_path: Path, output_format: str
) -> None:
    """No kernel, no launch, no --select: neither the rules nor the workspace model are imported (the
    start-up cost of `check` on one small file)."""
    plain = tmp_path / "plain.py"
    plain.write_text("import os\n\nprint(os.getcwd())\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = [sys.executable, "-X", "importtime", "-m", "warp_harness", "check", str(plain)]
    for _ in range(2):  # a cold and a warm result cache
        result = subprocess.run(
            [*command, "--output-format", output_format], capture_output=True, text=True, env=env, timeout=120
        )
        assert result.returncode == 0, result.stderr
        imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
        assert "warp_harness.engine" in imported  # the measurement works
        for module in ("warp_harness.rules", "warp_harness.rules.base", "warp_harness.model.project"):
            assert module not in imported, module


def test_the_lazy_table_names_every_command_of_every_module() -> None:
    import argparse

    for module_name in _LAZY_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        __import__(module_name, fromlist=["add_subcommands"]).add_subcommands(sub)
        for command in sub.choices:
            assert _LAZY_COMMANDS.get(command) == (module_name,), command
    # and a parser built for one command still knows it
    for command in _LAZY_COMMANDS:
        parser = build_parser(command)
        choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
        assert command in choices and "check" in choices


def test_a_killed_worker_costs_a_warning_not_the_results(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import signal

    import warp_harness.batch as batch

    parent = os.getpid()
    real = batch._analyse

    def dies_in_a_worker(data: bytes, shown: str, settings: object, table: object) -> object:
        if os.getpid() != parent and shown.endswith("race.py"):
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
        return real(data, shown, settings, table)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "_analyse", dies_in_a_worker)  # forked workers inherit it
    results = check_files([EXAMPLES], jobs=2, cache=False)
    assert results == check_paths([EXAMPLES])
    assert "a check process died; checking in one process" in capsys.readouterr().err


def test_a_pool_resolves_launches_across_modules_as_one_process_does(tmp_path: Path) -> None:
    """Workers fork with the workspace index: a kernel of another module is judged the same in each."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(
        "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    a[i] = 1.0\n"
    )
    for n in range(MIN_PARALLEL_FILES + 2):
        (pkg / f"sim{n}.py").write_text(
            "import warp as wp\nfrom . import kernels as K\n\n\ndef run(a, n):\n"
            "    wp.launch(K.k, dim=(n, n), inputs=[a])\n"
        )
    one = check_files([pkg], jobs=1, cache=False)
    two = check_files([pkg], jobs=2, cache=False)
    assert one == two
    assert sum(1 for x in two for r in x.records if r.rule == "WH007") == MIN_PARALLEL_FILES + 2


def test_one_file_launching_a_kernel_of_another_module_is_judged_as_in_a_tree_check(tmp_path: Path) -> None:
    """The workspace model is built when a file first needs it: a single named file still resolves."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(
        "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    a[i] = 1.0\n"
    )
    sim = pkg / "sim.py"
    sim.write_text(
        "import warp as wp\nfrom .kernels import k\n\n\n"
        "def run(a, n):\n    wp.launch(k, dim=(n, n), inputs=[a])\n"
    )
    (alone,) = check_files([sim], jobs=1, cache=False)
    in_tree = next(r for r in check_files([pkg], jobs=1, cache=False) if r.path == alone.path)
    assert alone == in_tree
    assert [r.rule for r in alone.records] == ["WH007"]


def test_a_file_that_launches_nothing_is_checked_without_walking_its_folder(tmp_path: Path) -> None:
    import warp_harness.batch as batch

    (tmp_path / "tool.py").write_text("import os\n\nprint(os.getcwd())\n")
    (tmp_path / "other.py").write_text("import warp as wp\nwp.launch(k, dim=1)\n")
    (result,) = check_files([tmp_path / "tool.py"], jobs=1, cache=False)
    assert result.records == ()
    assert batch._job is not None and batch._job.project is None  # no index of the folder was built
    check_files([tmp_path / "other.py"], jobs=1, cache=False)
    assert batch._job is not None and batch._job.project is not None


def test_the_pool_gets_each_folder_whole_and_the_largest_tasks_first(tmp_path: Path) -> None:
    files = []
    for folder, sizes in {"a": [10, 10, 10], "b": [500], "c": [1, 2], "d": [300, 300, 300, 300]}.items():
        (tmp_path / folder).mkdir()
        for n, size in enumerate(sizes):
            path = tmp_path / folder / f"m{n}.py"
            path.write_text("#" * size)
            files.append(path)
    groups = folder_groups(files, workers=2)
    assert sorted(i for g in groups for i in g) == list(range(len(files)))  # each file once
    for group in groups:
        assert len({files[i].parent for i in group}) == 1  # one folder per task
        assert group == sorted(group)  # in the order the files were found
    # small folders stay whole; "d" (1200 of 1733 bytes) is split so that both processes share it
    assert [0, 1, 2] in groups and [3] in groups and [4, 5] in groups
    d_groups = [g for g in groups if files[g[0]].parent.name == "d"]
    assert len(d_groups) > 1
    totals = [sum(files[i].stat().st_size for i in g) for g in groups]
    assert totals == sorted(totals, reverse=True)


def test_a_launch_spelled_in_fullwidth_letters_is_resolved_into_another_module(tmp_path: Path) -> None:
    """Python reads identifiers NFKC-normalised: ``wp.ｌａｕｎｃｈ`` is ``wp.launch``, and the workspace
    model must be built for the file although its bytes never spell ``launch``."""
    fullwidth = "ｌａｕｎｃｈ"
    assert eval(f"ns.{fullwidth}", {"ns": SimpleNamespace(launch=7)}) == 7  # the same identifier to Python
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(
        "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    a[i] = 1.0\n"
    )
    sim = pkg / "sim.py"
    sim.write_text(
        "import warp as wp\nfrom .kernels import k\n\n\n"
        f"def run(a, n):\n    wp.{fullwidth}(k, dim=(n, n), inputs=[a])\n",
        encoding="utf-8",
    )
    assert b"launch" not in sim.read_bytes()
    (alone,) = check_files([sim], jobs=1, cache=False)
    in_tree = next(r for r in check_files([pkg], jobs=1, cache=False) if r.path == alone.path)
    expected = next(r for r in check_paths([pkg]) if r.path == alone.path)  # the model always built
    assert alone == in_tree == expected
    assert [r.rule for r in alone.records] == ["WH007"]


_WH007_LAUNCH = (
    "import warp as wp\n\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    i = wp.tid()\n"
    "    a[i] = 1.0\n\n\ndef run(a, n):\n    wp.launch(k, dim=(n, n), inputs=[a])\n"
)


def test_settings_loaded_once_per_folder_still_differ_per_file_and_per_link_target(tmp_path: Path) -> None:
    """`_Job.settings_for` shares a folder's settings between its files, except where they differ: a file
    named by per-file-ignores, and a symlink (its settings are those of its target's folder)."""
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    (top / "pyproject.toml").write_text('[tool.warp-harness]\nper-file-ignores = { "b.py" = ["WH007"] }\n')
    (top / "sub" / "pyproject.toml").write_text('[tool.warp-harness]\nignore = ["WH007"]\n')
    for name in ("a.py", "b.py", "c.py"):
        (top / name).write_text(_WH007_LAUNCH)
    (top / "sub" / "target.py").write_text(_WH007_LAUNCH)
    (top / "a_link.py").symlink_to(top / "sub" / "target.py")
    (top / "sub" / "z_link.py").symlink_to(top / "a.py")
    (top / "x.py").write_text(_WH007_LAUNCH)
    results = check_files([top], jobs=1, cache=False)
    flagged = {Path(r.path).name for r in results if any(x.rule == "WH007" for x in r.records)}
    assert flagged == {"a.py", "c.py", "x.py"}
    assert results == check_paths([top])  # settings loaded for every file


def test_the_collection_after_each_file_leaves_its_tree_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's tree is frozen once parsed (`model.parse_freezing`): the young-generation collection
    after each file does not traverse the trees the workspace model keeps; everything is unfrozen after."""
    import ast
    import gc

    import warp_harness.batch as batch

    kernels = "import warp as wp\n\n" + "".join(
        f"\n@wp.kernel\ndef k{n}(a: wp.array(dtype=float)):\n"
        f"    i = wp.tid()\n    a[i] = float({n}) * a[i] + 1.0\n"
        for n in range(50)
    )
    (tmp_path / "kernels.py").write_text(kernels)
    (tmp_path / "sim.py").write_text(
        "import warp as wp\nfrom kernels import k0\n\n\n"
        "def run(a, n):\n    wp.launch(k0, dim=n, inputs=[a])\n"
    )
    seen: list[int] = []

    def collect(generation: int = 2) -> int:
        gc.disable()  # else the list `get_objects` makes starts an automatic collection first
        seen.append(sum(isinstance(o, ast.AST) for o in gc.get_objects(generation)))
        gc.enable()
        return gc.collect(generation)

    # a namespace: looking `collect` up allocates nothing (a bound method would, and start a collection)
    fake = SimpleNamespace(collect=collect, enable=gc.enable, disable=gc.disable, isenabled=gc.isenabled)
    monkeypatch.setattr(batch, "gc", fake)
    results = check_files([tmp_path], jobs=1, cache=False)
    assert [len(r.records) for r in results] == [0, 0]
    tree_nodes = sum(1 for _ in ast.walk(ast.parse(kernels)))
    assert len(seen) == 2 and max(seen) < tree_nodes // 10, (seen, tree_nodes)
    assert gc.get_freeze_count() == 0
