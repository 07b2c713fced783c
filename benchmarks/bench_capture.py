"""Captured launches on real code, on the CPU: warp-lang's own examples and tests, and newton's.

Each project runs its own command in a scratch workspace (the recorder records kernels of the
workspace only, so the project's files are copied there; newton is a pinned release fetched into a
cache by benchmarks/real_trees.py, never vendored). Measured per project:

- the command's wall time without and with `warp-harness capture` (both after a warm-up run, so
  Warp's kernel cache is warm in both; best of ``--repeats`` runs each): the capture overhead;
- launches and kernels captured, bytes stored, launches the recorder could not record;
- the replay of every captured kernel with no edit (p50/p95 seconds per kernel, the first replay of
  a kernel builds its bounds probe): every record but WHD086 is a **false alarm**, listed for triage;
- a **mutation score**: mutants injected into the captured kernels, one at a time, each replayed as a
  save would be (only the changed kernel). Kinds: an operator swapped (``+``/``-``, ``*`` -> ``+``), an
  index off by one (``a[i]`` -> ``a[i + 1]``), two same-typed arguments swapped (a call's arguments
  that are parameters of one annotation, or the indices of ``a[i, j]``), an atomic made plain
  (``wp.atomic_add(a, i, v)`` -> ``a[i] = a[i] + v``), a guard dropped (``if c: return`` removed,
  ``if c: body`` -> ``body``). A mutant Warp rejects (the replay cannot build it) is *stillborn*
  and not scored. For each viable mutant: flagged by the replay or not, by which oracle, and whether
  the project's own command, run against it, fails (its assertions caught it) or passes: the share
  flagged that the project's assertions let pass.

    python benchmarks/bench_capture.py                         # every project, small step counts
    python benchmarks/bench_capture.py --projects warp-wave newton-pendulum --max-kernels 2
    python benchmarks/bench_capture.py --overhead-only --recorder-before HEAD~1 --projects warp-fluid

``--overhead-only`` measures the capture overhead alone (no replay, no mutants). ``--recorder-before REV``
adds the recorder of git revision ``REV`` (the rest of the harness this checkout's), its runs
interleaved with the current recorder's and the plain runs, so both see the same load; besides the
wall times it prints the recorder's own seconds per run (the command profiled with cProfile: the time
spent in the recorder's wrapper around ``wp.launch``, less Warp's own launch), which a loaded machine
disturbs far less than a wall time. The load average is printed before and after each project.

Prints a markdown table per measure (docs/capture.md's "Benchmarks" section comes from it).
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import warp

from warp_harness.capture.identity import kernel_sources
from warp_harness.capture.run import run_capture
from warp_harness.capture.store import CaptureStore, KernelIndex
from warp_harness.daemon import findings as F
from warp_harness.daemon.captured.hook import supervisor_call
from warp_harness.daemon.captured.replay import replay_module
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.supervisor import Supervisor

sys.path.insert(0, str(Path(__file__).parent))
from real_trees import MUJOCO_WARP, NEWTON, Release, fetch

WARP = Path(warp.__file__).parent
PY = sys.executable


@dataclass
class Project:
    label: str
    files: list[tuple[Path, str]]  # (source, path in the workspace): a file or a package folder
    command: list[str]
    what: str  # the load, for the table


def _example(name: str, frames: int, *extra: str) -> Project:
    src = WARP / "examples" / "core" / f"example_{name}.py"
    command = [PY, src.name, "--num-frames", str(frames), "--device", "cpu", *extra]
    return Project(f"warp-{name}", [(src, src.name)], command, f"example_{name}.py, {frames} frames")


def _warp_test(name: str) -> Project:
    src = WARP / "tests" / f"{name}.py"
    command = [PY, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly", src.name]
    return Project(f"warp-{name}", [(src, src.name)], [*command, "-k", "cpu"], f"tests/{name}.py, CPU cases")


def _newton(example: str, frames: int) -> Project:
    package = fetch(NEWTON)
    command = [PY, "-m", "newton.examples", example, "--viewer", "null", "--device", "cpu"]
    command += ["--num-frames", str(frames), "--test", "--quiet"]
    return Project(
        f"newton-{example.replace('basic_', '')}",
        [(package, "newton")],
        command,
        f"newton {NEWTON.version} `{example}`, {frames} frames, `--test`",
    )


# name -> the project, given (example frames, newton frames)
PROJECTS: dict[str, Callable[[int, int], Project]] = {
    "warp-wave": lambda f, _: _example("wave", f, "--stage-path", "None"),
    "warp-fluid": lambda f, _: _example("fluid", f, "--headless"),
    "warp-test_lvalue": lambda f, _: _warp_test("test_lvalue"),
    "warp-test_operators": lambda f, _: _warp_test("test_operators"),
    "warp-test_adam": lambda f, _: _warp_test("test_adam"),  # losses summed with wp.atomic_add
    # kernels made inside functions (factories closing over ints, funcs, structs): #31's closure records
    "warp-test_codegen_instancing": lambda f, _: _warp_test("test_codegen_instancing"),
    # its `--test` checks fail on the CPU at 10 and 30 frames (a link not yet where it expects), hold at 100
    "newton-pendulum": lambda _, n: _newton("basic_pendulum", n),
}


def _count_factories(row: Row, ws: Path, index: KernelIndex, alarms: int) -> None:
    """Count ``index``'s kernels made inside functions and the closures the replay builds from text."""
    from warp_harness.daemon.captured import hermetic

    text = (ws / index.path).read_text(encoding="utf-8")
    # a module-level kernel defined twice has a record too (which def ran): not made inside a function
    nested = [c for c in hermetic.closures(index.launches) if c and "<locals>" in str(c.get("qualname"))]
    for closure in nested:
        key = f"{index.path}::{closure.get('qualname')}"
        why = hermetic.decision(text, str(ws / index.path), index.name, ws, closure)[0]
        n, built = row.factories.get(key, (0, 0))
        row.factories[key] = (n + 1, built + (why is None))
    if nested:
        row.factory_false_alarms += alarms


