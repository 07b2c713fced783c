"""`warp-harness check` over a real tree, side by side with its peers, in the same run.

Corpus: newton 1.8.0 (downloaded with pip into a cache folder on first use, never vendored) plus
the examples and tests of the installed warp-lang. Rows, each a fresh process, interleaved over
``--repeat`` rounds so load on a shared machine hits every row alike:

- the floor: CPython reading and ``ast.parse``-ing the same files, one core
- ``warp-harness check``: no cache with ``--jobs 1`` and ``--jobs N``, a cold cache (written), a warm
  cache (unchanged re-run), and an empty file (start-up)
- optionally the old code (``--old-pythonpath``: a checkout whose ``warp_harness`` package shadows
  the installed one, e.g. ``git worktree add /tmp/wh-old HEAD`` copied into the package layout)
- pyflakes and ``ruff check`` (cold, no cache; ruff warm with its cache), and pyflakes on the empty file
- the smallest file of the corpus that launches a kernel, checked alone with a warm cache (an editor's save
  hook), and pyflakes on it

``--parse-profile``: instead of the rows, one ``check --no-cache --jobs 1`` in this process with
``ast.parse``, ``symtable`` and ``gc.collect`` counted and timed: how many texts are parsed more than once
(a large file is parsed in pieces: its pieces count as parses of their own), and their share of the CPU.

``--phase-profile``: instead of the rows, one ``check --no-cache --jobs N --output-format concise`` in this
process (its pool's workers forked from it) with timers around its phases (reading, parsing, the model, each
rule, the shared analyses, launch resolution, the workspace model, freeing, ...): each phase's own CPU (what
it calls that is timed too is not counted in it), summed over the processes, beside the floor row's CPU
(reading and ``ast.parse``-ing the same files, in a process of its own).

``--background-load N``: every row is also run with N busy processes beside it (benchmarks/load_generator.py:
another program of the user keeping a core busy), in the same rounds, and a second table printed.

Printed: min / median / max wall seconds, median CPU seconds (user + system, the process tree), peak
RSS of the largest process (MiB), peak PSS of the whole process tree (MiB: the sum over the command and
its pool workers of their proportional set sizes, sampled while it runs; see `_PeakPss`), each row's wall
median against the parse floor, pyflakes and ruff, and its peak RSS and PSS against pyflakes'. Also
``-X importtime`` of checking an empty file.

    python benchmarks/bench_check.py [--repeat 3] [--jobs 2] [--old-pythonpath DIR] [--corpus newton]
        [--background-load 1] [--only floor cold pyflakes]
    python benchmarks/bench_check.py --parse-profile [--corpus newton]
    python benchmarks/bench_check.py --phase-profile [--jobs 2] [--corpus newton]
"""

from __future__ import annotations

import argparse
import ast
import collections
import gc
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import symtable
import sys
import tempfile
import threading
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from load_generator import background_load, describe
from real_trees import NEWTON, fetch, warp_lang


def fetch_newton() -> Path:
    return fetch(NEWTON)


def warp_trees() -> list[Path]:
    base = warp_lang()
    return [base / "examples", base / "tests"]


def corpus(which: str) -> list[Path]:
    trees = {"newton": [fetch_newton()], "warp": warp_trees(), "all": [fetch_newton(), *warp_trees()]}
    return trees[which]


def parse_floor(list_file: str) -> None:
    """The floor row's process: read and parse every listed file, nothing else."""
    for name in Path(list_file).read_text().splitlines():
        try:
            ast.parse(Path(name).read_bytes())
        except (SyntaxError, ValueError):
            pass


