"""``warp-harness mcp``: the harness as Model Context Protocol tools, over stdio.

Built on the official MCP Python SDK (the ``mcp`` extra; README: Install). The tools' logic is in
`warp_harness.agents.tools`; here they get their schemas, progress notifications and cancellation:
a dynamic tool runs on a thread, reports each step (import, compile, validate, bench, with kernel and
device) as MCP progress, and a cancelled call kills the worker mid-job.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from warp_harness.agents import capture_tools, tools
from warp_harness.agents.schemas import (
    CheckOutput,
    FixOutput,
    ReplayOutput,
    ResultsOutput,
    RuleDoc,
    RunOutput,
    TuneOutput,
)

_T = TypeVar("_T")

INSTRUCTIONS = """\
warp-harness checks NVIDIA Warp kernels. Every finding is a record: stage, rule, severity, location,
message, expected, actual, hint and, where known, a fix (text edits).
The loop: write a kernel -> `check` (static, instant, never runs code) -> `fix` (applies the safe
fixes) -> `validate` (compiles and runs the kernels against their contracts' references; needs the
server started with --trust) -> `bench` until the contract's targets hold. `explain_rule` documents
any WH/WHD id; `results` gives a running daemon's latest verdicts with how many saves in a row each
finding fired; `tune` tries a contract's tunables.
"""


def build_server(workspace: tools.Workspace) -> MCPServer:
    from warp_harness import __version__

    server = MCPServer(name="warp-harness", instructions=INSTRUCTIONS, version=__version__)

    def refusing(call: Callable[[], _T]) -> _T:
        try:
            return call()
        except tools.ToolRefused as exc:
            raise ToolError(str(exc)) from None

    async def on_thread(ctx: Context, work: Callable[[tools.Run, tools.Progress], _T]) -> _T:
        """Run a dynamic tool's blocking work on a thread; its steps become progress notifications,
        and cancelling the call kills the worker it started."""
        run = tools.Run()
        count = 0

        def progress(msg: dict[str, Any]) -> None:
            nonlocal count
            count += 1
            what = msg.get("label") or " ".join(
                str(msg[k]) for k in ("kind", "path", "stage", "kernel", "device") if msg.get(k)
            )
            try:
                anyio.from_thread.run(ctx.report_progress, count, None, str(what))
            except Exception:  # the call ended (cancelled): progress has nowhere to go
                pass

        try:
            return await anyio.to_thread.run_sync(lambda: work(run, progress), abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            run.abort()
            raise
        except tools.ToolRefused as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def check(path: str | None = None, source: str | None = None, name: str = "snippet.py") -> CheckOutput:
        """Static check (never runs code) of a file or folder `path` (relative to the workspace), or of
        a source text `source` shown as `name`. Returns every record with its hint and fix."""
        return CheckOutput.model_validate(refusing(lambda: tools.check(workspace, path, source, name)))

    @server.tool()
    def fix(
        path: str | None = None,
        source: str | None = None,
        name: str = "snippet.py",
        unsafe: bool = False,
        write: bool = False,
    ) -> FixOutput:
        """Apply the records' fixes (safe ones; `unsafe` too when asked) to a file `path` or a source
        text: the fixed text, a unified diff, and the records that remain. `write` saves the file."""
        return FixOutput.model_validate(
            refusing(lambda: tools.fix(workspace, path, source, name, unsafe=unsafe, write=write))
        )

    @server.tool()
    def explain_rule(rule: str) -> RuleDoc:
        """The documentation of a rule id (WH001..., WHD001...): why it matters, a bad and a good
        example, the fix."""
        return RuleDoc.model_validate(refusing(lambda: tools.explain_rule(rule)))

    @server.tool()
    async def validate(
        ctx: Context, path: str, kernel: str | None = None, seed: int | None = None
    ) -> RunOutput:
        """Compile the file's kernels and validate them against their contracts (reference, sizes,
        edge cases, tolerance). A failure says the smallest failing size, the seed and the first bad
        index, and is stored as a repro. Runs workspace code: needs the server started with --trust."""
        result = await on_thread(
            ctx,
            lambda run, progress: tools.validate(
                workspace, path, kernel, seed, run=run, on_progress=progress
            ),
        )
        return RunOutput.model_validate(result)

    @server.tool()
    async def bench(
        ctx: Context, path: str, kernel: str | None = None, repeats: int | None = None
    ) -> RunOutput:
        """Validate, then benchmark the file's contracted kernels: median time, spread, bandwidth, %
        of the hardware profile's peak, and the contract's targets met or missed. Needs --trust."""
        result = await on_thread(
            ctx,
            lambda run, progress: tools.bench(
                workspace, path, kernel, repeats, run=run, on_progress=progress
            ),
        )
        return RunOutput.model_validate(result)

    @server.tool()
    async def replay(ctx: Context) -> ReplayOutput:
        """Re-run every stored failing case (.warp-harness/repros), a contract's edge case or a
        captured launch's replay: pass once the bug is fixed. Needs --trust."""
        result = await on_thread(
            ctx, lambda run, progress: tools.replay(workspace, run=run, on_progress=progress)
        )
        if result.get("status") == "untrusted":
            result = {**result, "cases": [], "failing": 0}
        return ReplayOutput.model_validate(result)

    @server.tool()
    async def tune(
        ctx: Context,
        path: str,
        kernel: str | None = None,
        target: str | None = None,
        repeats: int | None = None,
    ) -> TuneOutput:
        """Try a contract's tunables (module constants): drop what the target profile forbids, time
        the rest; the Pareto front and the best configuration as text edits. Needs --trust."""
        result = await on_thread(
            ctx,
            lambda run, progress: tools.tune(workspace, path, kernel, target, repeats, on_progress=progress),
        )
        return TuneOutput.model_validate(result)

    @server.tool()
    async def capture(ctx: Context, command: list[str], max_per_kernel: int = 4) -> dict[str, Any]:
        """Run a Python command (['pytest', 'tests/test_k.py'] or ['python', 'script.py']) with a launch
        recorder: each kernel's real launches are stored, and from then on `validate` (and the daemon)
        replay them after an edit: out-of-bounds accesses, unwritten outputs, and outputs that moved
        from the accepted ones (WHD080-WHD086). Needs --trust."""
        return await on_thread(
            ctx,
            lambda run, progress: refusing(lambda: capture_tools.capture(workspace, command, max_per_kernel)),
        )

    @server.tool()
    async def accept(ctx: Context, path: str, kernel: str | None = None) -> dict[str, Any]:
        """Make the replayed outputs of a file's (or one kernel's) captured launches the new baseline,
        when a behaviour change (WHD082) is intended. Needs --trust."""
        return await on_thread(
            ctx, lambda run, progress: refusing(lambda: capture_tools.accept(workspace, path, kernel))
        )

    @server.tool()
    def results(path: str | None = None) -> ResultsOutput:
        """The running daemon's latest result per file: kernel verdicts and records, each with how many
        saves in a row it fired."""
        return ResultsOutput.model_validate(refusing(lambda: tools.results(workspace, path)))

    @server.resource("warp-harness://rules", mime_type="text/markdown")
    def rules_doc() -> str:
        """Every rule (static WH and dynamic WHD), documented."""
        from warp_harness.daemon.findings import dynamic_markdown
        from warp_harness.rules.info import rules_markdown

        return rules_markdown() + "\n" + dynamic_markdown()

    @server.resource("warp-harness://rules/{rule}", mime_type="text/markdown")
    def rule_doc(rule: str) -> str:
        """One rule's documentation."""
        return str(refusing(lambda: tools.explain_rule(rule))["doc"])

    @server.resource("warp-harness://profiles", mime_type="application/json")
    def profiles() -> list[str]:
        """The bundled hardware profiles (cpu, sm_80, ...)."""
        from warp_harness.hardware import bundled_profiles

        return sorted(bundled_profiles())

    @server.resource("warp-harness://profiles/{name}", mime_type="application/toml")
    def profile(name: str) -> str:
        """A bundled hardware profile as TOML (warp size, shared memory, peak bandwidth, ...)."""
        from importlib import resources

        from warp_harness.hardware import bundled_profiles

        if name not in bundled_profiles():
            raise ToolError(f"no bundled profile {name!r}")
        return resources.files("warp_harness.hardware").joinpath(f"{name}.toml").read_text(encoding="utf-8")

    return server


def run(root: Path, *, trusted: bool, target: str | None = None) -> None:
    """Serve over stdio until the client closes the stream."""
    import threading

    from warp_harness.daemon.engine import warm_static_tier

    overrides = {"target": target} if target else {}
    server = build_server(tools.Workspace(root, trusted=trusted, overrides=overrides))
    # the static tier's tables load while the client completes the handshake
    threading.Thread(target=warm_static_tier, name="warp-harness-warm", daemon=True).start()
    server.run("stdio")