# ------------------------------------------------------------------------------------------ mutants
KINDS = ("operator", "off-by-one", "swapped-args", "atomic-plain", "guard-dropped")
_SWAPS: dict[type[ast.operator], type[ast.operator]] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add}
_PLAIN = {"atomic_add": "+", "atomic_sub": "-", "atomic_min": "min", "atomic_max": "max"}


def _is_atomic(call: ast.AST) -> str | None:
    if isinstance(call, ast.Call) and len(call.args) == 3 and not call.keywords:
        f = call.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        return name if name in _PLAIN else None
    return None


class _Mutator(ast.NodeTransformer):
    """The ``target``-th site of one kind of mutation in a kernel's body."""

    def __init__(self, kind: str, target: int, annotations: dict[str, str]) -> None:
        self.kind = kind
        self.target = target
        self.annotations = annotations  # kernel parameter -> its annotation's text
        self.seen = 0
        self.done = ""

    def _hit(self) -> bool:
        self.seen += 1
        return not self.done and self.seen - 1 == self.target

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        swap = _SWAPS.get(type(node.op))
        if self.kind == "operator" and swap is not None and self._hit():
            self.done = f"`{ast.unparse(node)}`: {type(node.op).__name__} -> {swap.__name__}"
            node.op = swap()
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        index = node.slice
        if self.kind == "off-by-one" and isinstance(index, ast.Name) and isinstance(node.ctx, ast.Load):
            if self._hit():
                self.done = f"`{ast.unparse(node)}`: index {index.id} -> {index.id} + 1"
                node.slice = ast.BinOp(left=index, op=ast.Add(), right=ast.Constant(1))
        elif self.kind == "swapped-args" and isinstance(index, ast.Tuple) and len(index.elts) >= 2:
            a, b = index.elts[0], index.elts[1]
            if isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id != b.id and self._hit():
                self.done = f"`{ast.unparse(node)}`: indices {a.id}, {b.id} swapped"
                index.elts[0], index.elts[1] = b, a
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if self.kind != "swapped-args":
            return node
        names = [
            (k, a.id) for k, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id in self.annotations
        ]
        for x, (j, first) in enumerate(names):
            same = [
                k
                for k, other in names[x + 1 :]
                if other != first and self.annotations[other] == self.annotations[first]
            ]
            if same and self._hit():
                k = same[0]
                self.done = f"`{ast.unparse(node)}`: arguments {first}, {ast.unparse(node.args[k])} swapped"
                node.args[j], node.args[k] = node.args[k], node.args[j]
                break
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        self.generic_visit(node)
        name = _is_atomic(node.value)
        if self.kind == "atomic-plain" and name is not None and self._hit():
            call = node.value
            assert isinstance(call, ast.Call)
            arr, idx, value = call.args
            read = ast.Subscript(value=copy.deepcopy(arr), slice=copy.deepcopy(idx), ctx=ast.Load())
            op = _PLAIN[name]
            new: ast.expr
            if op in ("+", "-"):
                new = ast.BinOp(left=read, op=ast.Add() if op == "+" else ast.Sub(), right=value)
            else:
                new = ast.Call(
                    func=ast.Attribute(value=ast.Name("wp", ast.Load()), attr=op, ctx=ast.Load()),
                    args=[read, value],
                    keywords=[],
                )
            target = ast.Subscript(value=copy.deepcopy(arr), slice=copy.deepcopy(idx), ctx=ast.Store())
            self.done = f"`{ast.unparse(node)}` made a plain read-modify-write"
            return ast.Assign(targets=[target], value=new, lineno=node.lineno)
        return node

    def visit_If(self, node: ast.If) -> Any:
        self.generic_visit(node)
        if self.kind != "guard-dropped" or node.orelse:
            return node
        exits = len(node.body) == 1 and isinstance(node.body[0], ast.Return | ast.Continue)
        if self._hit():
            self.done = f"guard `if {ast.unparse(node.test)}:` dropped"
            return [] if exits else node.body
        return node