def parse_profile(trees: list[Path]) -> None:
    """``check --no-cache --jobs 1`` over ``trees`` in this process, its parses counted and timed."""
    from collections.abc import Callable

    from warp_harness.cli import main as check_main

    seconds: collections.defaultdict[str, float] = collections.defaultdict(float)
    calls: collections.Counter[str] = collections.Counter()
    texts: collections.Counter[bytes] = collections.Counter()

    def timed(owner: Any, name: str, count_texts: bool = False) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            again = False
            if count_texts and args and isinstance(args[0], str | bytes):
                text = args[0] if isinstance(args[0], bytes) else args[0].encode("utf-8", "surrogatepass")
                digest = hashlib.blake2b(text, digest_size=8).digest()
                again = digest in texts
                texts[digest] += 1
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[name] += time.process_time() - start
                calls[name] += 1
                if again:
                    seconds["parse again"] += time.process_time() - start

        setattr(owner, name, wrapper)

    timed(ast, "parse", count_texts=True)
    timed(symtable, "symtable")
    timed(gc, "collect")
    start = time.process_time()
    with open(os.devnull, "w") as sink:
        saved = sys.stdout
        sys.stdout = sink
        try:
            check_main(["check", "--no-cache", "--jobs", "1", "--exit-zero", *map(str, trees)])
        finally:
            sys.stdout = saved
    total = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    again = sum(n - 1 for n in texts.values())
    print(
        f"load {os.getloadavg()[0]:.2f}: check --no-cache --jobs 1: "
        f"CPU {total:.2f} s, peak RSS {peak:.0f} MiB"
    )
    print(
        f"ast.parse: {calls['parse']} calls, {len(texts)} distinct texts, "
        f"{sum(1 for n in texts.values() if n > 1)} parsed more than once ({again} calls again, "
        f"{seconds['parse again']:.2f} s CPU)"
    )
    for name in ("parse", "symtable", "collect"):
        print(
            f"  {name}: {calls[name]} calls, {seconds[name]:.2f} s CPU ({100 * seconds[name] / total:.1f}%)"
        )


class _PhaseClock:
    """Each timed phase's own CPU seconds (process time) and calls: a stack of the phases running, a phase's
    time less that of the timed phases it called."""

    def __init__(self) -> None:
        self.own: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.calls: collections.Counter[str] = collections.Counter()
        self._stack: list[list[Any]] = []  # [phase, start, time of timed callees]

    def enter(self, phase: str) -> None:
        self._stack.append([phase, time.process_time(), 0.0])

    def leave(self) -> None:
        phase, start, inner = self._stack.pop()
        spent = time.process_time() - start
        self.own[phase] += spent - inner
        self.calls[phase] += 1
        if self._stack:
            self._stack[-1][2] += spent

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        """Time ``owner.name`` as ``phase``, also where a module imported it by name."""
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(phase)
            try:
                return original(*args, **kwargs)
            finally:
                self.leave()

        setattr(owner, name, timed)
        if isinstance(owner, type):
            return
        for module in list(sys.modules.values()):
            if (
                getattr(module, "__name__", "").startswith("warp_harness")
                and vars(module).get(name) is original
            ):
                setattr(module, name, timed)


# (module, attribute in it, phase): what `--phase-profile` times (own CPU, less the timed phases it calls)
_PHASES = [
    ("warp_harness.safe_read", "read_regular", "read files"),
    ("warp_harness.model.source", "decode_source", "decode bytes"),
    ("warp_harness.model.source", "_parse", "ast.parse"),
    ("warp_harness.model.source", "parses_cleanly", "syntax check by symtable (files without kernels)"),
    ("warp_harness.model.source", "parse_in_pieces", "parse: cutting into pieces, joining"),
    ("warp_harness.model.source", "parse_source", "parse: cutting into pieces, joining"),
    ("warp_harness.batch", "_Job.settings_for", "settings (pyproject)"),
    ("warp_harness.batch", "launch_targets", "check order (launch targets from the bytes)"),
    ("warp_harness.model.module", "build_model", "model: build_model"),
    ("warp_harness.model.index", "NodeIndex.__init__", "shared: node indexes"),
    ("warp_harness.model.launches", "find_launches", "model: finding launches"),
    ("warp_harness.model.inference", "Inference.run", "shared: type inference"),
    ("warp_harness.model.definite_assignment", "unbound_reads", "shared: definite assignment"),
    ("warp_harness.model.host_dtypes", "HostDtypes.array_type", "shared: host array types of launch args"),
    ("warp_harness.model.project", "ProjectIndex.for_paths", "workspace index (file walk, module names)"),
    ("warp_harness.model.project", "ProjectIndex.summary", "workspace: module summaries"),
    ("warp_harness.model.project", "ProjectIndex.view", "workspace: making room (frees models)"),
    ("warp_harness.model.project", "ProjectView.kernel_of", "launch resolution (other modules' models)"),
    ("warp_harness.engine", "analyse_parsed", "engine: rule loop"),
    ("warp_harness.engine", "_analyse_in_project", "engine: frees of a file's tree and model"),
    ("warp_harness.batch", "_analyse", "engine: frees of a file's tree and model"),
    ("warp_harness.engine", "check_file", "engine: frees of a file's tree and model"),
    ("warp_harness.engine", "judged_findings", "records: findings, suppressions, sorting"),
    ("warp_harness.engine", "finish_records", "records: findings, suppressions, sorting"),
    ("warp_harness.engine", "release_freed_memory", "malloc_trim"),
    ("gc", "collect", "gc.collect between files"),
]


