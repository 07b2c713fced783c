"""Replay captured launches of a module's kernels and judge them (the supervisor's side).

This process runs no workspace code: it reads the capture store (signed indexes, verified blobs),
writes each launch's inputs as ``.npy`` files into a private folder (poisoning the arrays the kernel
only writes), asks the worker (job kind ``replay``: ``worker_side``) to launch them, and compares the
arrays the worker leaves there with the accepted baseline (``oracles``), reading them with
``allow_pickle=False``. A worker that dies is read like any crash: a bounds probe's assertion places
the out-of-bounds access on its line (WHD080).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from warp_harness.capture.identity import KernelSource, kernel_sources
from warp_harness.capture.store import CaptureRefused, CaptureStore, KernelIndex, OutsideWorkspace, Refusal
from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol
from warp_harness.daemon.captured import cuda_oracle, hermetic, oracles, replay_cache, shrink
from warp_harness.daemon.captured import tolerances as tol
from warp_harness.daemon.codegen_errors import parse_native_assertion
from warp_harness.daemon.crash_records import BOUNDS_HINT, BOUNDS_SIGNALS, python_access
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.results import FailingCase
from warp_harness.daemon.worker_process import CallOutcome, signal_name
from warp_harness.record import Location, Record, Related, Severity, Stage

Call = Callable[[dict[str, Any]], CallOutcome]
_OUT_FILE = re.compile(r"out-[0-9a-f]{1,32}-\d{1,4}\.npy")
_CROSS_FILE = re.compile(r"x[c12]-[0-9a-f]{1,32}-\d{1,4}\.npy")
# the failures a shrunk re-run can reproduce (a race needs the CUDA runs, which a trial does not make)
_SHRINKABLE = frozenset({F.REPLAY_BOUNDS, F.REPLAY_UNWRITTEN, F.BEHAVIOUR_CHANGED, F.REPLAY_NONFINITE})


@dataclass
class ReplayOutcome:
    records: list[Record] = field(default_factory=list)
    # one failing case per failing launch, for the failure library (`warp-harness replay` re-runs it)
    failures: list[FailingCase] = field(default_factory=list)
    launches: int = 0
    kernels: list[str] = field(default_factory=list)
    # (kernel, launch id) -> {array: what the replay left in it, poison put back where no run wrote}
    outputs: dict[tuple[str, str], dict[str, np.ndarray]] = field(default_factory=dict)
    clean: set[tuple[str, str]] = field(default_factory=set)
    cached: int = 0  # kernels whose result came from the user's replay cache
    accepted: list[dict[str, Any]] = field(default_factory=list)  # accept_module: the launches accepted


def _flat_arrays(args: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for d in args:
        if d.get("kind") == "array":
            out.append(d)
        elif d.get("kind") == "struct":
            out += _flat_arrays(d.get("fields") or [])
    return out


def _provenance(launch: dict[str, Any]) -> str:
    p = launch.get("provenance") or {}
    where = f"{p.get('file')}:{p.get('line')}" if p.get("file") else "an unknown place"
    test = (
        f", test `{p['test']}`"
        if p.get("test")
        else (f", command `{p['command']}`" if p.get("command") else "")
    )
    dim = f"dim {launch['dim']}" + (
        f" shrunk from {launch['shrunk_from']}" if launch.get("shrunk_from") else ""
    )
    return f"captured launch {launch['id'][:8]} ({dim}, {launch['device']}) from {where}{test}"


def _related(launch: dict[str, Any]) -> tuple[Related, ...]:
    p = launch.get("provenance") or {}
    if not p.get("file"):
        return ()
    return (
        Related(Location(path=str(p["file"]), line=max(int(p.get("line") or 1), 1)), _provenance(launch)),
    )


def _shapes(launch: dict[str, Any]) -> str:
    return ", ".join(f"`{d['name']}` {d['dtype']}{d['shape']}" for d in _flat_arrays(launch["args"]))


class _Replay:
    def __init__(
        self,
        workspace: Path,
        path: Path,
        display: str,
        options: RuntimeOptions,
        call: Call,
        tolerances: tol.Tolerances | None = None,
    ) -> None:
        self.workspace = workspace
        self.path = path
        self.display = display
        self.options = options
        self.call = call
        self.store = CaptureStore(workspace)
        self.out = ReplayOutcome()
        self.only_launches: set[str] | None = None
        self.tolerances = tolerances or tol.load(workspace, options.replay_tolerances)
        self.text = ""  # the saved module's text (the shrinker reads its indexing)
        # a shrunk launch: its dim, and the arrays judged on their first dim[0] rows only
        self.dims: dict[str, list[int]] = {}
        self.prefix: dict[str, tuple[int, frozenset[str]]] = {}
        self.cross = True  # run the CUDA oracles (where a device and the devices allow)
        self.shrink = False  # shrink each kernel's failing cases (`shrink` option)
        self.touch = True
        self.cuda_status: dict[str, Any] | None = None
        self.notes: list[str] = []  # the kernel's summary notes (looser workspace tolerances)
        # why the kernel being replayed cannot be built from its text alone (None: it is)
        self.not_hermetic: str | None = None
        self.imported: dict[str, str] = {}  # the workspace modules' texts the decision followed
        self.closure: dict[str, Any] | None = None  # the closure record of the launches being run

    def record(
        self,
        rule: str,
        severity: Severity,
        src: KernelSource | None,
        message: str,
        *,
        stage: Stage,
        launch: dict[str, Any] | None = None,
        line: int | None = None,
        col: int | None = None,
        end_col: int | None = None,
        **extra: Any,
    ) -> None:
        if launch is not None and src is not None and severity is not Severity.INFO:
            self.out.failures.append(
                FailingCase(
                    kind="captured",
                    kernel=src.name,
                    device=str(launch.get("device") or "cpu"),
                    edge_case=f"captured launch {launch['id']}",
                    rule=rule,
                    message=message,
                    extra={"launch": str(launch["id"])},
                )
            )
        self.out.records.append(
            F.make_record(
                stage,
                rule,
                severity,
                self.display,
                line or (src.line if src else 1),
                message,
                col=col if col is not None else (src.col if src else 0),
                end_col=end_col if end_col is not None else (src.end_col if src else None),
                kernel=src.name if src else None,
                related=_related(launch) if launch else (),
                **extra,
            )
        )

    # ------------------------------------------------------------------ one kernel
    def kernel(self, index: KernelIndex, src: KernelSource, folder: Path) -> None:
        first_failure = len(self.out.failures)
        replayed = len(self.out.kernels)
        self.cuda_status = None
        self.notes = []
        originals: dict[str, dict[str, Any]] = {}
        said: set[str] = set()  # WHD069 once per kernel and reason, however many closures share it
        # a kernel made by a factory: one build (and job) per closure its launches were captured with
        for closure in hermetic.closures(index.launches):
            self.closure = closure
            self.not_hermetic, self.imported = hermetic.decision(
                self.text, str(self.path), src.name, self.workspace, closure
            )
            first_group, jobs = len(self.out.records), len(self.out.kernels)
            self._run(index, src, folder, originals)
            if self.not_hermetic is not None and len(self.out.kernels) > jobs:  # the worker imported it
                self.out.records[first_group:] = hermetic.marked(self.out.records[first_group:])
                if self.not_hermetic not in said:
                    said.add(self.not_hermetic)
                    self.out.records.append(
                        hermetic.record(self.display, src, self.not_hermetic, self.options.require_hermetic)
                    )
        del self.out.kernels[replayed + 1 :]  # the kernel once, however many closures it was built with
        if self.shrink:
            self._minimise(index, src, originals, first_failure)

    def _run(
        self, index: KernelIndex, src: KernelSource, folder: Path, originals: dict[str, dict[str, Any]]
    ) -> None:
        prepared: list[dict[str, Any]] = []
        skipped: list[str] = []
        for launch in sorted(
            index.launches, key=lambda x: sum(int(d.get("bytes") or 0) for d in _flat_arrays(x["args"]))
        ):
            if self.only_launches is not None and launch["id"] not in self.only_launches:
                continue
            if hermetic.closure_of(launch) != self.closure:
                continue
            if launch.get("incomplete"):
                skipped.append(f"{launch['id'][:8]}: {'; '.join(launch['incomplete'])}")
                continue
            try:
                prepared.append(self._prepare(launch, src, folder))
            except CaptureRefused as exc:
                self.record(
                    F.CAPTURE_REFUSED,
                    Severity.WARNING,
                    src,
                    f"{_provenance(launch)} of `{src.name}` not replayed: {exc}",
                    stage=Stage.INTERNAL,
                    launch=launch,
                )
                continue
            shrunk = self.dims.get(str(launch["id"]))
            originals[launch["id"]] = (
                dict(launch, dim=shrunk, shrunk_from=launch["dim"]) if shrunk else launch
            )
        if not prepared:
            return
        msg = protocol.message(
            "job",
            kind="replay",
            path=str(self.path),
            display_path=self.display,
            workspace=str(self.workspace),
            options=self.options.to_dict(),
            folder=str(folder),
            source=self.text,  # the worker builds from the text judged here
            kernels=[
                {
                    "name": src.name,
                    "hermetic": self.not_hermetic is None,
                    "imports": self.imported,
                    "closure": self.closure,
                    "bounds": True,
                    "launches": prepared,
                    "cross_devices": list(self.options.devices) if self.cross else None,
                }
            ],
        )
        outcome = self.call(msg)
        self.out.kernels.append(src.name)
        if outcome.kind != "done":
            self._died(outcome, src, originals)
            return
        result = outcome.result or {}
        if result.get("status") != "ok":
            self.record(
                F.REPLAY_FAILED,
                Severity.WARNING,
                src,
                f"captured launches of `{src.name}` not replayed: the module could not be built "
                f"({result.get('error')})",
                stage=Stage.CRASH,
            )
            return
        done = result.get("launches") or {}
        clean = 0
        for lid, launch in originals.items():
            got = done.get(lid)
            if not isinstance(got, dict):
                continue
            self.out.launches += 1
            if got.get("error"):
                self.record(
                    F.REPLAY_FAILED,
                    Severity.WARNING,
                    src,
                    f"{_provenance(launch)} of `{src.name}` raised on replay: {str(got['error'])[:400]}",
                    stage=Stage.CRASH,
                    launch=launch,
                    hint="the saved kernel no longer takes the captured arguments? capture again",
                )
                continue
            judged = self._judge(src, launch, got.get("outputs") or {}, folder)
            if self._cross(src, launch, got.get("cross"), folder) and judged:
                clean += 1
                self.out.clean.add((src.name, lid))
        if self.touch:
            try:
                self.store.touch(index, set(originals))
            except (OSError, OutsideWorkspace):
                pass
        if clean:
            note = f"; not replayed: {', '.join(skipped)}" if skipped else ""
            note += "".join(f"; {n}" for n in dict.fromkeys(self.notes))
            self.record(
                F.REPLAYED,
                Severity.INFO,
                src,
                f"{clean} captured launch(es) of `{src.name}` replayed with bounds checks: outputs match "
                f"the baseline ({index.launches[0].get('baseline_from', 'capture')})"
                f"{hermetic.closure_note(self.closure)}"
                f"{cuda_oracle.summary_note(self.cuda_status)}{note}",
                stage=Stage.NUMERIC,
            )

    # ------------------------------------------------------------------ CUDA oracles
    def _cross(self, src: KernelSource, launch: dict[str, Any], cross: Any, folder: Path) -> bool:
        """Judge the CUDA oracles' runs of one launch (True: nothing found, or they did not run)."""
        if not isinstance(cross, dict):
            return True
        if cross.get("skipped"):
            self.cuda_status = {"skipped": str(cross["skipped"])}
            return True
        device = str(cross.get("device") or "cuda")
        if cross.get("error"):
            self.record(
                F.REPLAY_FAILED,
                Severity.WARNING,
                src,
                f"{_provenance(launch)} of `{src.name}` raised in the CUDA oracles' runs on {device}: "
                f"{str(cross['error'])[:400]}",
                stage=Stage.CRASH,
                launch=launch,
            )
            return False

        def arrays(files: Any) -> dict[str, np.ndarray]:
            out: dict[str, np.ndarray] = {}
            for name, file in files.items() if isinstance(files, dict) else ():
                if isinstance(file, str) and _CROSS_FILE.fullmatch(file):
                    try:
                        out[str(name)] = np.load(folder / file, allow_pickle=False)
                    except (OSError, ValueError):
                        pass
            return out

        runs: list[Any] = cross["cuda"] if isinstance(cross.get("cuda"), list) else []
        found = cuda_oracle.compare_runs(
            arrays(cross.get("cpu")),
            [arrays(r) for r in runs],
            device,
            cuda_oracle.accumulated_arrays(self.text, src.name),
            int(np.prod([int(x) for x in launch["dim"]])),
        )
        self.cuda_status = {"device": device}
        for f in found:
            self.record(
                F.REPLAY_RACE,
                Severity.WARNING,
                src,
                cuda_oracle.message(src.name, f, _provenance(launch)),
                stage=Stage.NUMERIC,
                launch=launch,
                expected=f.differences[0].first[0][1] if f.differences[0].first else None,
                actual=f.differences[0].first[0][2] if f.differences[0].first else None,
                hint="make the update atomic (`wp.atomic_add`, `wp.atomic_min`, ...) or give each thread "
                "its own output element",
            )
        return not found

    # ------------------------------------------------------------------ shrinking
    def _minimise(
        self, index: KernelIndex, src: KernelSource, originals: dict[str, dict[str, Any]], first: int
    ) -> None:
        """Keep one failing case per rule (the smallest failing launch: launches run smallest first)
        and shrink its dim where the kernel's indexing allows (``shrink``)."""
        kept: dict[str, FailingCase] = {}
        for case in self.out.failures[first:]:
            kept.setdefault(str(case.rule), case)
        self.out.failures[first:] = list(kept.values())
        arrays = shrink.prefix_arrays(self.text, src.name)
        if arrays is None:
            return
        for case in kept.values():
            launch = originals.get(str(case.extra.get("launch")))
            if launch is None or case.rule not in _SHRINKABLE:
                continue
            dim = [int(x) for x in launch["dim"]]
            if not dim or dim[0] <= 1:
                continue
            rule = str(case.rule)

            def fails(
                k: int, launch: dict[str, Any] = launch, dim: list[int] = dim, rule: str = rule
            ) -> bool:
                trial = _Replay(
                    self.workspace, self.path, self.display, self.options, self.call, self.tolerances
                )
                trial.text = self.text
                trial.only_launches = {str(launch["id"])}
                trial.dims = {str(launch["id"]): [k, *dim[1:]]}
                trial.prefix = {str(launch["id"]): (k, arrays)}
                trial.cross = trial.touch = False
                folder = Path(tempfile.mkdtemp(prefix="wh-shrink-"))
                try:
                    trial.kernel(index, src, folder)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                return any(r.rule == rule for r in trial.out.records)

            k = shrink.smallest_failing(dim[0], fails)
            if k < dim[0]:
                case.size, case.original_size = k, dim[0]
                case.message = f"{case.message} [minimal case: dim {[k, *dim[1:]]} of {dim}]"

    def _prepare(self, launch: dict[str, Any], src: KernelSource, folder: Path) -> dict[str, Any]:
        lid = str(launch["id"])
        if not re.fullmatch(r"[0-9a-f]{1,32}", lid):
            raise CaptureRefused(f"bad launch id {lid!r}")
        counter = iter(range(1 << 20))

        def arg(d: dict[str, Any]) -> dict[str, Any]:
            d = dict(d)
            if d.get("kind") == "array":
                arr = self.store.blob(str(d.get("blob")))
                if d["name"] in src.write_only and d["name"] in (launch.get("written") or []):
                    poisoned = oracles.poison(arr)
                    if poisoned is not None:
                        arr = poisoned
                        d["poisoned"] = True
                d["file"] = f"in-{lid}-{next(counter)}.npy"
                np.save(folder / d["file"], arr, allow_pickle=False)
            elif d.get("kind") == "struct":
                d["fields"] = [arg(f) for f in d.get("fields") or []]
            return d

        return {
            "id": lid,
            "device": str(launch["device"]),
            "dim": self.dims.get(lid) or [int(x) for x in launch["dim"]],
            "block_dim": launch.get("block_dim"),
            "args": [arg(d) for d in launch["args"]],
        }

    def _judge(
        self, src: KernelSource, launch: dict[str, Any], outputs: dict[str, Any], folder: Path
    ) -> bool:
        arrays = _flat_arrays(launch["args"])
        befores = {d["name"]: self.store.blob(str(d["blob"])) for d in arrays}
        inputs_finite = all(
            bool(np.isfinite(a).all())
            for n, a in befores.items()
            if a.dtype.kind == "f" and n not in launch["written"]
        )
        poisoned = {n for n in launch["written"] if n in src.write_only}
        clean = True
        kept: dict[str, np.ndarray] = {}
        for d in arrays:
            name = d["name"]
            file = outputs.get(name)
            if not isinstance(file, str) or not _OUT_FILE.fullmatch(file):
                continue
            try:
                replay = np.load(folder / file, allow_pickle=False)
            except (OSError, ValueError):
                continue
            before = befores[name]
            base_sha = (launch.get("baseline") or {}).get(name)
            baseline = self.store.blob(str(base_sha)) if base_sha else before
            prefix = self.prefix.get(str(launch["id"]))
            if prefix is not None and name in prefix[1] and baseline.ndim and replay.ndim:
                k = prefix[0]  # a shrunk launch: only the first k rows were run
                before, baseline, replay = before[:k], baseline[:k], replay[:k]
            was_poisoned = name in poisoned and oracles.poison(before) is not None
            tolerance = self.tolerances.get(src.name, str(baseline.dtype))
            note = tolerance.note(str(baseline.dtype)) if baseline.dtype.kind == "f" else ""
            if note:
                self.notes.append(note)
            findings = oracles.judge_array(
                name,
                before,
                baseline,
                replay,
                was_poisoned=was_poisoned,
                inputs_finite=inputs_finite,
                tolerance=tolerance.pair if baseline.dtype.kind == "f" else None,
            )
            if was_poisoned:
                untouched = oracles.poisoned_mask(replay) & ~oracles.differs(before, baseline)
                kept[name] = np.where(untouched, before, replay)
            else:
                kept[name] = replay
            for f in findings:
                clean = False
                self._report(src, launch, f, d, note)
        self.out.outputs[(src.name, launch["id"])] = kept
        return clean

    def _report(
        self, src: KernelSource, launch: dict[str, Any], f: oracles.Finding, d: dict[str, Any], note: str = ""
    ) -> None:
        where = _provenance(launch)
        at = f"[{', '.join(map(str, f.first_index))}]"
        if f.kind == "unwritten":
            self.record(
                F.REPLAY_UNWRITTEN,
                Severity.ERROR,
                src,
                f"`{src.name}` left {f.count} of {f.total} elements of `{f.array}` unwritten that the "
                f"captured "
                f"run wrote (first at {at}; {where})",
                stage=Stage.NUMERIC,
                launch=launch,
                expected=f.expected,
                actual=f.actual,
                hint="a thread index that does not cover the launch (1-D `wp.tid()` under a 2-D launch), an "
                "early `return` or a guard that skips elements",
            )
        elif f.kind == "nonfinite":
            self.record(
                F.REPLAY_NONFINITE,
                Severity.WARNING,
                src,
                f"`{src.name}` now writes NaN/Inf into {f.count} of {f.total} elements of `{f.array}` "
                f"from finite "
                f"inputs; the baseline had finite values there (first at {at}; {where})",
                stage=Stage.NUMERIC,
                launch=launch,
                expected=f.expected,
                actual=f.actual,
            )
        elif f.kind == "shape":
            self.record(
                F.BEHAVIOUR_CHANGED,
                Severity.WARNING,
                src,
                f"`{src.name}`: `{f.array}` comes back as {f.actual}, the baseline is {f.expected} ({where})",
                stage=Stage.NUMERIC,
                launch=launch,
            )
        else:
            rel = f", max relative error {f.max_rel:.3g}" if f.max_rel else ""
            self.record(
                F.BEHAVIOUR_CHANGED,
                Severity.WARNING,
                src,
                f"`{src.name}` changed behaviour: {f.count} of {f.total} elements of `{f.array}` "
                f"differ from the "
                f"accepted baseline (max absolute error {f.max_abs:.3g}{rel}; first at {at}: baseline "
                f"{f.expected}, now {f.actual}; {where})" + (f"; {note}" if note else ""),
                stage=Stage.NUMERIC,
                launch=launch,
                expected=f.expected,
                actual=f.actual,
                hint=f"intended? `warp-harness accept {self.display}::{src.name} --trust` "
                "makes it the baseline",
            )

    def _died(self, outcome: CallOutcome, src: KernelSource, originals: dict[str, dict[str, Any]]) -> None:
        lid = str(outcome.progress.get("launch") or "")
        launch = originals.get(lid)
        where = _provenance(launch) if launch else "a captured launch"
        extents = f"; arrays: {_shapes(launch)}" if launch else ""
        if launch is not None:
            self.out.launches += 1
        assertion = parse_native_assertion(outcome.output)
        sig = signal_name(outcome.returncode)
        if (assertion is not None and assertion.is_bounds_check) or (assertion and assertion.python_source):
            access = python_access(assertion, self.path) if assertion else None
            if access is not None:
                line, col, end_col, text = access
                self.record(
                    F.REPLAY_BOUNDS,
                    Severity.ERROR,
                    src,
                    f"replay of `{src.name}` indexes out of bounds at line {line}: `{text}` "
                    f"({where}{extents})",
                    stage=Stage.CRASH,
                    launch=launch,
                    line=line,
                    col=col,
                    end_col=end_col or None,
                    hint=BOUNDS_HINT,
                )
                return
            self.record(
                F.REPLAY_BOUNDS,
                Severity.ERROR,
                src,
                f"replay of `{src.name}` indexes an array out of bounds (Warp's check: "
                f"`{assertion.condition[:160]}` at {assertion.where}; {where}{extents})",
                stage=Stage.CRASH,
                launch=launch,
                hint=BOUNDS_HINT,
            )
            return
        if outcome.kind == "crash" and sig in BOUNDS_SIGNALS:
            self.record(
                F.REPLAY_BOUNDS,
                Severity.ERROR,
                src,
                f"replay of `{src.name}` killed the worker ({sig}) in a debug build: most likely an "
                f"out-of-bounds access ({where}{extents})",
                stage=Stage.CRASH,
                launch=launch,
                hint=BOUNDS_HINT,
            )
            return
        self.record(
            F.REPLAY_FAILED,
            Severity.WARNING,
            src,
            f"replay of `{src.name}` ended with {outcome.kind} ({sig}; {where})",
            stage=Stage.CRASH,
            launch=launch,
        )