def _kernel_def(tree: ast.Module, kernel: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            return node
    return None


def mutants(text: str, kernel: str, kind: str, limit: int) -> Iterator[tuple[str, str]]:
    """(mutated module text, what changed) for the first ``limit`` sites of ``kind`` in ``kernel``."""
    lines = text.splitlines()
    for target in range(limit):
        tree = ast.parse(text)
        node = _kernel_def(tree, kernel)
        if node is None:
            return
        annotations = {a.arg: ast.unparse(a.annotation) for a in node.args.args if a.annotation is not None}
        mutator = _Mutator(kind, target, annotations)
        body = mutator.visit(ast.Module(body=node.body, type_ignores=[]))
        if not mutator.done:
            return
        if not body.body:
            body.body = [ast.Pass()]
        indent = " " * node.body[0].col_offset
        new = [indent + line for line in ast.unparse(ast.fix_missing_locations(body)).splitlines()]
        start, end = node.body[0].lineno, node.end_lineno or node.lineno
        yield "\n".join(lines[: start - 1] + new + lines[end:]) + "\n", mutator.done


# ------------------------------------------------------------------------------------------ the runs
def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _run(cmd: list[str], cwd: Path, timeout: float) -> tuple[float, int]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=_env(cwd))
        code = p.returncode
    except subprocess.TimeoutExpired:
        code = -9
    return time.perf_counter() - t0, code


def _env(ws: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ws), "PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class Row:
    project: Project
    kernels: int = 0
    launches: int = 0
    bytes: int = 0
    not_recorded: int = 0
    not_recorded_why: list[str] = field(default_factory=list)
    plain_s: float = 0.0
    capture_s: float = 0.0
    exit_code: int = 0
    replay_s: list[float] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)
    not_hermetic: int = 0  # kernels replayed from an import of their module (WHD069)
    not_hermetic_why: list[str] = field(default_factory=list)
    # kernels made inside functions (#31's closure records): (closures, built from the text) by kernel
    factories: dict[str, tuple[int, int]] = field(default_factory=dict)
    factory_false_alarms: int = 0
    mutants: Counter[str] = field(default_factory=Counter)  # kind -> viable mutants
    stillborn: int = 0
    flagged: Counter[str] = field(default_factory=Counter)  # kind -> flagged by the replay
    by_oracle: Counter[str] = field(default_factory=Counter)
    assertions_caught: int = 0  # viable mutants the project's own command fails on
    flagged_passing: int = 0  # flagged by the replay, the project's command passes
    mutant_log: list[str] = field(default_factory=list)


