"""Captured launches on real code: warp-lang's own examples, on the CPU.

For each example (copied into a scratch workspace: the recorder records kernels of the workspace
only) it measures the command's wall time without and with `warp-harness capture` (both after a
warm-up run, so Warp's kernel cache is warm in both), the launches, kernels and bytes captured, the
replay time of each captured kernel (p50/p95; no edit: every record but WHD086 is a false alarm),
and a small mutation score: mutants of each captured kernel (an operator swapped, an index off by
one, a guard's comparison flipped), each replayed, flagged or not, by oracle.

    python benchmarks/bench_capture.py                        # wave, dem: 5 frames, 2 mutants a kernel
    python benchmarks/bench_capture.py --examples wave --frames 3 --mutants 1 --max-kernels 4

Prints a markdown table (the figures of docs/capture.md come from it).
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import warp

from warp_harness.capture.identity import kernel_sources
from warp_harness.capture.run import run_capture
from warp_harness.capture.store import CaptureStore, KernelIndex
from warp_harness.daemon.captured.hook import supervisor_call
from warp_harness.daemon.captured.replay import replay_module
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.supervisor import Supervisor

EXAMPLES = Path(warp.__file__).parent / "examples" / "core"


def _command(example: str, frames: int) -> list[str]:
    return [
        sys.executable,
        f"example_{example}.py",
        "--stage-path",
        "None",
        "--num-frames",
        str(frames),
        "--device",
        "cpu",
    ]


def _timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


class _Mutator(ast.NodeTransformer):
    """One mutation at the ``target``-th candidate site of a kernel."""

    SWAPS: ClassVar[dict[type[ast.operator], type[ast.operator]]] = {
        ast.Add: ast.Sub,
        ast.Sub: ast.Add,
        ast.Mult: ast.Add,
    }
    CMP: ClassVar[dict[type[ast.cmpop], type[ast.cmpop]]] = {
        ast.Lt: ast.LtE,
        ast.LtE: ast.Lt,
        ast.Gt: ast.GtE,
        ast.GtE: ast.Gt,
    }

    def __init__(self, target: int) -> None:
        self.target = target
        self.seen = 0
        self.done = ""

    def _hit(self) -> bool:
        self.seen += 1
        return self.seen - 1 == self.target

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        swap = self.SWAPS.get(type(node.op))
        if swap is not None and not self.done and self._hit():
            self.done = f"operator {type(node.op).__name__} -> {swap.__name__}"
            node.op = swap()
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if (
            isinstance(node.slice, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and not self.done
            and self._hit()
        ):
            self.done = f"index {node.slice.id} -> {node.slice.id} + 1"
            node.slice = ast.BinOp(left=node.slice, op=ast.Add(), right=ast.Constant(1))
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        flip = self.CMP.get(type(node.ops[0]))
        if flip is not None and not self.done and self._hit():
            self.done = f"comparison {type(node.ops[0]).__name__} -> {flip.__name__}"
            node.ops = [flip()]
        return node


def _mutant(text: str, kernel: str, target: int) -> tuple[str, str] | None:
    tree = ast.parse(text)
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == kernel:
            body = ast.Module(body=node.body, type_ignores=[])
            mutator = _Mutator(target)
            new_body = mutator.visit(body)
            if not mutator.done:
                return None
            indent = " " * node.body[0].col_offset
            new = [indent + line for line in ast.unparse(new_body).splitlines()]
            start, end = node.body[0].lineno, node.end_lineno or node.lineno
            return "\n".join(lines[: start - 1] + new + lines[end:]) + "\n", mutator.done
    return None


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", nargs="+", default=["wave", "dem"])
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--mutants", type=int, default=2, help="mutants per kernel")
    ap.add_argument("--max-kernels", type=int, default=6, help="kernels mutated per example")
    args = ap.parse_args()
    options = RuntimeOptions(launch_timeout_s=30.0, timeout_s=300.0)
    rows: list[dict[str, Any]] = []
    for name in args.examples:
        ws = Path(tempfile.mkdtemp(prefix=f"wh-bench-capture-{name}-"))
        try:
            src = EXAMPLES / f"example_{name}.py"
            shutil.copy(src, ws / src.name)
            cmd = _command(name, args.frames)
            try:
                _timed(cmd, ws)  # warm Warp's kernel cache
            except subprocess.CalledProcessError as exc:
                print(f"{name}: does not run here ({(exc.stderr or b'').decode()[-200:].strip()}); skipped")
                continue
            plain = min(_timed(cmd, ws) for _ in range(2))
            t0 = time.perf_counter()
            run = run_capture(ws, cmd)
            captured_s = time.perf_counter() - t0
            store = CaptureStore(ws)
            indexes = [e for e in store.indexes() if isinstance(e, KernelIndex)]
            size = sum(store.referenced(indexes).values())
            path = ws / src.name
            text = path.read_text(encoding="utf-8")
            replay_s: list[float] = []
            false_alarms = 0
            mutants = flagged = 0
            by_oracle: dict[str, int] = {}
            with Supervisor(ws, options, warmup=False) as sup:
                call = supervisor_call(sup)
                for index in indexes:
                    t0 = time.perf_counter()
                    out = replay_module(
                        ws, path, src.name, options, call, only_changed=False, kernels={index.name}
                    )
                    replay_s.append(time.perf_counter() - t0)
                    false_alarms += sum(1 for r in out.records if r.severity.value != "info")
                for index in indexes[: args.max_kernels]:
                    for target in range(args.mutants):
                        made = _mutant(text, index.name, target)
                        if made is None or kernel_sources(made[0]).get(index.name) is None:
                            continue
                        path.write_text(made[0], encoding="utf-8")
                        try:
                            out = replay_module(
                                ws, path, src.name, options, call, only_changed=True, kernels={index.name}
                            )
                        finally:
                            path.write_text(text, encoding="utf-8")
                        mutants += 1
                        rules = sorted({r.rule for r in out.records if r.severity.value != "info"})
                        flagged += bool(rules)
                        for rule in rules:
                            by_oracle[rule] = by_oracle.get(rule, 0) + 1
            rows.append(
                {
                    "example": name,
                    "kernels": len(indexes),
                    "launches": sum(len(i.launches) for i in indexes),
                    "bytes": size,
                    "plain_s": plain,
                    "capture_s": captured_s,
                    "replay_p50": _pct(replay_s, 0.5),
                    "replay_p95": _pct(replay_s, 0.95),
                    "false_alarms": false_alarms,
                    "mutants": mutants,
                    "flagged": flagged,
                    "by_oracle": by_oracle,
                    "not_recorded": len(run.report.skipped),
                }
            )
        finally:
            shutil.rmtree(ws, ignore_errors=True)
    print(
        "| example | kernels | launches | bytes | wall s | with capture s | overhead "
        "| replay/kernel p50 s | p95 s | false alarms | mutants flagged | by oracle | not recorded |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        oracles = ", ".join(f"{k} {v}" for k, v in sorted(r["by_oracle"].items())) or "-"
        print(
            f"| {r['example']} | {r['kernels']} | {r['launches']} | {r['bytes']} | {r['plain_s']:.2f} | "
            f"{r['capture_s']:.2f} | {r['capture_s'] / r['plain_s']:.2f}x | {r['replay_p50']:.2f} | "
            f"{r['replay_p95']:.2f} | {r['false_alarms']} | {r['flagged']}/{r['mutants']} | {oracles} | "
            f"{r['not_recorded']} |"
        )
    print(f"\nwarp {warp.__version__}, {args.frames} frames, CPU; wall: best of 2 warm runs, capture: 1 run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
