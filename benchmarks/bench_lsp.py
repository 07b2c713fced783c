"""Language-server latency: didChange -> the matching publishDiagnostics, over stdio.

Drives the real `warp-harness serve` and, in the same run and with the same edits,
python-lsp-server with only its pyflakes plugin (a peer a Python user would pick). Files:
(a) the generated 2,000-line module with 40 kernels, (b) Warp's examples/tile/example_tile_matmul.py.
Prints p50/p95 per server and file, their ratio, the time from process start to the first
diagnostics, and peak RSS. Targets (issue 3): p50 <= 15 ms and p95 <= 40 ms on (a), first
diagnostics within 500 ms, RSS under 150 MB, not slower than the peer. A third row, "pygls
floor", is a pygls server that publishes empty diagnostics: what Python, pygls and lsprotocol
cost before any analysis.

Edits are single-character changes typed inside one kernel body, one every `--pause-ms`
(default 150 ms, a brisk typist), each waited for before the next.

``--newton``: also (c) newton 1.8.0's ``_src/solvers/steel/kernels.py`` (10,445 lines, 212 kernels,
kernel factories), opened in place in its package (the workspace model indexes the package), with
``ruff server`` as a second peer when ruff is installed (issue 15 measured 247 ms against ruff's 28.5;
its targets: p50 no slower than ruff server's, p95 <= 40 ms, first diagnostics <= the floor's + 100 ms).
Servers run in turn, ``--rounds`` times each per file, and their keystrokes are pooled: the ratios hold
while the machine's load drifts.

    pip install ".[bench]"; python benchmarks/bench_lsp.py [--edits 60] [--rounds 3] [--newton]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "server"))

from corpus import generated_module
from stdio_client import StdioClient

from warp_harness.launch import module_command

# Servers run as installed ones do: with their bytecode cached. (Where PYTHONDONTWRITEBYTECODE is
# set, an editable install recompiles every module of the package at each start: ~120 ms here.)
SERVER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

FLOOR_SERVER = """
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("floor", "0")


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def publish(ls, params):
    document = ls.workspace.get_text_document(params.text_document.uri)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=document.uri, diagnostics=[], version=document.version)
    )


server.start_io()
"""


def edit_position(text: str) -> tuple[int, int]:
    """A spot inside a kernel body in the middle of the file: the end of an assignment's target."""
    lines = text.splitlines()
    kernels = [
        i for i, t in enumerate(lines) if t.startswith("def ") and i > 0 and lines[i - 1] == "@wp.kernel"
    ]
    start = kernels[len(kernels) // 2]
    for i in range(start + 1, len(lines)):
        stripped = lines[i].lstrip()
        if " = " in stripped and not stripped.startswith(("for", "if", "return")):
            return i, len(lines[i]) - len(stripped) + stripped.index(" = ")
    raise ValueError("no assignment found")


def run(
    name: str,
    command: list[str],
    settings: Any,
    path: Path,
    edits: int,
    pause_s: float,
    root: Path | None = None,
    timeout: float = 60.0,
    settle_s: float = 0.0,
) -> dict[str, Any]:
    text = path.read_text()
    uri = path.as_uri()
    root = root or path.parent
    if settings.get("fresh_cache") is not None:
        command = fresh_cache(command, settings["fresh_cache"])
    client = StdioClient(command, root, env=SERVER_ENV)
    try:
        return _measure(client, name, settings, path, text, uri, root, edits, pause_s, timeout, settle_s)
    except BaseException:
        client.proc.kill()  # a server that did not answer in time must not run on
        client.proc.wait()
        raise


def _measure(
    client: StdioClient,
    name: str,
    settings: Any,
    path: Path,
    text: str,
    uri: str,
    root: Path,
    edits: int,
    pause_s: float,
    timeout: float,
    settle_s: float = 0.0,
) -> dict[str, Any]:
    """``settle_s`` > 0: also the arrival of the last publication of the opened text, the first after which
    none came for ``settle_s`` (a server may publish the first screen's diagnostics ahead of the whole)."""
    client.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}},
            "initializationOptions": settings.get("init"),
        },
    )
    replied = time.perf_counter() - client.started  # the server's imports and `initialize`
    client.notify("initialized", {})
    if settings.get("config") is not None:
        client.notify("workspace/didChangeConfiguration", {"settings": settings["config"]})
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    first = client.wait_diagnostics(uri, 1, timeout=timeout, unversioned_ok=True)[0] - client.started
    first_cpu = cpu_ms(client.proc.pid)
    last = first
    if settle_s > 0:
        last = last_publication(client, uri, settle_s) or first
    line, col = edit_position(text)
    latencies = []
    version = 1
    for n in range(edits):
        time.sleep(pause_s)
        version += 1
        # type a character into the target name, then take it out again: every version is valid code
        if n % 2 == 0:
            change = {
                "range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col}},
                "text": "x",
            }
        else:
            change = {
                "range": {
                    "start": {"line": line, "character": col},
                    "end": {"line": line, "character": col + 1},
                },
                "text": "",
            }
        sent = time.perf_counter()
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        latencies.append(
            (client.wait_diagnostics(uri, version, timeout=timeout, unversioned_ok=True)[0] - sent) * 1000
        )
    rss = client.peak_rss_mb()
    client.close()
    return {
        **summary(name, path.name, latencies, [first * 1000], [rss]),
        "first_cpu": first_cpu,
        "replied": replied * 1000,
        "last": last * 1000,
    }


