"""Captured launches benchmarked at their real sizes (the supervisor's side), after their replay.

This process runs no workspace code. It reads the capture store (signed indexes, verified blobs),
writes each launch's captured inputs as ``.npy`` files into a private folder and asks the worker to
time them (job kind ``replay`` with ``benchmark``: ``benchmark_worker``, the benchmark step's own
loop on the release build). The launch times are compared with the baseline kept for that launch
in the user's private cache (``benchmark_baselines``), never with anything the workspace ships:

- a kernel whose source is the captured (accepted) one and has no timing on this machine yet is
  timed twice: the second run is its baseline, the pair one measure of the machine's spread;
- a kernel whose source is the captured one and has a timing (``ci``, ``bench``: every launch) is
  timed again: its timing is replaced and the pair is another measure of the machine's spread;
- a kernel whose source changed (the daemon: on a save, after its replay passed) is timed in one
  job with its accepted source (the module text its baseline was timed on, kept in the private
  cache), in interleaved pairs, and judged on the pairs' ratios (``benchmark_stats.judge``): WHD090
  when every pair is slower beyond the spread measured on this machine, WHD091 when every one is
  faster; a first round of pairs only screens, a change it sees is measured again before it is
  reported.

Only launches the replay judged clean are timed when the kernel changed (a replay that reads out
of bounds is not run again without its bounds checks).
"""

from __future__ import annotations

import itertools
import math
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from warp_harness.capture.identity import KernelSource, kernel_sources
from warp_harness.capture.store import CaptureRefused, CaptureStore, KernelIndex, OutsideWorkspace
from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol
from warp_harness.daemon.captured import benchmark_stats, hermetic
from warp_harness.daemon.captured.benchmark_baselines import TimingStore, device_tag
from warp_harness.daemon.captured.replay import Call, ReplayOutcome, _flat_arrays, _provenance, _related
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.record import Record, Severity, Stage
from warp_harness.user_state import StateUnusable

BASELINE_RUNS = 2  # a new baseline: two runs, the second kept, the pair a measure of the spread


@dataclass
class Timed:
    """One captured launch timed: what the comparison found (``verdict`` None: nothing compared)."""

    kernel: str
    launch: str
    device: str
    median_s: float
    baseline_median_s: float | None
    verdict: benchmark_stats.Verdict | None
    role: str  # baseline | rerun | changed


@dataclass
class BenchmarkOutcome:
    records: list[Record] = field(default_factory=list)
    timed: list[Timed] = field(default_factory=list)
    noise_added: int = 0


def _prepare(store: CaptureStore, launch: dict[str, Any], folder: Path) -> dict[str, Any]:
    lid = str(launch["id"])
    if not re.fullmatch(r"[0-9a-f]{1,32}", lid):
        raise CaptureRefused(f"bad launch id {lid!r}")
    counter = iter(range(1 << 20))

    def arg(d: dict[str, Any]) -> dict[str, Any]:
        d = dict(d)
        if d.get("kind") == "array":
            d["file"] = f"in-{lid}-{next(counter)}.npy"
            np.save(folder / d["file"], store.blob(str(d.get("blob"))), allow_pickle=False)
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


