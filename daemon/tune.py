"""``warp-harness tune``: try a contract's tunables, keep what the profile allows, report the front.

A skeleton of issue 6's tuning. A contract declares ``tunables`` (module-level constants ->
values). For every combination: the module's source with those constants rewritten is
written next to the module (``_wh_tune_<stem>_<n>.py``, created O_EXCL|O_NOFOLLOW under another
name when a file or link of that name is there, removed afterwards); the static tier
checks it against the target profile (shared memory, block_dim, tile shapes ...) and a
candidate with an error there is dropped with its reason; the rest go through the daemon's
worker (validation, then the benchmark; with ``jobs`` > 1 the compiles and validations of
several candidates run at once, the benchmarks still one at a time). The report: every
candidate, and the Pareto front of (median time, shared memory per block where estimated --
else the product of the tunables' values --, registers per thread where the benchmark got
them).

The tunables are read statically (``ast.literal_eval`` of the ``tunables=`` argument of a
``Contract(...)`` call), so nothing runs before the trust check.
"""

from __future__ import annotations

import ast
import itertools
import math
import os
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness import user_state
from warp_harness.daemon.benchcmd import NotTrusted
from warp_harness.daemon.engines import Engines
from warp_harness.daemon.executor import ExecutorChoice
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.results import CheckReport
from warp_harness.record import Severity


@dataclass
class Candidate:
    config: dict[str, Any]
    status: str = "pending"  # rejected | timed | validate:<verdict> | error
    reasons: list[str] = field(default_factory=list)
    median_s: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    # the static tier's estimate of the shared memory one block needs (WH015's), when it has one
    shared_bytes: int | None = None
    current: bool = False  # the configuration the source has now
    # registers per thread of the compiled kernel (CUDA; the benchmark's metrics), when known
    registers: int | None = None

    @property
    def cost(self) -> float:
        """The resource axis of the Pareto front: shared memory per block where estimated, else
        the product of the tunables' values (a stand-in for the work one thread or block does)."""
        if self.shared_bytes is not None:
            return float(self.shared_bytes)
        return float(math.prod(v for v in self.config.values() if isinstance(v, int | float)) or 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "status": self.status,
            "reasons": self.reasons,
            "median_s": self.median_s,
            "metrics": self.metrics,
            "shared_bytes": self.shared_bytes,
            "current": self.current,
            "registers": self.registers,
        }


class TuneSyntaxError(ValueError):
    """The file to tune does not parse: reported as the static tier's WH000 line."""

    def __init__(self, line: int, col: int, message: str) -> None:
        super().__init__(f"syntax error: {message}")
        self.line = line
        self.col = col  # 1-based, as printed
        self.message = message

    def render(self, display: str) -> str:
        return f"{display}:{self.line}:{self.col}: WH000 [error] syntax error: {self.message}"