def last_publication(client: StdioClient, uri: str, settle_s: float) -> float | None:
    """When (since the server's start) the last publication for ``uri`` arrived, the first after which none
    came for ``settle_s``; None: none came."""
    import queue

    last = None
    while True:
        try:
            at, message = client.notifications.get(timeout=settle_s)
        except queue.Empty:
            return last
        params = message.get("params") or {}
        if message.get("method") == "textDocument/publishDiagnostics" and params.get("uri") == uri:
            client.last_diagnostics[uri] = (params.get("version"), params.get("diagnostics") or [])
            last = at - client.started


def cpu_ms(pid: int) -> float:
    """The CPU time (all threads) process ``pid`` and its children have used so far (a server may fork
    a helper for its start-up): unlike the wall time to first diagnostics, it hardly moves with the
    machine's load. From each live thread's schedstat (nanoseconds; user + system time counts clock
    ticks, 10 ms, too coarse to tell changes of a few ms apart), plus the ticks of children already
    reaped."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    try:
        return _tree_schedstat_ms(pid) + (int(stat[13]) + int(stat[14])) * tick_ms
    except (OSError, ValueError, IndexError):
        return (int(stat[11]) + int(stat[12]) + int(stat[13]) + int(stat[14])) * tick_ms


def _tree_schedstat_ms(pid: int) -> float:
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        total += int((task / "schedstat").read_text().split()[0]) / 1e6
        for child in (task / "children").read_text().split():
            try:
                total += _tree_schedstat_ms(int(child))
            except OSError:  # it ended meanwhile
                pass
    return total


def summary(
    name: str, file: str, latencies: list[float], firsts: list[float], rss: list[float]
) -> dict[str, Any]:
    ordered = sorted(latencies)
    return {
        "server": name,
        "file": file,
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "max": ordered[-1],
        "first": statistics.median(firsts),
        "rss": max(rss),
        "latencies": latencies,
    }


def interleaved(
    servers: list[tuple[str, list[str], dict[str, Any]]],
    path: Path,
    edits: int,
    pause_s: float,
    rounds: int,
    root: Path | None = None,
) -> list[dict[str, Any]]:
    """Each server ``rounds`` times in turn, ``edits / rounds`` keystrokes a time, pooled: the machine's
    load drifts over a run, and servers measured in turn see the same drift (the ratios stay fair)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in servers}
    per_round = max(2, edits // rounds)
    for _ in range(rounds):
        for name, command, settings in servers:
            runs[name].append(run(name, command, settings, path, per_round, pause_s, root))
    return [
        summary(
            name,
            path.name,
            [x for r in runs[name] for x in r["latencies"]],
            [r["first"] for r in runs[name]],
            [r["rss"] for r in runs[name]],
        )
        for name, _, _ in servers
    ]


def fresh_cache(command: list[str], installed: Path) -> list[str]:
    """``command`` with a new user cache folder (XDG_CACHE_HOME), made before the start (not timed): no
    result of an earlier start, only what an installation keeps after its first start, copied from the
    cache folder ``installed``: the code attrs writes for lsprotocol's classes (`server/generated_code.py`;
    a server of a tree without it ignores it)."""
    import shutil

    home = Path(tempfile.mkdtemp(prefix="wh-bench-cache-"))
    kept = installed / "warp-harness" / "server-code"
    if kept.is_dir():
        shutil.copytree(kept, home / "warp-harness" / "server-code")
    return ["env", f"XDG_CACHE_HOME={home}", *command]


def with_cache(command: list[str], folder: Path | None) -> list[str]:
    """``command`` with its own user cache folder (XDG_CACHE_HOME): ``folder``, or (None) a new empty one
    at every start: the server's start-up process then finds no result of an earlier start."""
    if folder is not None:
        return ["env", f"XDG_CACHE_HOME={folder}", *command]
    return ["sh", "-c", 'XDG_CACHE_HOME="$(mktemp -d)" exec "$@"', "sh", *command]


def first_only(
    servers: list[tuple[str, list[str], dict[str, Any]]],
    files: list[Path],
    rounds: int,
    roots: dict[Path, Path] | None = None,
    warm: tuple[str, ...] = (),
    settle_s: float = 1.5,
) -> None:
    """Start-up to first diagnostics only (one keystroke a run), the servers in turn, ``rounds`` times:
    the wall time, and the CPU time the server had used by then (steadier on a loaded machine), the wall
    time split where the client waits: for the reply to ``initialize`` (the server's start and imports),
    then from that reply to the diagnostics (didOpen and its analysis, or the answer from the cache). The
    caches of the first server and of those named in ``warm`` are filled by one run per file before the
    rounds (``roots``: a file's workspace folder, other than its own folder). Also the arrival of each
    run's last publication of the text (none after it for ``settle_s``): a server may publish the first
    screen's diagnostics ahead of the whole."""
    load = os.getloadavg()[0]
    print(f"start-up to first diagnostics: median of {rounds} runs each, in turn; load {load:.2f}")
    roots = roots or {}
    for path in files:
        walls: dict[str, list[float]] = {name: [] for name, _, _ in servers}
        cpus: dict[str, list[float]] = {name: [] for name, _, _ in servers}
        replies: dict[str, list[float]] = {name: [] for name, _, _ in servers}
        lasts: dict[str, list[float]] = {name: [] for name, _, _ in servers}
        for server in servers:
            if server is servers[0] or server[0] in warm:  # its cache filled (the settling: its code kept)
                run(*server, path, 1, 0.0, root=roots.get(path), settle_s=settle_s)
        for _ in range(rounds):
            for name, command, settings in servers:
                row = run(name, command, settings, path, 1, 0.0, root=roots.get(path), settle_s=settle_s)
                walls[name].append(row["first"])
                lasts[name].append(row["last"])
                cpus[name].append(row["first_cpu"])
                replies[name].append(row["replied"])
        cells = [
            f"{name} {statistics.median(walls[name]):.0f} ms (CPU {statistics.median(cpus[name]):.0f} ms, "
            f"min {min(cpus[name]):.0f}; initialize replied {statistics.median(replies[name]):.0f}, "
            f"then {statistics.median(w - r for w, r in zip(walls[name], replies[name], strict=True)):.0f}"
            + (f"; last publication {statistics.median(lasts[name]):.0f})" if settle_s > 0 else ")")
            for name, _, _ in servers
        ]
        floor = servers[1][0]
        print(f"{path.name:<26} {', '.join(cells)}")
        for name in [servers[0][0], *(name for name, _, _ in servers[2:])]:
            wall_gap = statistics.median(walls[name]) - statistics.median(walls[floor])
            cpu_gap = statistics.median(cpus[name]) - statistics.median(cpus[floor])
            min_gap = min(cpus[name]) - min(cpus[floor])
            print(
                f"{'':<26} {name} - floor: {wall_gap:.0f} ms wall, {cpu_gap:.0f} ms CPU, {min_gap:.0f} ms "
                "CPU between the minima (issue 15: <= 100 ms)"
            )
    print(f"load at the end {os.getloadavg()[0]:.2f}")


def baseline_command(checkout: Path) -> list[str]:
    """`warp-harness serve` imported from ``checkout`` (a source tree: its warp_harness/ package
    takes the repository's rules/, server/ and daemon/ as subpackages) ahead of the installed one."""
    if not (checkout / "warp_harness" / "__init__.py").is_file():
        raise SystemExit(f"--baseline {checkout}: no warp_harness/ package there")
    path = os.pathsep.join(filter(None, [str(checkout.resolve()), os.environ.get("PYTHONPATH")]))
    return ["env", f"PYTHONPATH={path}", *module_command("warp_harness", "serve")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=60)
    parser.add_argument("--pause-ms", type=float, default=150.0)
    parser.add_argument("--rounds", type=int, default=3, help="runs per server, interleaved with the others")
    parser.add_argument("--newton", action="store_true", help="also newton's steel kernels.py, in place")
    parser.add_argument(
        "--first-only",
        type=int,
        metavar="ROUNDS",
        help="only the start-up to first diagnostics, against the pygls floor, ROUNDS runs each in turn",
    )
    parser.add_argument(
        "--newton-only",
        action="store_true",
        help="with --first-only: only newton's steel kernels.py (implies --newton)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="with --first-only: also the server of another source tree (say, a copy of the code "
        "before a change), in turn with the others: old and new measured in the same window",
    )
    args = parser.parse_args()
    pause = args.pause_ms / 1000

    folder = Path(tempfile.mkdtemp(prefix="wh-bench-lsp-"))
    generated = folder / "generated_2000.py"
    generated.write_text(generated_module())
    files = [generated]
    spec = find_spec("warp")
    if spec is not None and spec.origin is not None:
        matmul = Path(spec.origin).parent / "examples" / "tile" / "example_tile_matmul.py"
        if matmul.is_file():
            copy = folder / matmul.name
            copy.write_text(matmul.read_text())
            files.append(copy)

    ours = module_command("warp_harness", "serve")
    floor = folder / "floor_server.py"
    floor.write_text(FLOOR_SERVER)
    # the floor: a pygls server that publishes nothing, i.e. what pygls and Python cost alone
    servers: list[tuple[str, list[str], dict[str, Any]]] = [
        ("warp-harness", ours, {}),
        ("pygls floor", [sys.executable, str(floor)], {}),
    ]
    if find_spec("pylsp") is not None:
        pyflakes_only = {
            "pylsp": {
                "plugins": {
                    p: {"enabled": p == "pyflakes"}
                    for p in (
                        "pyflakes",
                        "pycodestyle",
                        "mccabe",
                        "pylint",
                        "flake8",
                        "autopep8",
                        "yapf",
                        "pydocstyle",
                    )
                }
            }
        }
        servers.append(("pylsp+pyflakes", [sys.executable, "-m", "pylsp"], {"config": pyflakes_only}))
    else:
        print("python-lsp-server is not installed (pip install '.[bench]'): peer skipped")

    if args.first_only:
        # warp-harness as a user has it (its start-up process answers a document it analysed before from
        # the user's result cache), the floor, and warp-harness with an empty cache at every start
        # ("empty cache": no result of an earlier start, but the code an installation keeps from its first)
        installed = {"fresh_cache": folder / "cache"}
        measured = [
            ("warp-harness", with_cache(ours, folder / "cache"), {}),
            servers[1],
            ("wh empty cache", ours, installed),
            # an installation's first start: nothing kept, the code compiled as an empty pygls server does
            ("wh first start", ours, {"fresh_cache": folder / "none"}),
        ]
        if args.baseline is not None:  # as a user has it too: its own cache, filled before the rounds
            measured.append(("baseline", with_cache(baseline_command(args.baseline), folder / "old"), {}))
            measured.append(("baseline empty cache", baseline_command(args.baseline), installed))
        roots: dict[Path, Path] = {}
        if args.newton_only:
            files = []
        if args.newton or args.newton_only:
            from real_trees import NEWTON, fetch

            package = fetch(NEWTON)
            steel = package / "_src" / "solvers" / "steel" / "kernels.py"
            files.append(steel)
            roots[steel] = package.parent  # opened in place: the workspace model indexes the package
        first_only(measured, files, args.first_only, roots, warm=("baseline",))
        return
    rows = [row for f in files for row in interleaved(servers, f, args.edits, pause, args.rounds)]
    if args.newton:
        import shutil

        from real_trees import NEWTON, fetch

        package = fetch(NEWTON)
        steel = package / "_src" / "solvers" / "steel" / "kernels.py"
        files.append(steel)
        peers = [s for s in servers if s[0] != "pygls floor"]
        ruff = shutil.which("ruff")
        if ruff is not None:
            peers.append(("ruff server", [ruff, "server"], {}))
        rows += interleaved(peers, steel, args.edits, pause, args.rounds, root=package.parent)
    header = (
        f"{'file':<26} {'server':<16} {'p50 ms':>8} {'p95 ms':>8} {'first diag ms':>14} {'peak RSS MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        cells = f"{r['p50']:8.1f} {r['p95']:8.1f} {r['first']:14.0f} {r['rss']:12.1f}"
        print(f"{r['file']:<26} {r['server']:<16} {cells}")
    for f in files:
        mine = next(r for r in rows if r["file"] == f.name and r["server"] == "warp-harness")
        floor_row = next((r for r in rows if r["file"] == f.name and r["server"] == "pygls floor"), None)
        if floor_row is not None:
            print(
                f"{f.name}: first diagnostics, warp-harness - pygls floor = "
                f"{mine['first'] - floor_row['first']:.0f} ms (issue 15: <= 100 ms)"
            )
        for peer_name in ("pylsp+pyflakes", "ruff server"):
            peer = next((r for r in rows if r["file"] == f.name and r["server"] == peer_name), None)
            if peer is not None:
                print(
                    f"{f.name}: warp-harness p50 / {peer_name} p50 = {mine['p50'] / peer['p50']:.2f}, "
                    f"p95 ratio {mine['p95'] / peer['p95']:.2f}"
                )
    print(
        f"({args.edits} edits per server and file in {args.rounds} interleaved runs, {args.pause_ms:.0f} ms "
        f"apart; first diagnostics: the median run; targets on {generated.name}: "
        "p50 <= 15 ms, p95 <= 40 ms, first diagnostics <= 500 ms, RSS < 150 MB)"
    )


if __name__ == "__main__":
    main()