REPO = Path(__file__).resolve().parents[1]


def recorder_of(rev: str) -> Path:
    """A folder that, first on a capture child's ``PYTHONPATH``, makes its
    ``warp_harness.capture.recorder`` the one of git revision ``rev``, and everything else of
    ``warp_harness`` this checkout's (``__path__`` falls through to the real package)."""
    text = subprocess.run(
        ["git", "show", f"{rev}:warp_harness/capture/recorder.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    import warp_harness

    real = Path(warp_harness.__file__).parent
    root = Path(tempfile.mkdtemp(prefix="wh-bench-recorder-"))
    (root / "warp_harness" / "capture").mkdir(parents=True)
    init = real / "__init__.py"
    (root / "warp_harness" / "__init__.py").write_text(
        f"__path__.append({str(real)!r})\nexec(compile(open({str(init)!r}).read(), {str(init)!r}, 'exec'))\n"
    )
    (root / "warp_harness" / "capture" / "__init__.py").write_text(
        f"__path__.append({str(real / 'capture')!r})\n"
    )
    (root / "warp_harness" / "capture" / "recorder.py").write_text(text)
    return root


def recorder_seconds(profile: Path) -> float:
    """The seconds a capture child spent in the recorder's wrapper around ``wp.launch``, less the
    launches themselves (its cProfile output)."""
    stats: Any = pstats.Stats(str(profile)).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    wrapped = own = 0.0
    for (file, _, name), (_, _, _, cumulative, callers) in stats.items():
        if file.endswith("capture/recorder.py") and name == "around":
            own += cumulative
        if name == "launch" and file.endswith("context.py"):
            wrapped += sum(
                edge[3]
                for (f, _, n), edge in callers.items()
                if f.endswith("capture/recorder.py") and n == "around"
            )
    return own - wrapped


@dataclass
class Overhead:
    """Wall times (best of the repeats) without capture and with each recorder, and the recorders'
    own seconds (best of the profiled runs)."""

    project: Project
    plain_s: float = float("inf")
    capture_s: dict[str, float] = field(default_factory=dict)
    recorder_s: dict[str, float] = field(default_factory=dict)
    load: list[float] = field(default_factory=list)


def measure_overhead(project: Project, args: argparse.Namespace) -> Overhead | None:
    out = Overhead(project, load=[os.getloadavg()[0]])
    recorders = {"current": None} | (
        {args.recorder_before: recorder_of(args.recorder_before)} if args.recorder_before else {}
    )
    ws = Path(tempfile.mkdtemp(prefix=f"wh-bench-capture-{project.label}-"))
    try:
        for src, dest in project.files:
            if src.is_dir():
                shutil.copytree(src, ws / dest, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(src, ws / dest)
        if _run(project.command, ws, args.timeout)[1] != 0:  # warm Warp's kernel cache
            print(f"{project.label}: its command fails here; skipped", file=sys.stderr)
            return None
        profiled = [
            project.command[0],
            "-m",
            "cProfile",
            "-o",
            str(ws / "capture.prof"),
            *project.command[1:],
        ]
        for _ in range(args.repeats):  # interleaved: every variant sees the same load
            out.plain_s = min(out.plain_s, _run(project.command, ws, args.timeout)[0])
            for label, shim in recorders.items():
                env = {**os.environ, "PYTHONPATH": str(shim)} if shim else None
                shutil.rmtree(ws / ".warp-harness", ignore_errors=True)
                t0 = time.perf_counter()
                run_capture(ws, project.command, env=env)
                spent = time.perf_counter() - t0
                out.capture_s[label] = min(out.capture_s.get(label, float("inf")), spent)
                shutil.rmtree(ws / ".warp-harness", ignore_errors=True)
                run_capture(ws, profiled, env=env)
                seconds = recorder_seconds(ws / "capture.prof")
                out.recorder_s[label] = min(out.recorder_s.get(label, float("inf")), seconds)
    finally:
        shutil.rmtree(ws, ignore_errors=True)
        for shim in recorders.values():
            if shim:
                shutil.rmtree(shim, ignore_errors=True)
    out.load.append(os.getloadavg()[0])
    return out


def print_overhead(rows: list[Overhead], args: argparse.Namespace) -> None:
    labels = list(rows[0].capture_s) if rows else []
    head = " | ".join(f"with capture ({x}) s | overhead ({x}) | recorder ({x}) s" for x in labels)
    print(f"| project | load | load average (start, end) | wall s | {head} |")
    print("|---|---|---|---|" + "---|---|---|" * len(labels))
    for r in rows:
        cells = " | ".join(
            f"{r.capture_s[x]:.2f} | {r.capture_s[x] / r.plain_s:.2f}x | {r.recorder_s[x]:.3f}"
            for x in labels
        )
        print(
            f"| {r.project.label} | {r.project.what} | {r.load[0]:.1f}, {r.load[1]:.1f} "
            f"| {r.plain_s:.2f} | {cells} |"
        )
    print(
        f"\nwarp {warp.__version__}, CPU only, {os.cpu_count()} cores; wall: best of {args.repeats} warm "
        "runs each, interleaved; recorder s: the recorder's own time in a profiled run (best of as many)"
    )


def measure(project: Project, args: argparse.Namespace, options: RuntimeOptions) -> Row | None:
    row = Row(project)
    ws = Path(tempfile.mkdtemp(prefix=f"wh-bench-capture-{project.label}-"))
    try:
        for src, dest in project.files:
            if src.is_dir():
                shutil.copytree(src, ws / dest, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(src, ws / dest)
        _, code = _run(project.command, ws, args.timeout)  # warm Warp's kernel cache
        if code != 0:
            print(f"{project.label}: its command fails here (exit {code}); skipped", file=sys.stderr)
            return None
        row.plain_s = min(_run(project.command, ws, args.timeout)[0] for _ in range(args.repeats))
        best = float("inf")
        for _ in range(args.repeats):
            shutil.rmtree(ws / ".warp-harness", ignore_errors=True)
            t0 = time.perf_counter()
            run = run_capture(ws, project.command, max_per_kernel=args.max_per_kernel)
            best = min(best, time.perf_counter() - t0)
        row.capture_s = best
        row.not_recorded = len(run.report.skipped)
        row.not_recorded_why = list(run.report.skipped)
        store = CaptureStore(ws)
        indexes = [e for e in store.indexes() if isinstance(e, KernelIndex)]
        row.kernels = len(indexes)
        row.launches = sum(len(i.launches) for i in indexes)
        row.bytes = sum(store.referenced(indexes).values())
        with Supervisor(ws, options, warmup=False) as sup:
            call = supervisor_call(sup)
            replayed: list[KernelIndex] = []  # kernels with a launch replayed clean: those are mutated
            for index in indexes[: args.max_replay_kernels]:
                path = ws / index.path
                t0 = time.perf_counter()
                out = replay_module(
                    ws, path, index.path, options, call, only_changed=False, kernels={index.name}
                )
                row.replay_s.append(time.perf_counter() - t0)
                if out.clean:
                    replayed.append(index)
                # WHD069 (replayed from an import of its module) is no verdict on the kernel: counted apart
                row.not_hermetic += any(r.rule == F.NOT_HERMETIC for r in out.records)  # once a kernel
                row.not_hermetic_why += [
                    f"{index.path}::{index.name}: {r.message.rsplit(', because ', 1)[-1]}"
                    for r in out.records
                    if r.rule == F.NOT_HERMETIC
                ]
                alarms = [
                    f"{index.path}::{index.name} {r.rule}: {r.message[:300]}"
                    for r in out.records
                    if r.severity.value != "info" and r.rule != F.NOT_HERMETIC
                ]
                row.false_alarms += alarms
                # on the closures built from the text (an import's are WHD069's, counted apart above)
                _count_factories(row, ws, index, sum("[not hermetic (WHD069)" not in a for a in alarms))
            for index in replayed[: args.max_kernels]:
                _mutate(row, ws, index, project, args, options, call)
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    return row


def _mutate(
    row: Row,
    ws: Path,
    index: KernelIndex,
    project: Project,
    args: argparse.Namespace,
    options: RuntimeOptions,
    call: Any,
) -> None:
    path = ws / index.path
    text = path.read_text(encoding="utf-8")
    for kind in KINDS:
        for made, what in mutants(text, index.name, kind, args.mutants):
            if kernel_sources(made).get(index.name) is None:
                continue
            path.write_text(made, encoding="utf-8")
            try:
                out = replay_module(
                    ws, path, index.path, options, call, only_changed=True, kernels={index.name}
                )
                _, code = _run(project.command, ws, args.timeout)
            finally:
                path.write_text(text, encoding="utf-8")
            # WHD069 (replayed from an import of its module) is no verdict on the mutant
            rules = sorted(
                {r.rule for r in out.records if r.severity.value != "info" and r.rule != F.NOT_HERMETIC}
            )
            if rules == ["WHD085"]:  # the module does not build or the launch raises: Warp rejects it
                row.stillborn += 1
                row.mutant_log.append(f"{index.name} {kind} {what}: stillborn (Warp rejects it)")
                continue
            row.mutants[kind] += 1
            caught = code != 0
            row.assertions_caught += caught
            if rules:
                row.flagged[kind] += 1
                row.by_oracle.update(rules)
                row.flagged_passing += not caught
            row.mutant_log.append(
                f"{index.name} {kind} {what}: replay {','.join(rules) or 'clean'}, "
                f"project command {'fails' if caught else 'passes'}"
            )


def _share(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


def print_tables(rows: list[Row], args: argparse.Namespace) -> None:
    print("| project | load | kernels | launches | bytes | not recorded | wall s | with capture s | overhead "
          "| replay/kernel p50 s | p95 s | false alarms |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r.project.label} | {r.project.what} | {r.kernels} | {r.launches} | {r.bytes} "
            f"| {r.not_recorded} | {r.plain_s:.2f} | {r.capture_s:.2f} | {r.capture_s / r.plain_s:.2f}x "
            f"| {_pct(r.replay_s, 0.5):.2f} | {_pct(r.replay_s, 0.95):.2f} | {len(r.false_alarms)} |"
        )
    print()
    print("| project | mutants (stillborn) | flagged by replay | " + " | ".join(KINDS) + " | by oracle "
          "| project's command fails | flagged, project passes |")  # fmt: skip
    print("|---|---|---|" + "---|" * len(KINDS) + "---|---|---|")
    total = Row(Project("all", [], [], ""))
    for r in [*rows, total]:
        if r is not total:
            total.mutants.update(r.mutants)
            total.flagged.update(r.flagged)
            total.by_oracle.update(r.by_oracle)
            total.stillborn += r.stillborn
            total.assertions_caught += r.assertions_caught
            total.flagged_passing += r.flagged_passing
        n = sum(r.mutants.values())
        flagged = sum(r.flagged.values())
        kinds = " | ".join(_share(r.flagged[k], r.mutants[k]) for k in KINDS)
        oracles = ", ".join(f"{k} {v}" for k, v in sorted(r.by_oracle.items())) or "-"
        print(
            f"| {r.project.label} | {n} ({r.stillborn}) | {_share(flagged, n)} | {kinds} | {oracles} "
            f"| {_share(r.assertions_caught, n)} | {_share(r.flagged_passing, flagged)} |"
        )
    print(
        f"\nwarp {warp.__version__}, CPU only; wall: best of {args.repeats} warm runs each; "
        f"{args.mutants} site(s) per mutation kind in each of the first {args.max_kernels} captured kernels"
    )
    for r in rows:
        replayed = len(r.replay_s)
        print(f"not hermetic (WHD069): {r.project.label}: {r.not_hermetic} of {replayed} replayed kernels")
        for line in r.not_hermetic_why:
            print(f"not hermetic: {r.project.label}: {line}")
        if r.factories:
            closures = sum(n for n, _ in r.factories.values())
            built = sum(b for _, b in r.factories.values())
            whole = sum(n == b for n, b in r.factories.values())
            print(
                f"made inside functions: {r.project.label}: {whole} of {len(r.factories)} kernels "
                f"({built} of {closures} closures) built from the text with their closure records; "
                f"false alarms on those built so: {r.factory_false_alarms}"
            )
        for line in r.false_alarms:
            print(f"false alarm: {r.project.label}: {line}")
        if args.verbose:
            for line in r.not_recorded_why:
                print(f"not recorded: {r.project.label}: {line}")
            for line in r.mutant_log:
                print(f"mutant: {r.project.label}: {line}")


# what the projects' kernels read from installed packages (mujoco-warp: `mujoco.mjMINVAL`, enums)
INSTALLED_DEPENDENCIES = (Release("mujoco", "4.0.0", "mujoco"),)


def hermetic_share() -> None:
    """Every ``@wp.kernel`` of newton's and mujoco-warp's packages (any depth, factories included):
    how many the captured path builds from text alone (``captured/hermetic.why_not``, text only,
    nothing executed), and the most common reasons of the others. The packages they import from
    (mujoco-warp's ``mujoco``) are fetched into the cache and put on ``sys.path``, outside the
    projects' folders: installed, as where the projects run (the decision imports none of them)."""
    from warp_harness.daemon.captured import hermetic

    for dependency in INSTALLED_DEPENDENCIES:
        sys.path.append(str(fetch(dependency).parent))
    print("| package | kernels | hermetic | most common reasons of the others |\n|---|---|---|---|")
    factories: list[tuple[str, tuple[int, int, Counter[str]]]] = []
    for release in (NEWTON, MUJOCO_WARP):
        package = fetch(release)
        total, built = 0, 0
        reasons: Counter[str] = Counter()
        for path, text, tree in _parsed_files(package):
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef) or not any(
                    "kernel" in ast.unparse(d).split("(")[0] for d in node.decorator_list
                ):
                    continue
                total += 1
                why = hermetic.why_not(text, str(path), node.name, package.parent)
                if why is None:
                    built += 1
                else:  # the reason without the names in it
                    reasons[re.sub(r"`[^`]*`", "`X`", why)[:110]] += 1
        top = "; ".join(f"{n}: {why}" for why, n in reasons.most_common(3))
        print(f"| {release.label} | {total} | {built} | {top} |")
        factories.append((release.label, _factory_share(package)))
    for label, (nested, eligible, why_not) in factories:
        common = "; ".join(f"{n}: {why}" for why, n in why_not.most_common(3))
        print(
            f"made inside functions: {label}: {nested}; of them {eligible} admit a closure record (free "
            f"names its factory's parameters, or locals it computes before making the kernel, bound while "
            f"its code and the module texts it reads are the captured ones; decorator keywords literal or "
            f"recorded likewise; an upper bound: every cell is taken for an int here, a capture's values "
            f"must be literals, types or workspace funcs); others: {common}"
        )


def _parsed_files(package: Path) -> Iterator[tuple[Path, str, ast.Module]]:
    """Each Python file of ``package`` with its text and tree, in order (a file that does not parse
    is left out)."""
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        yield path, text, tree


def factory_reasons() -> None:
    """The reasons of the factory kernels of newton and mujoco-warp that admit no closure record,
    grouped (names left out) and counted, most common first, with one kernel of each group: the
    table of docs/capture.md ("Factory kernels still refused")."""
    for dependency in INSTALLED_DEPENDENCIES:
        sys.path.append(str(fetch(dependency).parent))
    for release in (NEWTON, MUJOCO_WARP):
        package = fetch(release)
        examples: dict[str, str] = {}
        nested, eligible, why_not = _factory_share(package, examples)
        print(
            f"\n{release.label}: {nested} factory kernels, {eligible} admit a record, "
            f"{nested - eligible} refused"
        )
        print("| refused | reason | e.g. |\n|---|---|---|")
        for why, n in why_not.most_common():
            print(f"| {n} | {why} | {examples[why]} |")


def _factory_share(package: Path, examples: dict[str, str] | None = None) -> tuple[int, int, Counter[str]]:
    """(kernels made inside functions, those whose text admits a closure record, why not the others):
    each decided with a record binding every free name its factories bind to an int (text only);
    ``examples`` (if given) gets one ``file:qualname`` of each reason."""
    from warp_harness.capture import factory_reads
    from warp_harness.capture.identity import factory_digest
    from warp_harness.daemon.captured import hermetic
    from warp_harness.daemon.hermetic_imports import Sources

    nested = eligible = 0
    why_not: Counter[str] = Counter()
    for path, text, tree in _parsed_files(package):
        todo: list[tuple[ast.AST, str]] = [(tree, "")]
        while todo:
            node, prefix = todo.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef):
                    qual = f"{prefix}{child.name}"
                    if prefix and any("kernel" in ast.unparse(d).split("(")[0] for d in child.decorator_list):
                        nested += 1
                        cells = {n: {"kind": "int", "value": 1} for n in _loaded(child)}
                        # what a capture of this text records of the decorator: the factory's digest
                        # and the values it computed (any: the decision reads only whether they exist)
                        closure = {
                            "qualname": qual,
                            "path": "",
                            "cells": cells,
                            "factory": factory_digest(tree, qual),
                            "module_options": {"enable_backward": False},
                            "keywords": {},
                        }
                        try:  # the digest of the module texts its factory reads, as the capture takes it
                            sources = Sources.for_file(str(path), package.parent, None)
                            closure["reads"] = factory_reads.reads_digest(tree, qual, str(path), sources)
                        except factory_reads.Unreadable:
                            pass
                        why = hermetic.decision(text, str(path), child.name, package.parent, closure)[0]
                        eligible += why is None
                        if why is not None:
                            group = re.sub(r"`[^`]*`", "`X`", why)[:400]
                            why_not[group] += 1
                            if examples is not None:
                                examples.setdefault(group, f"{path.relative_to(package.parent)}:{qual}")
                    todo.append((child, f"{qual}.<locals>."))
                elif not isinstance(child, ast.ClassDef | ast.Lambda):
                    todo.append((child, prefix))
    return nested, eligible, why_not


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--projects", nargs="+", default=list(PROJECTS), choices=list(PROJECTS))
    ap.add_argument("--frames", type=int, default=3, help="frames of warp's examples")
    ap.add_argument("--newton-frames", type=int, default=100, help="frames of newton's example")
    ap.add_argument("--repeats", type=int, default=2, help="timed runs with and without capture")
    ap.add_argument("--mutants", type=int, default=1, help="sites per mutation kind and kernel")
    ap.add_argument("--max-kernels", type=int, default=3, help="captured kernels mutated per project")
    ap.add_argument(
        "--max-per-kernel", type=int, default=4, help="distinct launches captured per kernel name (`capture`)"
    )
    ap.add_argument(
        "--max-replay-kernels", type=int, default=40, help="captured kernels replayed per project"
    )
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds for one run of a project's command")
    ap.add_argument("--verbose", action="store_true", help="list every mutant and its verdicts")
    ap.add_argument(
        "--overhead-only", action="store_true", help="the capture overhead alone: no replay, no mutants"
    )
    ap.add_argument("--recorder-before", metavar="REV", help="also time the recorder of git revision REV")
    ap.add_argument(
        "--hermetic-share",
        action="store_true",
        help="the share of newton's and mujoco-warp's kernels built hermetically",
    )
    ap.add_argument(
        "--reasons",
        action="store_true",
        help="why newton's and mujoco-warp's factory kernels admitting no record are refused, grouped",
    )
    args = ap.parse_args()
    if args.reasons:
        factory_reasons()
        return 0
    if args.hermetic_share:
        hermetic_share()
        return 0
    if args.overhead_only or args.recorder_before:
        measured = [
            o
            for name in args.projects
            if (o := measure_overhead(PROJECTS[name](args.frames, args.newton_frames), args))
        ]
        print_overhead(measured, args)
        return 0
    options = RuntimeOptions(launch_timeout_s=60.0, timeout_s=900.0, bench=False)
    rows = [
        row
        for name in args.projects
        if (row := measure(PROJECTS[name](args.frames, args.newton_frames), args, options))
    ]
    print_tables(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