def phase_profile(trees: list[Path], jobs: int) -> None:
    """``check --no-cache --jobs N`` over ``trees`` in this process, each phase's own CPU timed (`_PHASES`,
    every rule; in the pool's workers too, which write theirs to a folder after each task)."""
    import importlib
    import json
    import pickle

    clock = _PhaseClock()
    start = time.process_time()
    clock.enter("start-up: imports, builtin table")
    import warp_harness.batch as batch
    import warp_harness.engine as engine
    from warp_harness.builtins import load_table
    from warp_harness.cli import main as check_main

    importlib.import_module("warp_harness.rules")  # every rule, as the pool imports them before it forks
    load_table()
    clock.leave()
    for module_name, attribute, phase in _PHASES:
        *parents, name = attribute.split(".")
        owner: Any = importlib.import_module(module_name)
        for parent in parents:
            owner = getattr(owner, parent)
        clock.wrap(owner, name, phase)
    scoped = engine.scoped_records

    def rule_records(rule: Any, ctx: Any) -> Any:
        clock.enter(f"rule {rule.id}")
        try:
            found = list(scoped(rule, ctx))
        finally:
            clock.leave()
        yield from found

    engine.scoped_records = rule_records
    folder = Path(tempfile.mkdtemp(prefix="bench-phases-"))
    check_group, init_worker = batch._check_group, batch._init_worker
    inherited: dict[str, float] = {}

    def worker_init(job: Any) -> None:
        # a forked worker: its CPU so far is its start-up; what the parent had timed is not its own
        inherited.update(clock.own)
        clock.own["pool: worker start-up (fork to first task)"] += time.process_time()
        init_worker(job)

    def timed_group(paths: list[Path]) -> list[Any]:
        results = check_group(paths)
        clock.enter("pool: pickling results (timed aside, once more)")
        size = len(pickle.dumps(results))
        clock.leave()
        clock.own["pool: results pickled, bytes"] += size
        own = {k: v - inherited.get(k, 0.0) for k, v in clock.own.items()}
        calls = dict(clock.calls)
        record = {"own": own, "calls": calls, "cpu": time.process_time()}
        (folder / f"{os.getpid()}.json").write_text(json.dumps(record))
        return results

    # the pool sends its task function by name: the timed one goes by the name of the one it wraps
    timed_group.__module__, timed_group.__qualname__ = batch.__name__, "_check_group"
    batch._check_group, batch._init_worker = timed_group, worker_init
    with open(os.devnull, "w") as sink:
        saved = sys.stdout
        sys.stdout = sink
        try:
            check_main(
                ["check", "--no-cache", "--jobs", str(jobs), "--exit-zero", "--output-format", "concise"]
                + [str(t) for t in trees]
            )
        finally:
            sys.stdout = saved
    main_cpu = time.process_time() - start
    own, calls = collections.defaultdict(float, clock.own), collections.Counter(clock.calls)
    workers = [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))]
    shutil.rmtree(folder, ignore_errors=True)
    for worker in workers:
        for phase, seconds in worker["own"].items():
            own[phase] += seconds
        calls.update({k: v - clock.calls.get(k, 0) for k, v in worker["calls"].items()})
    pickled = own.pop("pool: results pickled, bytes", 0.0)
    aside = own.pop("pool: pickling results (timed aside, once more)", 0.0)
    total = main_cpu + sum(w["cpu"] for w in workers) - aside
    own["untimed (the rest of the engine and batch)"] = total - sum(own.values())
    floor = _floor_cpu(trees)
    print(
        f"load {os.getloadavg()[0]:.2f}: check --no-cache --jobs {jobs}: CPU {total:.2f} s "
        f"(this process {main_cpu:.2f}, {len(workers)} workers {sum(w['cpu'] for w in workers):.2f}); "
        f"the floor row (read, ast.parse): {floor:.2f} s ({total / floor:.2f}x)"
    )
    if workers:
        print(
            f"results pickled back: {pickled / 1024:.0f} KiB, {aside:.3f} s CPU to pickle them (timed aside)"
        )
    rules = sum(v for k, v in own.items() if k.startswith("rule "))
    print(f"every rule: {rules:.2f} s ({100 * rules / total:.1f}%)")
    print("| phase | calls | CPU s | share |\n|---|---:|---:|---:|")
    for phase, seconds in sorted(own.items(), key=lambda item: -item[1]):
        print(f"| {phase} | {calls.get(phase, '')} | {seconds:.2f} | {100 * seconds / total:.1f}% |")


