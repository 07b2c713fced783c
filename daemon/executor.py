"""Where the dynamic tier's jobs run: ``local`` (today's sandboxed worker subprocess, one
``Supervisor`` per engine) or ``ray`` (the same worker code on a Ray cluster's workers,
daemon/ray_executor.py).

An executor has the ``Supervisor``'s job methods (``check``, ``run_case``) so ``Engine`` and
``replay`` use either unchanged: the driver keeps the static tier, the result cache, the failure
library and the reports; only the sandboxed run of one module travels. ``check_many`` runs
``Engine.check`` on several files at once, one engine per thread, as many as the executor has
slots (1 locally, the cluster's free GPUs or CPUs with Ray), and gives the reports back in the
files' order, so a run's output does not depend on which job finished first (``check_many`` and
``Engines``, the engines of one command, are in daemon/engines.py: above the engine, which runs its
jobs through an executor).

Which executor: ``--executor ray --address ADDR`` (trusted: the user's command line), else
``executor``/``address`` under ``[tool.warp-harness.runtime]``. A workspace's pyproject is the
workspace's own (untrusted) text, and connecting to a cluster hands it Ray's auth token and the
workspace's code: a ``ray`` executor or an ``address`` named only there is used only when the
command line said ``--trust`` (a ``trust = true`` in the same pyproject does not vouch for it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from warp_harness.config import ConfigError, find_pyproject, pyproject_data, show_value
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.results import WorkerResult
from warp_harness.record import Record

KINDS = ("local", "ray")


class Executor(Protocol):
    """What the engine and ``replay`` need of whatever runs a job (``Supervisor`` is one)."""

    def check(
        self,
        path: Path,
        *,
        display_path: str | None = None,
        steps: tuple[Step, ...] = DEFAULT_STEPS,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        options: RuntimeOptions | None = None,
        source_sha256: str | None = None,
    ) -> WorkerResult: ...

    def run_case(
        self,
        case: dict[str, Any],
        *,
        mode: str | None = None,
        probe: bool = False,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[str, list[Record]]: ...

    def start(self) -> Any: ...

    def abort(self) -> None: ...

    def close(self) -> None: ...

    def status(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ExecutorChoice:
    kind: str = "local"
    address: str | None = None
    # why this choice may not be used (a cluster only the workspace named): raised as a
    # ConfigError when a job would go there, so an untrusted workspace's static run is unaffected
    refused: str | None = None

    @property
    def remote(self) -> bool:
        return self.kind == "ray"


def executor_choice(
    start: Path,
    *,
    kind: str | None = None,
    address: str | None = None,
    trusted_by_flag: bool = False,
) -> ExecutorChoice:
    """The executor the command line asked for, else the workspace's ``[tool.warp-harness.runtime]``
    ``executor``/``address`` (honoured only with an explicit ``--trust``: see the module doc; else
    the choice is ``refused`` and ``make_executor`` raises, once a job would run)."""
    table = _runtime_table(start)
    where = "[tool.warp-harness.runtime]"
    if kind is None and address is None and ("executor" in table or "address" in table):
        named_kind = table.get("executor", "local")
        named_address = table.get("address")
        if named_kind not in KINDS:
            raise ConfigError(f"{where}: `executor` must be local or ray, got {show_value(named_kind)}")
        if named_address is not None and (not isinstance(named_address, str) or not named_address.strip()):
            raise ConfigError(
                f"{where}: `address` must be a Ray address (host:port), got {show_value(named_address)}"
            )
        if named_kind == "ray" and not trusted_by_flag:
            refused = (
                f"the workspace's {where} sends its jobs to a Ray cluster "
                f"({named_address or 'the address Ray finds'}); a workspace cannot choose where its code "
                "and your Ray token go: pass --executor ray --address ADDR, or --trust to accept it"
            )
            return ExecutorChoice("ray", named_address, refused)
        kind, address = named_kind, named_address
    kind = kind or ("ray" if address else "local")
    if kind not in KINDS:
        raise ConfigError(f"--executor must be local or ray, got {show_value(kind)}")
    if kind == "local" and address:
        raise ConfigError("--address names a Ray cluster: use it with --executor ray")
    return ExecutorChoice(kind, address.strip() if address else None)


def _runtime_table(start: Path) -> Mapping[str, Any]:
    pyproject = find_pyproject(start)
    if pyproject is None:
        return {}
    harness = (pyproject_data(pyproject) or {}).get("tool", {}).get("warp-harness", {})
    table = harness.get("runtime", {}) if isinstance(harness, Mapping) else {}
    return table if isinstance(table, Mapping) else {}


def make_executor(
    choice: ExecutorChoice, workspace: Path, options: RuntimeOptions, *, warmup: bool = False
) -> Executor:
    """A fresh executor for ``workspace`` (only ever called for a trusted workspace)."""
    if choice.refused:
        raise ConfigError(choice.refused)
    if choice.remote:
        from warp_harness.daemon.ray_executor import RayExecutor

        return RayExecutor(workspace, options, address=choice.address)
    from warp_harness.daemon.supervisor import Supervisor

    return Supervisor(workspace, options, warmup=warmup)


def slots(executor: Executor, steps: tuple[Step, ...] = DEFAULT_STEPS) -> int:
    """How many jobs the executor runs at once (1 for a local worker)."""
    count = getattr(executor, "slots", None)
    return max(1, int(count(steps))) if callable(count) else 1
