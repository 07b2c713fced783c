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

from warp_harness.batch import MIN_PARALLEL_FILES, Lines, check_files, folder_groups, lines_for_format
from warp_harness.check_cache import CheckCache
from warp_harness.cli import _LAZY_COMMANDS, _LAZY_MODULES, build_parser
from warp_harness.engine import check_paths
from warp_harness.output import FORMATS, render
from warp_harness.output.model import FileResult
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


@pytest.fixture(scope="module")
def full_check() -> list[FileResult]:
    """The corpora checked in one process, every line kept: what each format's output is compared with."""
    return check_paths(CORPORA)


@pytest.fixture(scope="module")
def trimmed_checks() -> dict[Lines, list[FileResult]]:
    """A pool's check of the corpora per kind of lines it keeps (`lines_for_format`: the eleven formats
    take two kinds; a check of both corpora per format took 11-15 s of each test, load 4-8)."""
    return {}


@pytest.mark.parametrize("output_format", FORMATS)
def test_only_the_lines_a_format_reads_are_kept_and_the_output_is_the_same(
    output_format: str, full_check: list[FileResult], trimmed_checks: dict[Lines, list[FileResult]]
) -> None:
    full = full_check
    lines = lines_for_format(output_format)
    if lines not in trimmed_checks:
        trimmed_checks[lines] = check_files(CORPORA, jobs=2, cache=False, lines=lines)
    trimmed = trimmed_checks[lines]
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