def read_tunables(source: str) -> dict[str, dict[str, list[Any]]]:
    """{kernel name: tunables} of every ``Contract(kernel=..., tunables={...})`` in the source."""
    out: dict[str, dict[str, list[Any]]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name != "Contract":
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if "tunables" not in kw or "kernel" not in kw:
            continue
        kernel = kw["kernel"]
        kname = kernel.value if isinstance(kernel, ast.Constant) else getattr(kernel, "id", None)
        try:
            tunables = ast.literal_eval(kw["tunables"])
        except ValueError:
            continue
        if isinstance(kname, str) and isinstance(tunables, dict):
            out[kname] = {str(k): list(v) for k, v in tunables.items()}
    return out


def candidates(tunables: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    names = list(tunables)
    return [
        dict(zip(names, combo, strict=True)) for combo in itertools.product(*(tunables[n] for n in names))
    ]


def rewrite(source: str, config: Mapping[str, Any]) -> str:
    """The source with each module-level ``NAME = value`` / ``NAME = wp.constant(value)`` set."""
    from warp_harness.fixes import apply_edits
    from warp_harness.tunables import constant_edits

    return apply_edits(source, constant_edits(source, config))[0]


def _no_worse_and_better(o: Candidate, r: Candidate) -> bool:
    """``o`` is no worse than ``r`` on time, cost and registers (that axis skipped when either
    is unknown) and better on one of them."""
    assert o.median_s is not None and r.median_s is not None
    pairs = [(o.median_s, r.median_s), (o.cost, r.cost)]
    if o.registers is not None and r.registers is not None:
        pairs.append((float(o.registers), float(r.registers)))
    return all(a <= b for a, b in pairs) and any(a < b for a, b in pairs)


def pareto(rows: Sequence[Candidate]) -> list[Candidate]:
    """Timed candidates no other timed one beats on time, cost and registers per thread."""
    timed = [r for r in rows if r.status == "timed" and r.median_s is not None]
    front = [r for r in timed if not any(o is not r and _no_worse_and_better(o, r) for o in timed)]
    return sorted(front, key=lambda r: r.median_s or 0.0)


def run_tune(
    path: Path,
    *,
    kernel: str | None = None,
    trust: bool | None = None,
    runtime_overrides: dict[str, Any] | None = None,
    target: str | None = None,
    jobs: int = 1,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    executor: ExecutorChoice | None = None,
) -> tuple[str, list[Candidate]]:
    """Tune ``kernel``'s tunables in ``path``. ``jobs`` > 1: the candidates the static tier lets
    through are compiled (into the project's kernel cache) and validated ``jobs`` at a time, each
    in a worker of its own; the benchmarks then run one at a time, so no two timings overlap.
    ``on_progress``: ``{"label": "candidate i/n ..."}`` per candidate and the worker's step messages.
    ``executor`` ray: every candidate is one job (validated, then timed, on a device of its own),
    as many at once as the cluster has devices; ``jobs`` does not apply."""
    from warp_harness.config import load_settings
    from warp_harness.daemon.options import load_runtime_options
    from warp_harness.engine import check_file
    from warp_harness.record import Severity

    path = path.resolve()
    source = path.read_text(encoding="utf-8")
    try:
        found = read_tunables(source)
    except SyntaxError as exc:
        raise TuneSyntaxError(exc.lineno or 1, exc.offset or 1, exc.msg) from None
    if kernel is None:
        if len(found) != 1:
            raise ValueError(
                f"{path.name}: {len(found)} contracts with tunables; name one with --kernel"
                if found
                else f"{path.name}: no Contract(..., tunables={{...}}) with literal values"
            )
        kernel = next(iter(found))
    if kernel not in found:
        raise ValueError(f"{path.name}: no contract with tunables for kernel `{kernel}`")
    settings = load_settings(path.parent)
    root = settings.root or path.parent
    if not (settings.trust if trust is None else trust):
        raise NotTrusted("workspace not trusted: tuning runs the kernels; pass --trust or set trust = true")
    overrides = {"target": target} if target else None
    options = load_runtime_options(root, runtime_overrides).merged({"validate": True, "bench": True})
    from warp_harness.tunables import current_values

    now = current_values(source, list(found[kernel]))
    rows = [Candidate(c, current=c == now) for c in candidates(found[kernel])]
    if len(now) == len(found[kernel]) and not any(r.current for r in rows):
        rows.insert(0, Candidate(now, current=True))  # the source's own values are always measured

    def say(label: str) -> None:
        if on_progress is not None:
            on_progress({"label": label})

    def step_progress(msg: dict[str, Any]) -> None:
        if on_progress is not None and jobs == 1:  # several workers at once: the labels say enough
            on_progress(msg)

    engines = Engines(root, settings, options, executor or ExecutorChoice(), overrides, False, step_progress)
    make_engine = engines.make

    tmps: list[Path] = []
    survivors: list[tuple[Candidate, Path]] = []
    engine: Any = None
    try:
        # every candidate written and screened statically first; the files stay until the end
        for n, cand in enumerate(rows):
            try:
                text = rewrite(source, cand.config)
                tmp = create_candidate(path.parent, f"_wh_tune_{path.stem}_{n}", text)
                tmps.append(tmp)
                cand.shared_bytes = shared_memory_of(text, str(tmp), kernel, settings, target)
                static = check_file(tmp, overrides)
            except KeyError as exc:
                cand.status = "error"
                cand.reasons = [str(exc.args[0])]
                continue
            errors = [r for r in static.records if r.severity is Severity.ERROR]
            if errors:
                cand.status = "rejected"
                cand.reasons = [f"{r.rule}: {r.message}" for r in errors]
                continue
            survivors.append((cand, tmp))
        if engines.shared is not None:  # a cluster: each candidate validated and timed in one job
            _run_remotely(survivors, kernel, engines, say)
            survivors = []
        if jobs > 1 and len(survivors) > 1:
            say(f"{kernel}: validating {len(survivors)} candidates, {jobs} at a time")
            survivors = _validate_concurrently(survivors, kernel, jobs, make_engine)
        # the benchmarks one at a time through one worker (the builds are cache hits by now)
        for number, (cand, tmp) in enumerate(survivors, start=1):
            say(f"{kernel}: candidate {number}/{len(survivors)} {cand.config}")
            try:
                if engine is None:
                    engine = make_engine()
                _take(cand, engine.check(tmp, force=True), kernel, validate_only=False)
            except KeyError as exc:
                cand.status = "error"
                cand.reasons = [str(exc.args[0])]
    finally:
        if engine is not None:
            engine.close()
        engines.close()
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
    return kernel, rows


def create_candidate(folder: Path, stem: str, text: str) -> Path:
    """Write ``text`` to a new file ``<stem>.py`` in ``folder`` (another name, ``<stem>_<random>.py``,
    when that one exists): created with O_EXCL|O_NOFOLLOW, so never through a link the workspace
    ships under that name (which led to a file outside the tree) nor over a file already there."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(64):
        path = folder / (f"{stem}.py" if attempt == 0 else f"{stem}_{secrets.token_hex(4)}.py")
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path
    raise FileExistsError(f"no free name for a candidate {stem}.py in {folder}")


def _take(cand: Candidate, report: CheckReport, kernel: str, *, validate_only: bool) -> bool:
    """Fill ``cand`` from a check result; whether it goes on (validate_only: it validated)."""
    from warp_harness.daemon.benchcmd import rows_of

    mine = [r for r in rows_of(report) if r.kernel == kernel]
    if not mine:
        cand.status = "error"
        cand.reasons = [r.message for r in report.dynamic() if r.severity is Severity.ERROR][:2]
        return False
    row = mine[0]
    if validate_only:
        if row.status == "validate:pass":
            return True
        cand.status = row.status
        return False
    cand.status = row.status
    cand.median_s = row.median_s
    cand.metrics = row.metrics
    reg = row.metrics.get("registers_per_thread") if row.metrics else None
    cand.registers = int(reg) if isinstance(reg, int | float) else None
    return True


def _run_remotely(
    survivors: list[tuple[Candidate, Path]], kernel: str, engines: Engines, say: Callable[[str], None]
) -> None:
    """Validate and time every candidate on the cluster, as many at once as it has slots; a
    kernel is still timed only after it matched its reference (in the same job)."""
    from warp_harness.daemon.engines import check_many

    say(f"{kernel}: {len(survivors)} candidates on the cluster, {engines.parallel} at a time")
    reports = check_many(engines.make, [tmp for _, tmp in survivors], engines.parallel)
    for (cand, _), report in zip(survivors, reports, strict=True):
        _take(cand, report, kernel, validate_only=False)


def _validate_concurrently(
    survivors: list[tuple[Candidate, Path]], kernel: str, jobs: int, make_engine: Any
) -> list[tuple[Candidate, Path]]:
    """Compile and validate the candidates ``jobs`` at a time (an engine, so a worker, per
    thread); those that validated, in their order."""
    import concurrent.futures
    import threading

    local = threading.local()
    engines: list[Any] = []
    lock = threading.Lock()

    def one(item: tuple[Candidate, Path]) -> bool:
        cand, tmp = item
        engine = getattr(local, "engine", None)
        if engine is None:
            engine = make_engine()
            local.engine = engine
            with lock:
                engines.append(engine)
        try:
            report = engine.check(tmp, force=True, steps=(Step.VALIDATE,))
        except Exception as exc:
            cand.status = "error"
            cand.reasons = [f"{type(exc).__name__}: {exc}"]
            return False
        return _take(cand, report, kernel, validate_only=True)

    try:
        with concurrent.futures.ThreadPoolExecutor(
            max_workers=jobs, thread_name_prefix="warp-harness-tune"
        ) as pool:
            ok = list(pool.map(one, survivors))
    finally:
        for engine in engines:
            engine.close()
    return [item for item, good in zip(survivors, ok, strict=True) if good]


def shared_memory_of(text: str, path: str, kernel: str, settings: Any, target: str | None) -> int | None:
    """WH015's estimate of the shared memory one block of ``kernel`` asks for (None: unknown)."""
    from warp_harness.engine import analyse_source
    from warp_harness.model.shared_memory import SharedMemoryEstimator, max_unroll_of

    if target:
        settings = settings.merged({"target": target})
    model = analyse_source(text, path, settings).model
    found = model.kernel_named(kernel) if model is not None else None
    if model is None or found is None:
        return None
    estimate = SharedMemoryEstimator(model, found, model.types(found), max_unroll=max_unroll_of(model)).run()
    if not estimate.complete or not estimate.shared_sites:
        return None
    return estimate.request


def best(rows: Sequence[Candidate]) -> Candidate | None:
    """The fastest candidate that validated and was timed."""
    timed = [r for r in rows if r.status == "timed" and r.median_s is not None]
    return min(timed, key=lambda r: r.median_s or 0.0) if timed else None


def result_path(workspace: Path, path: Path, kernel: str) -> Path:
    """Where a tuning result is kept for the language server: ``.warp-harness/tune/<file>.<kernel>.json``."""
    from warp_harness.daemon.cache import state_path

    rel = (
        path.resolve().relative_to(workspace.resolve())
        if path.resolve().is_relative_to(workspace.resolve())
        else Path(path.name)
    )
    flat = "__".join(rel.with_suffix("").parts)
    return state_path(workspace, "tune", f"{flat}.{kernel}.json")


def store_result(
    workspace: Path, path: Path, kernel: str, rows: Sequence[Candidate], target: str | None
) -> Path:
    """Write the tuning result (every candidate, the front, the best and the current one) as JSON."""
    import json
    import time

    from warp_harness.daemon.cache import atomic_write_bytes

    front = pareto(rows)
    winner = best(rows)
    current = next((r for r in rows if r.current), None)
    speedup = (
        current.median_s / winner.median_s
        if winner and current and current.median_s and winner.median_s and current.status == "timed"
        else None
    )
    data = {
        "version": 1,
        "path": str(path.resolve()),
        "kernel": kernel,
        "target": target,
        "finished": time.time(),
        "best": winner.to_dict() if winner else None,
        "current": current.to_dict() if current else None,
        "speedup": speedup,
        "front": [r.config for r in front],
        "candidates": [r.to_dict() for r in rows],
    }
    out = result_path(workspace, path, kernel)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:  # the language server shows only results this user's harness wrote (server/tuning.py)
        tagged = user_state.tagged_json(data, purpose=user_state.TUNE_RESULT)
    except user_state.StateUnusable as exc:
        raise OSError(f"tuning result not signed: {exc}") from None
    atomic_write_bytes(out, json.dumps(tagged, indent=1).encode())
    return out


def report(kernel: str, rows: Sequence[Candidate]) -> str:
    front = {id(r) for r in pareto(rows)}
    lines = [f"tuning `{kernel}`: {len(rows)} candidate(s)"]
    for r in sorted(rows, key=lambda r: (r.median_s is None, r.median_s or 0.0)):
        cfg = ", ".join(f"{k}={v}" for k, v in r.config.items())
        if r.median_s is not None:
            what = f"{r.median_s * 1e6:10.1f} µs"
        else:
            what = f"{r.status}: {'; '.join(r.reasons)[:150]}" if r.reasons else r.status
        shared = f"  {r.shared_bytes / 1024:6.1f} KiB shared" if r.shared_bytes is not None else ""
        regs = f"  {r.registers if r.registers is not None else '-':>4} regs"
        now = "  (current)" if r.current else ""
        lines.append(f"{'*' if id(r) in front else ' '} {cfg:40} {what}{shared}{regs}{now}")
    lines.append(
        "* = Pareto front (median time against shared memory per block where estimated, "
        "else the product of the tunables, and registers per thread where known)"
    )
    winner, current = best(rows), next((r for r in rows if r.current), None)
    if winner is not None and current is not None and current.median_s and winner.median_s:
        lines.append(
            f"best: {', '.join(f'{k}={v}' for k, v in winner.config.items())}, "
            f"{current.median_s / winner.median_s:.2f}x the current configuration's speed"
        )
    return "\n".join(lines) + "\n"
