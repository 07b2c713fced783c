"""``warp-harness tune``: try a contract's tunables, keep what the profile allows, report the front.

A skeleton of issue 6's tuning. A contract declares ``tunables`` (module-level constants ->
values). For every combination: the module's source with those constants rewritten is
written next to the module (``_wh_tune_<stem>_<n>.py``, removed afterwards); the static tier
checks it against the target profile (shared memory, block_dim, tile shapes ...) and a
candidate with an error there is dropped with its reason; the rest go through the daemon's
worker (validation, then the benchmark). The report: every candidate, and the Pareto front
of (median time, the product of the tunables' values, a stand-in for the resources a
candidate asks for; a real shared-memory/register figure is still to come).

The tunables are read statically (``ast.literal_eval`` of the ``tunables=`` argument of a
``Contract(...)`` call), so nothing runs before the trust check.
"""

from __future__ import annotations

import ast
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.daemon.benchcmd import NotTrusted


@dataclass
class Candidate:
    config: dict[str, Any]
    status: str = "pending"  # rejected | timed | validate:<verdict> | error
    reasons: list[str] = field(default_factory=list)
    median_s: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def cost(self) -> float:
        return float(math.prod(v for v in self.config.values() if isinstance(v, int | float)) or 0)


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
    for name, value in config.items():
        pattern = re.compile(
            rf"^(?P<lhs>{re.escape(name)}\s*(?::[^=\n]+)?=\s*)(?P<rhs>[^#\n]*?)(?P<tail>\s*(?:#.*)?)$",
            re.MULTILINE,
        )
        m = pattern.search(source)
        if m is None:
            raise KeyError(f"tunable `{name}` is not assigned at module level")
        rhs = m.group("rhs")
        call = re.match(r"^(?P<f>[\w.]*constant\()(?P<arg>.*)\)$", rhs.strip())
        new_rhs = f"{call.group('f')}{value!r})" if call else repr(value)
        source = source[: m.start("rhs")] + new_rhs + source[m.end("rhs") :]
    return source


def pareto(rows: Sequence[Candidate]) -> list[Candidate]:
    """Timed candidates no other timed one beats on both time and cost."""
    timed = [r for r in rows if r.status == "timed" and r.median_s is not None]
    front = []
    for r in timed:
        assert r.median_s is not None
        dominated = any(
            o is not r
            and o.median_s is not None
            and o.median_s <= r.median_s
            and o.cost <= r.cost
            and (o.median_s < r.median_s or o.cost < r.cost)
            for o in timed
        )
        if not dominated:
            front.append(r)
    return sorted(front, key=lambda r: r.median_s or 0.0)


def run_tune(
    path: Path,
    *,
    kernel: str | None = None,
    trust: bool | None = None,
    runtime_overrides: dict[str, Any] | None = None,
    target: str | None = None,
) -> tuple[str, list[Candidate]]:
    from warp_harness.config import load_settings
    from warp_harness.daemon.benchcmd import rows_of
    from warp_harness.daemon.options import load_runtime_options
    from warp_harness.daemon.server import Engine
    from warp_harness.engine import check_file
    from warp_harness.record import Severity

    path = path.resolve()
    source = path.read_text(encoding="utf-8")
    found = read_tunables(source)
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
    rows = [Candidate(c) for c in candidates(found[kernel])]
    engine: Any = None
    try:
        for n, cand in enumerate(rows):
            tmp = path.with_name(f"_wh_tune_{path.stem}_{n}.py")
            try:
                tmp.write_text(rewrite(source, cand.config), encoding="utf-8")
                static = check_file(tmp, overrides)
                errors = [r for r in static.records if r.severity is Severity.ERROR]
                if errors:
                    cand.status = "rejected"
                    cand.reasons = [f"{r.rule}: {r.message}" for r in errors]
                    continue
                if engine is None:
                    engine = Engine(
                        root, settings, options, True, overrides, warmup=False, record_history=False
                    )
                payload = engine.check(tmp, force=True)
                mine = [r for r in rows_of(payload) if r.kernel == kernel]
                if not mine:
                    cand.status = "error"
                    cand.reasons = [
                        str(r.get("message"))
                        for r in payload.get("records") or []
                        if r.get("severity") == "error" and r.get("tier") == "dynamic"
                    ][:2]
                    continue
                row = mine[0]
                cand.status = row.status
                cand.median_s = row.median_s
                cand.metrics = row.metrics
            except KeyError as exc:
                cand.status = "error"
                cand.reasons = [str(exc.args[0])]
            finally:
                tmp.unlink(missing_ok=True)
    finally:
        if engine is not None:
            engine.close()
    return kernel, rows


def report(kernel: str, rows: Sequence[Candidate]) -> str:
    front = {id(r) for r in pareto(rows)}
    lines = [f"tuning `{kernel}`: {len(rows)} candidate(s)"]
    for r in sorted(rows, key=lambda r: (r.median_s is None, r.median_s or 0.0)):
        cfg = ", ".join(f"{k}={v}" for k, v in r.config.items())
        if r.median_s is not None:
            what = f"{r.median_s * 1e6:10.1f} µs"
        else:
            what = f"{r.status}: {'; '.join(r.reasons)[:150]}" if r.reasons else r.status
        lines.append(f"{'*' if id(r) in front else ' '} {cfg:40} {what}")
    lines.append("* = Pareto front (median time against the product of the tunables)")
    return "\n".join(lines) + "\n"