def test_small_files_without_kernels_in_a_tree_are_syntax_checked_without_their_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a check of many files, a small file without kernels is syntax-checked by symtable (a third of the
    parse: 0.9 MB of newton's files) and gets the same records; a file alone is still parsed (`check_bytes`:
    symtable's import costs more than a small parse)."""
    from warp_harness.model import source

    for i in range(MIN_PARALLEL_FILES):
        (tmp_path / f"plain{i}.py").write_text(f"import os\n\nX{i} = os.getcwd()\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    expected = check_paths([tmp_path])
    assert [r.rule for r in expected[0].records] == ["WH000"]  # broken.py: the syntax error is still found

    def no_tree(text: str) -> source.ParsedSource:
        assert "def f(:" in text, "a file that parses was parsed into a tree"
        return original(text)

    original = source.parse_source
    monkeypatch.setattr(source, "parse_source", no_tree)
    assert check_files([tmp_path], jobs=1, cache=False) == expected
    with pytest.raises(AssertionError, match="parsed into a tree"):
        check_files([tmp_path / "plain0.py"], jobs=1, cache=False)


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


def _kernel_and_launcher(tmp_path: Path, launch: str) -> tuple[Path, Path]:
    """A package whose ``sim.py`` launches (``wp.<launch>``) the kernel of its ``kernels.py`` with a 2-D
    ``dim`` (WH007 at the launch): the package and ``sim.py``."""
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
        f"def run(a, n):\n    wp.{launch}(k, dim=(n, n), inputs=[a])\n",
        encoding="utf-8",
    )
    return pkg, sim


def test_one_file_launching_a_kernel_of_another_module_is_judged_as_in_a_tree_check(tmp_path: Path) -> None:
    """The workspace model is built when a file first needs it: a single named file still resolves."""
    pkg, sim = _kernel_and_launcher(tmp_path, "launch")
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
    pkg, sim = _kernel_and_launcher(tmp_path, fullwidth)
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


def _kernel_module(name: str, padding: int) -> str:
    return (
        f"import warp as wp\n\n# {'x' * padding}\n\n\n@wp.kernel\ndef {name}(a: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    a[i] = 1.0\n"
    )


def test_a_launcher_is_checked_right_after_its_target_which_is_parsed_and_modelled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tests/test_a.py`` launches a kernel of ``pkg/a_kernels.py``; found in between, two large kernel
    modules evict the target from the process's cached models: checked where they lie, the target
    was parsed and modelled again for the launcher."""
    import warp_harness.batch as batch
    import warp_harness.model.module as module_mod
    import warp_harness.model.project as project_mod
    import warp_harness.model.source as source_mod

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a_kernels.py").write_text(_kernel_module("target", 100))
    for n in (1, 2):  # together over the cache's 700 kB of source
        (tmp_path / "pkg" / f"b_big{n}.py").write_text(_kernel_module(f"big{n}", 400_000))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(
        "import warp as wp\nfrom pkg.a_kernels import target\n\n\n"
        "def test(a, n):\n    wp.launch(target, dim=n, inputs=[a])\n"
    )
    order: list[str] = []
    parses: list[str] = []
    models: list[str] = []
    parse, build, check_one = source_mod.parse_source, module_mod.build_model, batch._check_one

    def counted_parse(text: str) -> object:
        parses.append(text)
        return parse(text)

    def counted_build(text: str, *args: object, **kwargs: object) -> object:
        models.append(text)
        return build(text, *args, **kwargs)  # type: ignore[arg-type]

    def ordered(path: Path) -> object:
        order.append(path.name)
        return check_one(path)

    monkeypatch.setattr(source_mod, "parse_source", counted_parse)
    monkeypatch.setattr(module_mod, "build_model", counted_build)
    monkeypatch.setattr(project_mod, "build_model", counted_build)
    monkeypatch.setattr(batch, "_check_one", ordered)
    results = check_files([tmp_path], jobs=1, cache=False)
    assert [Path(r.path).name for r in results] == [  # reported in the order the files are found
        "__init__.py",
        "a_kernels.py",
        "b_big1.py",
        "b_big2.py",
        "test_a.py",
    ]
    assert order == ["__init__.py", "a_kernels.py", "test_a.py", "b_big1.py", "b_big2.py"]
    target = (tmp_path / "pkg" / "a_kernels.py").read_text()
    assert parses.count(target) == 1
    assert models.count(target) == 1
    # with a result cache (most files answered by it) the files are not read ahead to be ordered
    order.clear()
    check_files([tmp_path], jobs=1, cache=CheckCache(tmp_path / "cache"))
    assert order == ["__init__.py", "a_kernels.py", "b_big1.py", "b_big2.py", "test_a.py"]


def test_a_launcher_too_large_to_share_the_cache_with_its_target_is_checked_right_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked after its target, ``pkg/b_large.py`` (with the target over the 700 kB of models a process
    keeps) evicts it and builds it again; checked before, the target's own check reuses its build."""
    import warp_harness.model.module as module_mod
    import warp_harness.model.project as project_mod

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a_kernels.py").write_text(_kernel_module("target", 100_000))
    (tmp_path / "pkg" / "b_large.py").write_text(
        f"import warp as wp\nfrom .a_kernels import target\n\n# {'x' * 650_000}\n\n"
        "def run(a, n):\n    wp.launch(target, dim=n, inputs=[a])\n"
    )
    (tmp_path / "pkg" / "c_small.py").write_text(
        "import warp as wp\nfrom .a_kernels import target\n\n\n"
        "def run(a, n):\n    wp.launch(target, dim=n, inputs=[a])\n"
    )
    models: list[str] = []
    build = module_mod.build_model

    def counted_build(text: str, *args: object, **kwargs: object) -> object:
        models.append(text)
        return build(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module_mod, "build_model", counted_build)
    monkeypatch.setattr(project_mod, "build_model", counted_build)
    results = check_files([tmp_path], jobs=1, cache=False)
    assert [Path(r.path).name for r in results] == ["__init__.py", "a_kernels.py", "b_large.py", "c_small.py"]
    assert models.count((tmp_path / "pkg" / "a_kernels.py").read_text()) == 1


def test_launch_targets_follow_the_imports_of_the_names_a_file_launches(tmp_path: Path) -> None:
    from warp_harness.batch import launch_targets
    from warp_harness.engine import project_index

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for init in (pkg / "__init__.py", pkg / "sub" / "__init__.py"):
        init.write_text("")
    sources = {
        "pkg/small.py": _kernel_module("small", 10),
        "pkg/large.py": _kernel_module("large", 1000),
        "pkg/sub/kernels.py": _kernel_module("step", 10),
        # the largest module it launches from; `helper` is imported but not launched
        "pkg/sub/both.py": "import warp as wp\nfrom ..small import small\nfrom pkg.large import (\n"
        "    large as big,\n)\nfrom pkg.helper import helper\n\n"
        "def run():\n    wp.launch(small, 1)\n    wp.launch(kernel=big, dim=1)\n    helper()\n",
        "pkg/helper.py": "def helper():\n    pass\n",
        "pkg/sub/by_module.py": "import warp as wp\nfrom . import kernels\n\n"
        "def run():\n    wp.launch(kernels.step, dim=1)\n",
        "pkg/sub/aliased.py": "import warp as wp\nimport pkg.sub.kernels as ks\n\n"
        "def run():\n    wp.launch_tiled(ks.step, dim=1)\n",
        # a comment, a string and `relaunch(`: no import statement, no launch
        "pkg/sub/decoy.py": "x = 'from pkg.large import large'  # import pkg.small as small\n"
        "relaunch(large)\n",
        "pkg/sub/own.py": "import warp as wp\n\n@wp.kernel\ndef mine():\n    pass\n\n"
        "def run():\n    wp.launch(mine, dim=1)\n",
        # names no module of the tree has (not ASCII either)
        "pkg/sub/odd.py": "import warp as wp\nfrom pkg import \u00e9t\u00e9 as kk\nimport \u00e9.b as k2\n\n"
        "def run():\n    wp.launch(kk, 1)\n    wp.launch(k2, 1)\n",
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    files = [tmp_path / name for name in sources]
    index = project_index([tmp_path])
    targets = launch_targets(files, lambda _: index)
    named = {files[k].name: files[v].relative_to(tmp_path).as_posix() for k, v in targets.items()}
    assert named == {
        "both.py": "pkg/large.py",
        "by_module.py": "pkg/sub/kernels.py",
        "aliased.py": "pkg/sub/kernels.py",
    }


def test_check_units_put_launchers_after_their_target_and_cut_cycles() -> None:
    from warp_harness.batch import check_units

    # 3 and 1 launch into 0, 4 into 3, 5 and 6 into each other
    units = check_units(7, {3: 0, 1: 0, 4: 3, 5: 6, 6: 5})
    assert units in ([(0, [0, 1, 3, 4]), (2, [2]), (5, [5, 6])], [(0, [0, 1, 3, 4]), (2, [2]), (6, [6, 5])])
    # with sizes: 1 (a leaf) and 0 do not fit in the room together, 3 and 0 do not either but 4 follows 3
    sizes = [50, 60, 1, 60, 1, 1, 1]
    units = check_units(7, {3: 0, 1: 0, 4: 3}, sizes, room=100)
    assert units == [(0, [1, 0, 3, 4]), (2, [2]), (5, [5]), (6, [6])]


def test_the_pool_gets_a_launcher_in_its_target_s_task_right_after_it(tmp_path: Path) -> None:
    files = []
    for folder, sizes in {"a": [10, 10, 10], "b": [30], "c": [1, 2], "d": [100, 100]}.items():
        (tmp_path / folder).mkdir()
        for n, size in enumerate(sizes):
            path = tmp_path / folder / f"m{n}.py"
            path.write_text("#" * size)
            files.append(path)
    groups = folder_groups(files, workers=2, targets={5: 0, 4: 3})
    assert [0, 5, 1, 2] in groups  # c/m1 launches into a/m0
    assert [3, 4] in groups  # c/m0 into b/m0
    assert sorted(i for g in groups for i in g) == list(range(len(files)))


def test_a_checked_file_s_bytes_are_freed_before_its_analysis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read, decoded, digested: the bytes are not held by the frames above the analysis (newton's 1 MB steel
    solver held 1 MiB through the peak memory of its check)."""
    import warp_harness.engine as engine

    freed: list[bool] = []
    alive_at_analysis: list[bool] = []

    class Tracked(bytes):
        def __del__(self) -> None:
            freed.append(True)

    read, analyse = engine.read_regular, engine.analyse_parsed

    def tracked_read(path: Path, limit: int) -> bytes:
        return Tracked(read(path, limit))

    def noting_analyse(*args: object, **kwargs: object) -> object:
        alive_at_analysis.append(not freed)
        return analyse(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "read_regular", tracked_read)
    monkeypatch.setattr(engine, "analyse_parsed", noting_analyse)
    _, sim = _kernel_and_launcher(tmp_path, "launch")
    (result,) = check_files([sim], jobs=1, cache=False)
    assert [r.rule for r in result.records] == ["WH007"]
    assert alive_at_analysis == [False]
