"""``warp-harness capture`` and ``warp-harness accept``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from warp_harness.capture.recorder import DEFAULT_ARG_BYTES, DEFAULT_MAX_PER_KERNEL
from warp_harness.capture.store import DEFAULT_BUDGET_BYTES, CaptureStore, KernelIndex, Refusal


def add_subcommands(subparsers: Any) -> None:
    c = subparsers.add_parser(
        "capture",
        help="run a command with a launch recorder; store its kernels' launches for replay (-- COMMAND...)",
    )
    c.add_argument(
        "--workspace", default=".", metavar="DIR", help="the workspace (default: the current folder)"
    )
    c.add_argument(
        "--max-per-kernel",
        type=int,
        default=DEFAULT_MAX_PER_KERNEL,
        metavar="N",
        help=f"distinct launches kept per kernel (default {DEFAULT_MAX_PER_KERNEL})",
    )
    c.add_argument(
        "--max-arg-mb",
        type=float,
        default=DEFAULT_ARG_BYTES / 2**20,
        metavar="MB",
        help="a larger array is recorded by shape and dtype only (its launch is not replayed)",
    )
    c.add_argument(
        "--budget-mb",
        type=float,
        default=DEFAULT_BUDGET_BYTES / 2**20,
        metavar="MB",
        help="the workspace's capture store, least recently used evicted first",
    )
    c.add_argument("--list", action="store_true", help="list what is captured, and what is refused")
    c.add_argument("--prune", action="store_true", help="hold the store to its budget, drop unused arrays")
    c.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the command to run")
    c.set_defaults(func=cmd_capture)

    a = subparsers.add_parser(
        "accept", help="make the replayed outputs of captured launches their baseline (FILE[::KERNEL])"
    )
    a.add_argument(
        "targets", nargs="*", metavar="FILE[::KERNEL]", help="what to accept (default: every capture)"
    )
    a.add_argument("--workspace", default=".", metavar="DIR", help="the workspace (default: .)")
    a.add_argument("--trust", action="store_true", help="the workspace's code may run (it is replayed)")
    a.set_defaults(func=cmd_accept)


def _err(text: str) -> None:
    print(f"warp-harness: {text}", file=sys.stderr)


def cmd_capture(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        _err(f"{workspace} is not a folder")
        return 2
    store = CaptureStore(workspace)
    budget = int(args.budget_mb * 2**20)
    if args.list:
        return _list(store)
    if args.prune:
        evicted, freed = store.prune(budget)
        refused = [e for e in store.indexes() if isinstance(e, Refusal)]
        for r in refused:
            if r.file.endswith(".json"):  # an index of the kernels folder, never a folder
                try:
                    (workspace / r.file).unlink(missing_ok=True)
                except OSError as exc:
                    _err(f"{r.file}: {exc.strerror or exc}")
        print(
            f"pruned: {evicted} launch(es) evicted, {freed} bytes freed, "
            f"{len(refused)} refused index(es) deleted"
        )
        return 0
    given = [str(a) for a in args.command]
    if given and given[0] == "--":
        given = given[1:]
    commands = [given] if given else _configured(workspace)
    if not commands:
        _err(
            "no command: `warp-harness capture -- COMMAND...`, or `capture = [...]` under "
            "[tool.warp-harness.runtime]"
        )
        return 2
    from warp_harness.capture.run import run_capture
    from warp_harness.capture.store import OutsideWorkspace
    from warp_harness.user_state import StateUnusable

    worst = 0
    for one in commands:
        try:
            run = run_capture(
                workspace,
                one,
                max_per_kernel=args.max_per_kernel,
                arg_bytes=int(args.max_arg_mb * 2**20),
                budget=budget,
            )
        except (StateUnusable, OutsideWorkspace, OSError) as exc:
            _err(f"the launches of `{shlex.join(one)}` could not be stored: {exc}")
            return 2
        report = run.report
        print(
            f"captured {report.launches} launch(es) of {len(report.kernels)} kernel(s) from "
            f"`{shlex.join(one)}` (exit status {run.returncode}; {report.bytes_added} bytes stored"
            + (f"; {run.evicted} older launch(es) evicted for the budget" if run.evicted else "")
            + ")"
        )
        for line in report.skipped:
            print(f"  not recorded: {line}")
        worst = worst or run.returncode
    return worst


def _configured(workspace: Path) -> list[list[str]]:
    """``capture = ["pytest tests", ...]`` under [tool.warp-harness.runtime] (strings or argv lists)."""
    from warp_harness.config import ConfigError, find_pyproject, pyproject_data

    try:
        path = find_pyproject(workspace)
        data = pyproject_data(path) if path is not None else None
    except ConfigError as exc:
        _err(str(exc))
        return []
    if not data:
        return []
    entries = data.get("tool", {}).get("warp-harness", {}).get("runtime", {}).get("capture", [])
    out: list[list[str]] = []
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, str):
            out.append(shlex.split(e))
        elif isinstance(e, list) and all(isinstance(x, str) for x in e):
            out.append(list(e))
    return out


def _list(store: CaptureStore) -> int:
    total = 0
    for entry in store.indexes():
        if isinstance(entry, Refusal):
            print(f"REFUSED {entry.file}: {entry.reason}")
            continue
        assert isinstance(entry, KernelIndex)
        sizes = store.referenced([entry])
        total += sum(sizes.values())
        print(f"{entry.path}::{entry.name}  {len(entry.launches)} launch(es), {sum(sizes.values())} bytes")
        for launch in entry.launches:
            p = launch.get("provenance") or {}
            where = f"{p.get('file')}:{p.get('line')}" + (f" [{p['test']}]" if p.get("test") else "")
            flag = " INCOMPLETE" if launch.get("incomplete") else ""
            print(
                f"  {launch['id'][:8]} {launch['device']} dim={launch['dim']} from {where}"
                f" baseline={launch.get('baseline_from')}{flag}"
            )
    print(f"total: {total} bytes")
    return 0


def cmd_accept(args: argparse.Namespace) -> int:
    from warp_harness.config import load_settings
    from warp_harness.daemon.captured.hook import supervisor_call
    from warp_harness.daemon.captured.replay import accept_module
    from warp_harness.daemon.options import load_runtime_options
    from warp_harness.daemon.supervisor import Supervisor

    workspace = Path(args.workspace).resolve()
    settings = load_settings(workspace, None)
    if not (args.trust or settings.trust):
        _err("accept replays the workspace's kernels: pass --trust (or set trust = true)")
        return 2
    store = CaptureStore(workspace)
    wanted: dict[str, set[str] | None] = {}
    for target in args.targets or []:
        file, _, kernel = target.partition("::")
        rel = Path(file).resolve().relative_to(workspace).as_posix()
        current = wanted.setdefault(rel, set() if kernel else None)
        if kernel and current is not None:
            current.add(kernel)
    if not args.targets:
        for entry in store.indexes():
            if isinstance(entry, KernelIndex):
                wanted.setdefault(entry.path, None)
    options = load_runtime_options(workspace, None)
    total = 0
    with Supervisor(workspace, options, warmup=False) as sup:
        for rel, kernels in sorted(wanted.items()):
            accepted, outcome = accept_module(
                workspace, workspace / rel, rel, options, supervisor_call(sup), kernels=kernels or None
            )
            total += accepted
            for r in outcome.records:
                if r.rule in ("WHD080", "WHD085", "WHD084"):
                    print(f"{r.location.path}:{r.location.line}: {r.rule} {r.message}")
            print(f"{rel}: {accepted} launch(es) accepted")
    return 0 if total else 1