def _floor_cpu(trees: list[Path]) -> float:
    """CPU seconds of the floor row's process (reading and ``ast.parse``-ing the files `check` sees under
    ``trees``), a fresh one: in this process the check's heap would slow its collections."""
    from warp_harness.engine import iter_python_files

    with tempfile.TemporaryDirectory() as work:
        listed = Path(work) / "files.txt"
        listed.write_text("\n".join(str(p) for p in iter_python_files(trees)))
        return run_once([sys.executable, __file__, "--parse-only", str(listed)], dict(os.environ))[1]


# how often the memory of a command's process tree is sampled (seconds)
PSS_INTERVAL = 0.05


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux: /proc/PID/task/TID/children)."""
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class _PeakPss(threading.Thread):
    """The largest sum of PSS over a process tree seen while it runs, sampled every PSS_INTERVAL.

    PSS (proportional set size) counts a page shared by n processes as 1/n in each, so the sum over the
    tree is the memory the whole command holds, forked pool workers included, without counting pages
    they share with their parent several times (the sum of RSS would) or missing the workers (the peak
    RSS of the largest process does). A peak shorter than the interval can be missed."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak_kib = max(self.peak_kib, sum(_pss_kib(p) for p in _tree(self.pid)))
            self._done.wait(PSS_INTERVAL)

    def stop(self) -> float:
        self._done.set()
        self.join()
        return self.peak_kib / 1024