def _by_closure(launches: list[dict[str, Any]]) -> list[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
    """``launches`` by the closure record each was captured with (``hermetic.closures``' order)."""
    return [
        (closure, [x for x in launches if hermetic.closure_of(x) == closure])
        for closure in hermetic.closures(launches)
    ]


class _Benchmark:
    def __init__(
        self,
        workspace: Path,
        path: Path,
        rel: str,
        display: str,
        options: RuntimeOptions,
        call: Call,
        text: str,
    ) -> None:
        self.text = text  # the saved module's text: what the worker builds from
        self.workspace = workspace
        self.path = path
        self.rel = rel
        self.display = display
        self.options = options
        self.call = call
        self.store = CaptureStore(workspace)
        self.timings = TimingStore(workspace)
        self._hosts: dict[str, TimingStore] = {}
        self._source_sha: str | None = None
        self.out = BenchmarkOutcome()

    def kernel(
        self, entry: KernelIndex, src: KernelSource, launches: list[dict[str, Any]], runs: int
    ) -> None:
        """Time ``launches`` of ``src`` ``runs`` times (its accepted source: a baseline, a rerun);
        a kernel made by a factory, once per closure its launches were captured with."""
        for closure, group in _by_closure(launches):
            self._kernel(entry, src, group, runs, closure)

    def _kernel(
        self,
        entry: KernelIndex,
        src: KernelSource,
        launches: list[dict[str, Any]],
        runs: int,
        closure: dict[str, Any] | None,
    ) -> None:
        first = len(self.out.records)
        not_hermetic, imported = hermetic.decision(
            self.text, str(self.path), src.name, self.workspace, closure
        )
        spec = {
            "name": src.name,
            "hermetic": not_hermetic is None,
            "imports": imported,
            "closure": closure,
            "runs": runs,
        }
        done = self._time(src, launches, spec)
        if done is not None:
            self._judge(entry, src, launches, done)
        self._mark(src, first, not_hermetic)

    def changed(self, entry: KernelIndex, src: KernelSource, launches: list[dict[str, Any]]) -> None:
        """Time ``launches`` of the changed source ``src`` against its accepted source, in
        interleaved pairs (launches whose accepted module text is not kept: timed alone, judged not);
        a kernel made by a factory, once per closure its launches were captured with."""
        for closure, group in _by_closure(launches):
            self._changed(entry, src, group, closure)

    def _changed(
        self,
        entry: KernelIndex,
        src: KernelSource,
        launches: list[dict[str, Any]],
        closure: dict[str, Any] | None,
    ) -> None:
        first = len(self.out.records)
        key = TimingStore.kernel_key(self.rel, src.name)
        not_hermetic, imported = hermetic.decision(
            self.text, str(self.path), src.name, self.workspace, closure
        )
        spec: dict[str, Any] = {
            "name": src.name,
            "hermetic": not_hermetic is None,
            "imports": imported,
            "closure": closure,
            "runs": 1,
        }
        by_text: dict[str | None, list[dict[str, Any]]] = {}
        for launch in launches:
            by_text.setdefault(self.timings.source_of(key, str(launch["id"]), entry.digest), []).append(
                launch
            )
        slower: list[tuple[Timed, dict[str, Any]]] = []
        faster: list[tuple[Timed, dict[str, Any]]] = []
        for accepted_text, group in by_text.items():
            if accepted_text is None:
                done = self._time(src, group, spec)
                if done is not None:
                    self._judge(entry, src, group, done)
                continue
            why_old, old_imports = hermetic.decision(
                accepted_text, str(self.path), src.name, self.workspace, closure
            )
            not_hermetic = not_hermetic or why_old
            paired = {
                **spec,
                "pairs": benchmark_stats.FIRST_PAIRS,
                "baseline": {"source": accepted_text, "hermetic": why_old is None, "imports": old_imports},
            }
            done = self._time(src, group, paired)
            if done is None:
                continue
            measured = {lid: got["pairs"] for lid, got in done.items() if got.get("pairs")}
            alone = [x for x in group if str(x["id"]) not in measured]  # the accepted text did not build
            if alone:
                self._judge(entry, src, alone, done)
            for result in done.values():
                self._noise_pairs(result)  # the spread of this moment, before anything is judged
            again = [
                launch
                for launch in group
                if (v := self._verdict(measured.get(str(launch["id"])), done.get(str(launch["id"])) or {}))
                and v.kind in ("slower", "faster")
            ]  # beyond the band after the first round: measured again before anything is said
            if again:
                more = self._time(
                    src,
                    again,
                    {**paired, "pairs": benchmark_stats.REPORT_PAIRS - benchmark_stats.FIRST_PAIRS},
                )
                for lid, again_got in (more or {}).items():
                    if again_got.get("pairs") and lid in measured:
                        measured[lid] = [*measured[lid], *again_got["pairs"]]
                        self._noise_pairs(again_got)
            for launch in group:
                lid = str(launch["id"])
                got = done.get(lid)
                if got is None or lid not in measured:
                    continue
                verdict = self._verdict(measured[lid], got)
                timed = self._save_changed(entry, src, lid, got, measured[lid], verdict)
                if timed is None or verdict is None or not verdict.confirmed:
                    continue
                (slower if verdict.kind == "slower" else faster).append((timed, launch))
        self._report(src, slower, len(launches), F.CAPTURED_SLOWER)
        self._report(src, faster, len(launches), F.CAPTURED_FASTER)
        self._mark(src, first, not_hermetic)

    def _mark(self, src: KernelSource, first: int, not_hermetic: str | None) -> None:
        if not_hermetic is not None and len(self.out.records) > first:  # timed in a worker that imported it
            self.out.records[first:] = hermetic.marked(self.out.records[first:])
            record = hermetic.record(self.display, src, not_hermetic, self.options.require_hermetic)
            if record not in self.out.records:  # once per kernel and reason (a factory's closures)
                self.out.records.append(record)

    def _where(self, got: dict[str, Any]) -> tuple[TimingStore, str] | None:
        """The timings of the host that measured ``got`` and the device it ran on."""
        tag = device_tag(str(got.get("device") or "cpu"), str(got.get("device_name") or ""))
        try:
            return self._store(str(got.get("host") or "")), tag
        except (ValueError, StateUnusable):
            return None

    def _noise_pairs(self, got: dict[str, Any]) -> None:
        """The same-code spread within a paired measurement: the load of that moment."""
        where = self._where(got)
        if where is None:
            return
        for log_ratio in benchmark_stats.same_code_log_ratios(got.get("pairs") or []):
            where[0].add_noise(where[1], log_ratio)
            self.out.noise_added += 1

    def _verdict(self, pairs: Any, got: dict[str, Any]) -> benchmark_stats.Verdict | None:
        where = self._where(got)
        if not pairs or where is None:
            return None
        try:
            return benchmark_stats.judge(pairs, where[0].noise(where[1]))
        except ValueError:
            return None

    def _save_changed(
        self,
        entry: KernelIndex,
        src: KernelSource,
        lid: str,
        got: dict[str, Any],
        pairs: list[list[list[float]]],
        verdict: benchmark_stats.Verdict | None,
    ) -> Timed | None:
        where = self._where(got)
        times = [float(t) for t in pairs[-1][1] if t > 0] if pairs else []
        olds = [float(t) for t in pairs[-1][0] if t > 0] if pairs else []
        if where is None or not times:
            return None
        key = TimingStore.kernel_key(self.rel, src.name)
        where[0].save(key, lid, src.digest, where[1], times, keep={entry.digest}, source=self.source())
        timed = Timed(
            src.name,
            lid,
            str(got.get("device") or "cpu"),
            float(np.median(times)),
            float(np.median(olds)) if olds else None,
            verdict,
            "changed",
        )
        self.out.timed.append(timed)
        return timed

    def source(self) -> str | None:
        """The saved module text, kept for later paired timings (None: the cache refused it)."""
        if self._source_sha is None:
            try:
                self._source_sha = self.timings.keep_source(self.text)
            except (OSError, StateUnusable):
                return None
        return self._source_sha

    def _time(
        self, src: KernelSource, launches: list[dict[str, Any]], spec: dict[str, Any]
    ) -> dict[str, dict[str, Any]] | None:
        """The worker's timings of ``launches`` (``spec``: the job's kernel entry less its
        launches), by launch id; None (and a WHD085 record) when the job failed."""
        folder = Path(tempfile.mkdtemp(prefix="wh-capbench-"))
        try:
            prepared: list[dict[str, Any]] = []
            for launch in launches:
                try:
                    prepared.append(_prepare(self.store, launch, folder))
                except (CaptureRefused, OSError, ValueError):
                    continue  # the replay reports a refused capture (WHD084)
            if not prepared:
                return None
            msg = protocol.message(
                "job",
                kind="replay",
                benchmark=True,
                path=str(self.path),
                display_path=self.display,
                workspace=str(self.workspace),
                options=self.options.to_dict(),
                folder=str(folder),
                source=self.text,
                kernels=[{**spec, "launches": prepared}],
            )
            outcome = self.call(msg)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        result = outcome.result or {}
        if outcome.kind != "done" or result.get("status") != "ok":
            why = result.get("error") if outcome.kind == "done" else outcome.kind
            self.out.records.append(
                F.make_record(
                    Stage.PERFORMANCE,
                    F.REPLAY_FAILED,
                    Severity.WARNING,
                    self.display,
                    src.line,
                    f"captured launches of `{src.name}` not timed: {why}",
                    col=src.col,
                    end_col=src.end_col,
                    kernel=src.name,
                )
            )
            return None
        done = result.get("launches") or {}
        return {str(k): v for k, v in done.items() if isinstance(v, dict)}

    def _judge(
        self,
        entry: KernelIndex,
        src: KernelSource,
        launches: list[dict[str, Any]],
        done: dict[str, dict[str, Any]],
    ) -> None:
        """Keep the runs of ``launches`` (a baseline, a rerun of a source timed before, a changed
        source with no accepted text to pair with) and the spread they measure; judges nothing."""
        key = TimingStore.kernel_key(self.rel, src.name)
        accepted = entry.digest
        for launch in launches:
            lid = str(launch["id"])
            got = done.get(lid)
            if got is None or not got.get("runs"):
                continue
            measured = [[float(t) for t in run if t > 0] for run in got["runs"]]
            measured = [run for run in measured if run]
            where = self._where(got)
            if not measured or where is None:
                continue
            timings, tag = where
            for earlier, later in itertools.pairwise(measured):  # a baseline's two runs
                self._noise(timings, tag, earlier, later)
            times = measured[-1]
            previous = timings.timing(key, lid, src.digest, tag)  # this very source, timed before
            if previous is not None and len(measured) == 1:
                self._noise(timings, tag, previous, times)
            role = "baseline" if previous is None and src.digest == accepted else "rerun"
            if src.digest != accepted:
                role = "changed"
            timings.save(key, lid, src.digest, tag, times, keep={accepted}, source=self.source())
            self.out.timed.append(
                Timed(
                    src.name, lid, str(got.get("device") or "cpu"), float(np.median(times)), None, None, role
                )
            )

    def _store(self, host: str) -> TimingStore:
        """The timings of the host that measured (this one's unless a Ray node's)."""
        if not host or host == self.timings.host:
            return self.timings
        if host not in self._hosts:
            self._hosts[host] = TimingStore(self.workspace, host)
        return self._hosts[host]

    def _noise(self, timings: TimingStore, device: str, earlier: list[float], later: list[float]) -> None:
        a, b = float(np.median(earlier)), float(np.median(later))
        if a > 0 and b > 0:
            timings.add_noise(device, math.log(b / a))
            self.out.noise_added += 1

    def _report(
        self, src: KernelSource, found: list[tuple[Timed, dict[str, Any]]], total: int, rule: str
    ) -> None:
        if not found:
            return
        slower = rule == F.CAPTURED_SLOWER
        timed, launch = (
            max(found, key=lambda f: f[0].verdict.low if f[0].verdict else 0.0)
            if slower
            else min(found, key=lambda f: f[0].verdict.high if f[0].verdict else math.inf)
        )
        assert timed.verdict is not None and timed.baseline_median_s is not None
        self.out.records.append(
            F.make_record(
                Stage.PERFORMANCE,
                rule,
                Severity.WARNING if slower else Severity.INFO,
                self.display,
                src.line,
                f"`{src.name}` is {'slower' if slower else 'faster'} than its accepted source on "
                f"{len(found)} of {total} captured launch(es): median {timed.median_s * 1e6:.1f} µs against "
                f"{timed.baseline_median_s * 1e6:.1f} µs, {timed.verdict.describe()}; "
                f"{_provenance(launch)} on {timed.device}",
                col=src.col,
                end_col=src.end_col,
                kernel=src.name,
                expected=timed.baseline_median_s,
                actual=timed.median_s,
                related=_related(launch),
                hint=(
                    "intended? `warp-harness accept "
                    f"{self.display}::{src.name} --trust` makes this source the baseline"
                    if slower
                    else None
                ),
            )
        )


def _complete(launch: dict[str, Any]) -> bool:
    return not launch.get("incomplete") and all(d.get("blob") for d in _flat_arrays(launch["args"]))


def benchmark_module(
    workspace: Path,
    path: Path,
    display: str,
    options: RuntimeOptions,
    call: Call,
    *,
    replayed: ReplayOutcome | None,
    every: bool,
) -> BenchmarkOutcome:
    """Time the captured launches of ``path``'s kernels (see the module's docstring for which).
    ``replayed``: the replay of this check (its clean launches of changed kernels are timed);
    ``every``: time every captured launch of unchanged kernels too (``ci``, ``bench``)."""
    workspace = workspace.resolve()
    store = CaptureStore(workspace)
    try:
        if not store.exists():
            return BenchmarkOutcome()
        rel = path.resolve().relative_to(workspace).as_posix()
        entries = [e for e in store.for_module(rel) if isinstance(e, KernelIndex)]
    except (ValueError, OSError, OutsideWorkspace):
        return BenchmarkOutcome()
    if not entries:
        return BenchmarkOutcome()  # a file with no captures: no parse, no private cache opened
    try:
        text = path.read_text(encoding="utf-8")
        sources = kernel_sources(text)
    except (OSError, UnicodeDecodeError, SyntaxError):
        return BenchmarkOutcome()
    try:
        bench = _Benchmark(workspace, path.resolve(), rel, display, options, call, text)
    except StateUnusable:
        return BenchmarkOutcome()  # no private cache: nothing to compare with, nothing timed
    clean = replayed.clean if replayed is not None else set()
    for entry in entries:
        src = sources.get(entry.name)
        if src is None:
            continue
        launches = [x for x in entry.launches if _complete(x)]
        if src.digest != entry.digest:
            todo = [x for x in launches if (src.name, x["id"]) in clean]
            if todo:
                bench.changed(entry, src, todo)
            continue
        key = TimingStore.kernel_key(rel, src.name)
        fresh = [x for x in launches if not bench.timings.has(key, str(x["id"]), src.digest)]
        for x in launches:  # timed before the texts were kept: name this one, the accepted source's
            if x not in fresh and bench.timings.source_of(key, str(x["id"]), src.digest) is None:
                sha = bench.source()
                if sha is not None:
                    bench.timings.name_source(key, str(x["id"]), src.digest, sha)
        if fresh:
            bench.kernel(entry, src, fresh, BASELINE_RUNS)
        rest = [x for x in launches if x not in fresh] if every else []
        if rest:
            bench.kernel(entry, src, rest, 1)
    return bench.out