def replay_module(
    workspace: Path,
    path: Path,
    display: str,
    options: RuntimeOptions,
    call: Call,
    *,
    only_changed: bool,
    kernels: set[str] | None = None,
    launches: set[str] | None = None,
    dims: dict[str, list[int]] | None = None,
    shrink_failures: bool = False,
    cache: bool = False,
) -> ReplayOutcome:
    """Replay the captured launches of ``path``'s kernels (``only_changed``: of those whose source
    differs from the capture's; ``kernels``: only these; ``launches``: only these ids; ``dims``: a
    shrunk launch's dim) and judge them. ``shrink_failures``: keep one failing case per kernel and
    rule, shrunk (``shrink``); ``cache``: take a kernel's result from the user's replay cache when
    nothing it depends on changed, and store it there (``replay_cache``)."""
    workspace = workspace.resolve()
    store = CaptureStore(workspace)
    try:
        if not store.exists():
            return ReplayOutcome()
        rel = path.resolve().relative_to(workspace).as_posix()
    except (ValueError, OSError, OutsideWorkspace):
        return ReplayOutcome()
    replay = _Replay(workspace, path.resolve(), display, options, call)
    replay.only_launches = launches
    replay.shrink = shrink_failures
    try:
        entries = store.for_module(rel)
    except OutsideWorkspace as exc:
        entries = [Refusal(".warp-harness/captures", str(exc))]
    sources: dict[str, KernelSource] | None = None
    for entry in entries:
        if isinstance(entry, Refusal):
            if _claims(workspace, entry.file) in (rel, None):
                replay.record(
                    F.CAPTURE_REFUSED,
                    Severity.WARNING,
                    None,
                    f"capture {entry.file} refused, not replayed: {entry.reason}",
                    stage=Stage.INTERNAL,
                    hint="`warp-harness capture --prune` removes what it cannot verify; capture again",
                )
            continue
        if sources is None:
            try:
                replay.text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return replay.out
            sources = kernel_sources(replay.text)
        src = sources.get(entry.name)
        if src is None or (kernels is not None and entry.name not in kernels):
            continue
        if only_changed and src.digest == entry.digest:
            continue
        replay.dims, replay.prefix = {}, {}
        if dims:
            arrays = shrink.prefix_arrays(replay.text, src.name)
            for lid, dim in dims.items():
                if arrays is not None:  # the kernel's indexing still allows fewer threads
                    replay.dims[lid] = [int(x) for x in dim]
                    replay.prefix[lid] = (int(dim[0]), arrays)
        cache_key = _cache_key(replay, entry, src) if cache else None
        if cache_key is not None and _from_cache(replay, cache_key):
            continue
        first_record, first_failure = len(replay.out.records), len(replay.out.failures)
        launches_before = replay.out.launches
        folder = Path(tempfile.mkdtemp(prefix="wh-replay-"))
        try:
            replay.kernel(entry, src, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if cache_key is not None and not _infrastructure(replay.out.records[first_record:]):
            replay_cache.save(
                workspace,
                cache_key,
                {
                    "kernel": src.name,
                    "launches": replay.out.launches - launches_before,
                    "records": [r.to_dict() for r in replay.out.records[first_record:]],
                    "failures": [c.to_dict() for c in replay.out.failures[first_failure:]],
                },
            )
    return replay.out


@functools.cache
def _harness_version() -> str:
    try:
        from importlib.metadata import version

        return version("warp-harness")
    except Exception:
        return "0.0.0"


def _cache_key(replay: _Replay, entry: KernelIndex, src: KernelSource) -> str:
    from warp_harness.daemon.cache import warp_version

    return replay_cache.key(
        entry,
        src.digest,
        replay_cache.module_context(replay.text),
        replay.options,
        replay.tolerances.identity(),
        _harness_version(),
        warp_version(),
    )


def _from_cache(replay: _Replay, cache_key: str) -> bool:
    """Add a cached kernel result to the outcome (False: none, or not readable as one)."""
    data = replay_cache.load(replay.workspace, cache_key)
    if data is None:
        return False
    try:
        records = [Record.from_dict(r) for r in data["records"]]
        failures = [FailingCase.from_dict(c) for c in data["failures"]]
        launches = int(data["launches"])
        kernel = str(data["kernel"])
    except (KeyError, TypeError, ValueError):
        return False
    replay.out.records += [replace(r, location=replace(r.location, path=replay.display)) for r in records]
    replay.out.failures += failures
    replay.out.launches += launches
    replay.out.kernels.append(kernel)
    replay.out.cached += 1
    return True


def _infrastructure(records: list[Record]) -> bool:
    """A result not worth keeping: the worker died another way, timed out, or the module did not build
    (WHD085); the next save tries again."""
    return any(r.rule == F.REPLAY_FAILED for r in records)


def _claims(workspace: Path, rel_file: str) -> str | None:
    """The module path a refused index claims (None: unreadable); it is never trusted for more."""
    try:
        data = json.loads((workspace / rel_file).read_bytes()[: 8 * 1024 * 1024])
        return str(data["kernel"]["path"])
    except Exception:
        return None


def accept_module(
    workspace: Path,
    path: Path,
    display: str,
    options: RuntimeOptions,
    call: Call,
    *,
    kernels: set[str] | None = None,
) -> tuple[int, ReplayOutcome]:
    """Make the saved kernels' replayed outputs the baseline of their captured launches (re-signed).
    A launch whose replay crashed or was refused keeps its baseline. (launches accepted, outcome)."""
    outcome = replay_module(workspace, path, display, options, call, only_changed=False, kernels=kernels)
    store = CaptureStore(workspace)
    rel = path.resolve().relative_to(workspace.resolve()).as_posix()
    sources = kernel_sources(path.read_text(encoding="utf-8"))
    accepted = 0
    bad = {r.location.kernel for r in outcome.records if r.rule in (F.REPLAY_BOUNDS, F.REPLAY_FAILED)}
    for entry in store.for_module(rel):
        if isinstance(entry, Refusal) or entry.name not in sources or entry.name in bad:
            continue
        if kernels is not None and entry.name not in kernels:
            continue
        changed = False
        for launch in entry.launches:
            outs = outcome.outputs.get((entry.name, launch["id"]))
            if outs is None:
                continue
            befores = {d["name"]: d["blob"] for d in _flat_arrays(launch["args"])}
            baseline: dict[str, str] = {}
            for name, arr in outs.items():
                sha, _ = store.put_blob(arr)
                if name in launch["written"] or sha != befores.get(name):
                    baseline[name] = sha
            launch["baseline"] = baseline
            launch["written"] = sorted(baseline)
            launch["baseline_from"] = "accept"
            launch["digest"] = sources[entry.name].digest
            accepted += 1
            outcome.accepted.append(
                {"kernel": entry.name, "id": launch["id"], "dim": launch["dim"], "device": launch["device"]}
            )
            changed = True
        if changed:
            entry.data["kernel"]["digest"] = sources[entry.name].digest
            store.write_index(entry.data)
    return accepted, outcome
