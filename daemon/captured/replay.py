"""Replay captured launches of a module's kernels and judge them (the supervisor's side).

This process runs no workspace code: it reads the capture store (signed indexes, verified blobs),
writes each launch's inputs as ``.npy`` files into a private folder (poisoning the arrays the kernel
only writes), asks the worker (job kind ``replay``: ``worker_side``) to launch them, and compares the
arrays the worker leaves there with the accepted baseline (``oracles``), reading them with
``allow_pickle=False``. A worker that dies is read like any crash: a bounds probe's assertion places
the out-of-bounds access on its line (WHD080).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from warp_harness.capture.identity import KernelSource, kernel_sources
from warp_harness.capture.store import CaptureRefused, CaptureStore, KernelIndex, OutsideWorkspace, Refusal
from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol
from warp_harness.daemon.captured import oracles
from warp_harness.daemon.codegen_errors import parse_native_assertion
from warp_harness.daemon.crash_records import BOUNDS_HINT, BOUNDS_SIGNALS, python_access
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.results import FailingCase
from warp_harness.daemon.worker_process import CallOutcome, signal_name
from warp_harness.record import Location, Record, Related, Severity, Stage

Call = Callable[[dict[str, Any]], CallOutcome]
_OUT_FILE = re.compile(r"out-[0-9a-f]{1,32}-\d{1,4}\.npy")


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
    return f"captured launch {launch['id'][:8]} (dim {launch['dim']}, {launch['device']}) from {where}{test}"


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
        self, workspace: Path, path: Path, display: str, options: RuntimeOptions, call: Call
    ) -> None:
        self.workspace = workspace
        self.path = path
        self.display = display
        self.options = options
        self.call = call
        self.store = CaptureStore(workspace)
        self.out = ReplayOutcome()
        self.only_launches: set[str] | None = None

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
        prepared: list[dict[str, Any]] = []
        originals: dict[str, dict[str, Any]] = {}
        skipped: list[str] = []
        for launch in sorted(
            index.launches, key=lambda x: sum(int(d.get("bytes") or 0) for d in _flat_arrays(x["args"]))
        ):
            if self.only_launches is not None and launch["id"] not in self.only_launches:
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
            originals[launch["id"]] = launch
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
            kernels=[{"name": src.name, "bounds": True, "launches": prepared}],
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
            if self._judge(src, launch, got.get("outputs") or {}, folder):
                clean += 1
                self.out.clean.add((src.name, lid))
        try:
            self.store.touch(index, set(originals))
        except (OSError, OutsideWorkspace):
            pass
        if clean:
            note = f"; not replayed: {', '.join(skipped)}" if skipped else ""
            self.record(
                F.REPLAYED,
                Severity.INFO,
                src,
                f"{clean} captured launch(es) of `{src.name}` replayed with bounds checks: outputs match "
                f"the baseline ({index.launches[0].get('baseline_from', 'capture')}){note}",
                stage=Stage.NUMERIC,
            )

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
            "dim": [int(x) for x in launch["dim"]],
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
            was_poisoned = name in poisoned and oracles.poison(before) is not None
            findings = oracles.judge_array(
                name, before, baseline, replay, was_poisoned=was_poisoned, inputs_finite=inputs_finite
            )
            if was_poisoned:
                untouched = oracles.poisoned_mask(replay) & ~oracles.differs(before, baseline)
                kept[name] = np.where(untouched, before, replay)
            else:
                kept[name] = replay
            for f in findings:
                clean = False
                self._report(src, launch, f, d)
        self.out.outputs[(src.name, launch["id"])] = kept
        return clean

    def _report(
        self, src: KernelSource, launch: dict[str, Any], f: oracles.Finding, d: dict[str, Any]
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
                f"{f.expected}, now {f.actual}; {where})",
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
) -> ReplayOutcome:
    """Replay the captured launches of ``path``'s kernels (``only_changed``: of those whose source
    differs from the capture's; ``kernels``: only these; ``launches``: only these ids) and judge them."""
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
                sources = kernel_sources(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                return replay.out
        src = sources.get(entry.name)
        if src is None or (kernels is not None and entry.name not in kernels):
            continue
        if only_changed and src.digest == entry.digest:
            continue
        folder = Path(tempfile.mkdtemp(prefix="wh-replay-"))
        try:
            replay.kernel(entry, src, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return replay.out


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
            changed = True
        if changed:
            entry.data["kernel"]["digest"] = sources[entry.name].digest
            store.write_index(entry.data)
    return accepted, outcome