def run_once(
    command: list[str], env: dict[str, str], cwd: Path | None = None
) -> tuple[float, float, float, float]:
    """Wall seconds, CPU seconds (user + system of the command's whole process tree: the pool's
    workers are reaped by the command, so wait4 counts them), peak RSS (MiB, the largest process
    of the tree) and the peak of the tree's summed PSS (MiB, `_PeakPss`)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    sampler = _PeakPss(proc.pid)
    sampler.start()
    assert proc.stderr is not None
    err = proc.stderr.read()
    # the sampler stops before the reap: a reaped pid may be reused
    pss = 0.0
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    finally:
        pss = sampler.stop()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {proc.returncode}: {err.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, pss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--corpus", choices=("newton", "warp", "all"), default="all")
    ap.add_argument("--old-pythonpath", metavar="DIR", help="also time the warp_harness package found in DIR")
    ap.add_argument("--only", nargs="*", help="row names to run (default: all)")
    ap.add_argument(
        "--background-load",
        type=int,
        default=0,
        metavar="N",
        help="also run every row with N busy processes beside it (a second table)",
    )
    ap.add_argument(
        "--parse-profile", action="store_true", help="count and time the parses of one check (no rows)"
    )
    ap.add_argument(
        "--phase-profile",
        action="store_true",
        help="time each phase of one check, every process (no rows)",
    )
    ap.add_argument("--parse-only", metavar="LIST", help=argparse.SUPPRESS)
    ap.add_argument("--list-files", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parse_only:
        parse_floor(args.parse_only)
        return 0
    if args.list_files:
        from warp_harness.engine import iter_python_files

        print("\n".join(str(p) for p in iter_python_files([Path(t) for t in args.list_files])))
        return 0

    trees = corpus(args.corpus)
    if args.parse_profile:
        parse_profile(trees)
        return 0
    if args.phase_profile:
        phase_profile(trees, args.jobs)
        return 0
    # the files `check` sees (its exclusions), listed by a child for the same reason as warp_trees
    listing = subprocess.run(
        [sys.executable, __file__, "--list-files", *map(str, trees)],
        capture_output=True,
        text=True,
        check=True,
    )
    files = listing.stdout.splitlines()
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    work = Path(tempfile.mkdtemp(prefix="bench-check-"))
    list_file = work / "files.txt"
    list_file.write_text("\n".join(files))
    empty = work / "empty.py"
    empty.write_text("")
    small = _small_launching_file(files)
    cache = work / "cache"
    # commands run as installed ones do: with their bytecode cached (where PYTHONDONTWRITEBYTECODE is set,
    # every changed module would be compiled again on every run)
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = {**inherited, "XDG_CACHE_HOME": str(cache)}
    old_env = {**env, "PYTHONPATH": args.old_pythonpath or ""}
    py = sys.executable
    wh = [py, "-m", "warp_harness", "check", "--exit-zero", "--output-format", "concise"]
    tree_args = [str(t) for t in trees]
    ruff = shutil.which("ruff") or "ruff"
    j = str(args.jobs)

    def clear_cache() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    # name -> (command, env, prepare)
    rows: dict[str, tuple[list[str], dict[str, str], object]] = {
        "parse floor (ast.parse, 1 core)": ([py, __file__, "--parse-only", str(list_file)], env, None),
        "check --no-cache --jobs 1": ([*wh, "--no-cache", "--jobs", "1", *tree_args], env, None),
        f"check --no-cache --jobs {j}": ([*wh, "--no-cache", "--jobs", j, *tree_args], env, None),
        f"check cold cache --jobs {j}": ([*wh, "--jobs", j, *tree_args], env, clear_cache),
        f"check warm cache --jobs {j}": ([*wh, "--jobs", j, *tree_args], env, None),
        "check warm cache --jobs 1": ([*wh, "--jobs", "1", *tree_args], env, None),
        "pyflakes": ([py, "-m", "pyflakes", *tree_args], env, None),
        "ruff check --no-cache": ([ruff, "check", "--no-cache", "-q", "--exit-zero", *tree_args], env, None),
        "ruff check (warm cache)": (
            [ruff, "check", "--cache-dir", str(work / "ruff"), "-q", "--exit-zero", *tree_args],
            env,
            None,
        ),
        "check empty file": ([*wh, str(empty)], env, None),
        "pyflakes empty file": ([py, "-m", "pyflakes", str(empty)], env, None),
    }
    if small is not None:
        # one file of the tree, as an editor's save hook checks it: start-up, the warm result cache
        def warm_small() -> None:  # a cold-cache row before it may have emptied the cache
            subprocess.run([*wh, small], env=env, capture_output=True, cwd=work)

        rows["check small file (warm cache)"] = ([*wh, small], env, warm_small)
        rows["pyflakes small file"] = ([py, "-m", "pyflakes", small], env, None)
    if args.old_pythonpath:
        old_check = [*wh, "--no-cache", "--jobs", j, *tree_args]
        rows[f"OLD check --no-cache --jobs {j}"] = (old_check, old_env, None)
        rows["OLD check empty file"] = ([*wh, str(empty)], old_env, None)
    if args.only:
        rows = {k: v for k, v in rows.items() if any(o in k for o in args.only)}
    # a peer that is not installed exits 1 at once ("No module named ..."), which would pass for a result
    missing = [peer for peer in ("pyflakes",) if find_spec(peer) is None]
    if shutil.which(ruff) is None:
        missing.append("ruff")
    if missing:
        print(f"not installed, rows skipped: {', '.join(missing)} (pip install '.[bench]' ruff)")
        rows = {k: v for k, v in rows.items() if not any(k.startswith(m) for m in missing)}

    # warm both caches once so the first warm round is warm
    subprocess.run([*wh, "--jobs", j, *tree_args], env=env, capture_output=True)
    if "ruff" not in missing:
        subprocess.run(
            [ruff, "check", "--cache-dir", str(work / "ruff"), "-q", "--exit-zero", *tree_args],
            capture_output=True,
        )
    loads = [0, args.background_load] if args.background_load else [0]
    measured = {load: _Measured(rows) for load in loads}
    start_load = os.getloadavg()[0]
    for _ in range(args.repeat):
        for name, (command, row_env, prepare) in rows.items():
            for load in loads:  # quiet and loaded in turn: the machine's drift hits both alike
                if callable(prepare):
                    prepare()
                with background_load(load):
                    # not in a checkout: `python -m` would import its warp_harness/ before --old-pythonpath's
                    measured[load].add(name, run_once(command, row_env, cwd=work))
    print(f"corpus: {', '.join(tree_args)}")
    print(
        f"{len(files)} files, {lines:,} lines; {args.repeat} rounds; {os.cpu_count()} cores; "
        f"load average {start_load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    )
    for load in loads:
        print(f"\n{describe(load)}:")
        _table(measured[load].times, measured[load].cpu, measured[load].rss, measured[load].pss)
    _importtime(wh, empty, env)
    shutil.rmtree(work, ignore_errors=True)
    return 0


class _Measured:
    """The runs of every row under one background load."""

    def __init__(self, rows: dict[str, Any]) -> None:
        self.times: dict[str, list[float]] = {k: [] for k in rows}
        self.cpu: dict[str, list[float]] = {k: [] for k in rows}
        self.rss: dict[str, float] = dict.fromkeys(rows, 0.0)
        self.pss: dict[str, float] = dict.fromkeys(rows, 0.0)

    def add(self, name: str, run: tuple[float, float, float, float]) -> None:
        wall, seconds, peak, tree_pss = run
        self.times[name].append(wall)
        self.cpu[name].append(seconds)
        self.rss[name] = max(self.rss[name], peak)
        self.pss[name] = max(self.pss[name], tree_pss)


def _small_launching_file(files: list[str]) -> str | None:
    """The smallest file of the corpus that launches a kernel (its check may need the workspace model)."""
    launching = [f for f in files if b"wp.launch(" in Path(f).read_bytes()]
    return min(launching, key=lambda f: (Path(f).stat().st_size, f)) if launching else None


def _table(
    times: dict[str, list[float]], cpu: dict[str, list[float]], rss: dict[str, float], pss: dict[str, float]
) -> None:
    med = {k: statistics.median(v) for k, v in times.items() if v}

    def ratio(name: str, peer: str) -> str:
        return f"{med[name] / med[peer]:6.2f}x" if peer in med else "      -"

    floor, pyf, ruff = "parse floor (ast.parse, 1 core)", "pyflakes", "ruff check --no-cache"
    header = f"{'row':<34}{'min':>8}{'median':>8}{'max':>8}{'CPU s':>8}{'RSS MiB':>9}{'PSS MiB':>9}"
    print(f"{header}{'/floor':>9}{'/pyflakes':>10}{'/ruff':>8}{'RSS/pyfl':>9}{'PSS/pyfl':>9}")
    for name, values in times.items():
        rss_ratio = f"{rss[name] / rss[pyf]:8.2f}x" if rss.get(pyf) else "        -"
        pss_ratio = f"{pss[name] / pss[pyf]:8.2f}x" if pss.get(pyf) else "        -"
        print(
            f"{name:<34}{min(values):8.3f}{med[name]:8.3f}{max(values):8.3f}"
            f"{statistics.median(cpu[name]):8.2f}{rss[name]:9.0f}{pss[name]:9.0f}"
            f"{ratio(name, floor):>9}{ratio(name, pyf):>10}{ratio(name, ruff):>8}{rss_ratio:>9}{pss_ratio:>9}"
        )
    print(
        "wall medians against the peers; CPU s: median user + system of the process tree;\n"
        "RSS: peak of the largest process (ru_maxrss); PSS: peak of the whole tree's summed PSS, sampled\n"
        f"every {PSS_INTERVAL}s (a page shared by n processes counts 1/n in each: what the command holds)"
    )


def _importtime(wh: list[str], empty: Path, env: dict[str, str]) -> None:
    """The slowest imports of `check` on an empty file (cumulative microseconds, -X importtime)."""
    result = subprocess.run(
        [wh[0], "-X", "importtime", *wh[1:], str(empty)], capture_output=True, text=True, env=env
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    top_level = [r for r in rows if not r[1].startswith("  ")]
    total = sum(us for us, _ in top_level)
    print(f"\nimports of `check empty.py`: {total / 1000:.0f} ms in {len(rows)} modules; slowest top-level:")
    for us, name in sorted(top_level, reverse=True)[:8]:
        print(f"  {us / 1000:7.1f} ms {name.strip()}")


if __name__ == "__main__":
    sys.exit(main())
