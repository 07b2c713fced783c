"""The engines of one command's jobs (``ci``, ``bench``, ``tune``) and ``check_many``, which runs
``Engine.check`` on several files at once, one engine per thread, as many as the executor has slots,
giving the reports back in the files' order (see daemon/executor.py)."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.config import Settings
from warp_harness.daemon.engine import Engine
from warp_harness.daemon.executor import Executor, ExecutorChoice, make_executor, slots
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.results import CheckReport


@dataclass
class Engines:
    """The engines of one command's jobs (``ci``, ``bench``, ``tune``): locally each with a worker of
    its own; remotely all sharing one executor, each job on a device of its own (num_gpus=1).
    Only ever made for a trusted workspace."""

    workspace: Path
    settings: Settings
    options: RuntimeOptions
    choice: ExecutorChoice
    overrides: Mapping[str, Any] | None = None
    warmup: bool = False
    on_progress: Callable[[dict[str, Any]], None] | None = None
    shared: Executor | None = field(init=False)

    def __post_init__(self) -> None:
        self.shared = make_executor(self.choice, self.workspace, self.options) if self.choice.remote else None

    def make(self) -> Engine:
        return Engine(
            self.workspace,
            self.settings,
            self.options,
            True,
            self.overrides,
            warmup=self.warmup,
            record_history=False,
            on_progress=self.on_progress,
            supervisor=self.shared,
        )

    @property
    def parallel(self) -> int:
        """How many of them ``check_many`` runs at once."""
        return slots(self.shared) if self.shared is not None else 1

    def close(self) -> None:
        if self.shared is not None:
            self.shared.close()


def check_many(
    make_engine: Callable[[], Engine],
    targets: Sequence[Path],
    parallel: int,
    *,
    steps: tuple[Step, ...] = DEFAULT_STEPS,
    on_start: Callable[[Path], None] | None = None,
) -> list[CheckReport]:
    """``Engine.check(target, force=True)`` for every target, ``parallel`` at once (an engine per
    thread), the reports in the targets' order. One engine, in this thread, when ``parallel`` is 1."""
    if parallel <= 1 or len(targets) <= 1:
        engine = make_engine()
        try:
            out = []
            for target in targets:
                if on_start is not None:
                    on_start(target)
                out.append(engine.check(target, force=True, steps=steps))
            return out
        finally:
            engine.close()
    local = threading.local()
    engines: list[Engine] = []
    lock = threading.Lock()

    def one(target: Path) -> CheckReport:
        engine: Engine | None = getattr(local, "engine", None)
        if engine is None:
            engine = make_engine()
            local.engine = engine
            with lock:
                engines.append(engine)
        if on_start is not None:
            with lock:
                on_start(target)
        return engine.check(target, force=True, steps=steps)

    try:
        with concurrent.futures.ThreadPoolExecutor(
            max_workers=min(parallel, len(targets)), thread_name_prefix="warp-harness-job"
        ) as pool:
            return list(pool.map(one, targets))
    finally:
        for engine in engines:
            engine.close()
