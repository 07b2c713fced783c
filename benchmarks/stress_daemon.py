"""Fault injection and stress on a real daemon, as a table of cases and measured outcomes.

    python benchmarks/stress_daemon.py [--kill-rounds 10] [--storm-rounds 3] [--fuzz 2000] [--quick]

Every case runs against real parts: ``python -m warp_harness daemon`` processes (trusted
workspaces compile and run kernels with Warp on the CPU), their Unix socket, files written
in the workspace (watchdog events), ``kill -9``. Bounded: every wait has a limit; the
defaults take 70-80 s on a 2-core machine. The figures feed docs/reliability.md.

Cases: rule-engine fuzzing (mutated Warp examples, random text); the worker killed mid-job;
kernels that segfault, hang, allocate without bound; 1,000 saves in one second; the state
folder deleted and made read-only while the daemon runs; ``kill -9`` of the daemon while it
writes results (store readable afterwards, nothing lost); malformed and random frames, a
client that never reads, another user connecting.
"""

from __future__ import annotations

import argparse
import errno
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [
    str(REPO / "tests" / "reliability"),
    str(REPO / "tests" / "daemon"),
    str(REPO / "tests" / "engine"),
]

from daemon_helpers import EXAMPLES  # noqa: E402
from reliability_helpers import (  # noqa: E402
    NOBODY,
    Procs,
    alive,
    connect_as,
    kill_mid_write,
    ping,
    readable_map,
    rss_mb,
    spawn_daemon,
    wait_for,
    wait_ready,
)
from test_daemon_faults import (  # noqa: E402
    _read_only,
    _store_files,
    _workspace,
    remove_tree,
    storm_line,
    storm_source,
)

from warp_harness.daemon import protocol as P  # noqa: E402
from warp_harness.daemon import repros  # noqa: E402

ROWS: list[tuple[str, str, str, str]] = []


def row(case: str, runs: int | str, outcome: str, figures: str) -> None:
    ROWS.append((case, str(runs), outcome, figures))
    print(f"  {case}: {outcome} ({figures})", flush=True)


def rules(result: dict[str, Any]) -> list[str]:
    return [r["rule"] for r in result.get("records", [])]


class Daemon:
    def __init__(self, ws: Path, sock: Path, procs: Procs, *extra: str, trust: bool = True) -> None:
        self.ws, self.sock = ws, sock
        t0 = time.perf_counter()
        self.proc = spawn_daemon(ws, sock, *extra, trust=trust)
        procs.append(self.proc)
        wait_ready(self.proc, sock)
        self.start_s = time.perf_counter() - t0

    def client(self, timeout: float = 120.0) -> P.Client:
        return P.Client(self.sock, timeout=timeout)

    def healthy(self) -> bool:
        if self.proc.poll() is not None:
            return False
        with self.client() as c:
            r = c.request("check", path="saxpy.py", force=True)
        ok = r.get("kernels", {}).get("saxpy", {}).get("validate") == {"cpu": "pass"}
        if not ok:  # say why, the table only has room for the verdict
            details = [(x["rule"], x["message"][:300]) for x in r.get("records", []) if x["rule"] != "WHD031"]
            print(f"    not healthy: {r.get('status')} {details}", flush=True)
        return ok

    def worker_pid(self, c: P.Client) -> int:
        pid = wait_for(lambda: c.request("status")["worker"]["worker_pid"], 60, "a worker")
        return int(pid)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


# --------------------------------------------------------------------------- the rule engine


def engine_fuzz(n: int) -> None:
    from test_engine_fuzz import _SOURCES, _mutate

    from warp_harness.engine import analyse_source

    rng = random.Random(1)

    def run(texts: list[str], **overrides: Any) -> tuple[int, dict[str, int], float]:
        internal = 0
        raised: dict[str, int] = {}
        t0 = time.perf_counter()
        for text in texts:
            try:
                records = analyse_source(text, "f.py", overrides=overrides or None).records
            except Exception as exc:  # analyse_source must never raise: counted, reported
                key = f"{type(exc).__name__}: {exc}"[:80]
                raised[key] = raised.get(key, 0) + 1
                continue
            internal += sum(r.rule == "WH999" for r in records)
        return internal, raised, (time.perf_counter() - t0) / max(len(texts), 1) * 1e3

    mutated = [
        _mutate(_SOURCES[i % len(_SOURCES)], rng.randrange(2**32), rng.randint(1, 12)) for i in range(n)
    ]
    internal, raised, per = run(mutated, target="sm_86")
    row(
        "engine: mutated Warp examples",
        n,
        f"{internal} rule errors (WH999); analyse_source raised {sum(raised.values())}x {raised or ''}",
        f"{len(_SOURCES)} example files, 1-12 edits each, {per:.1f} ms/file",
    )
    alphabet = "wp.tid()[]():,=+*-/ \n\tabcxyij0123456789@kernel def return if for in é\x00"
    noise = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(400))) for _ in range(n)]
    internal, raised, per = run(noise)
    row(
        "engine: random text",
        n,
        f"{internal} rule errors (WH999); analyse_source raised {sum(raised.values())}x {raised or ''}",
        f"up to 400 chars, {per:.2f} ms/file",
    )


# --------------------------------------------------------------------------- worker faults


def worker_faults(d: Daemon, kills: int) -> None:
    outcomes = []
    recover = []
    for _ in range(kills):
        with d.client() as c:
            c.request("hello", client="stress")
            pid = d.worker_pid(c)
            c.request("check", path="hang.py", force=True, wait=False)
            c.wait_push("progress", where={"stage": "validate", "kernel": "spin"})
            t0 = time.perf_counter()
            os.kill(pid, signal.SIGKILL)
            r = c.wait_push("result", where={"path": "hang.py"})
            outcomes.append("WHD010" in rules(r) and any("SIGKILL" in x["message"] for x in r["records"]))
        ok, _ = timed(d.healthy)
        recover.append(time.perf_counter() - t0)
        outcomes[-1] = outcomes[-1] and ok
    row(
        "worker SIGKILLed mid-launch",
        kills,
        f"crash record + served {sum(outcomes)}/{kills}",
        f"kill -> next passing check median {statistics.median(recover):.2f} s (worker restart incl.)",
    )
    for name, path, expect in (
        ("kernel segfaults", "oob_crash.py", "WHD010"),
        ("kernel hangs", "hang.py", "WHD012"),
        ("inputs allocate without bound", "hog.py", "WHD013"),
        ("module allocates without bound at import", "hog_at_import.py", "WHD013"),
    ):
        with d.client() as c:
            r, s = timed(lambda p=path: c.request("check", path=p, force=True))  # type: ignore[misc]
        others = {k: v.get("validate") for k, v in r.get("kernels", {}).items() if v.get("validate")}
        ok, hs = timed(d.healthy)
        row(
            name,
            1,
            f"{expect} {'reported' if expect in rules(r) else 'MISSING'}; served: {ok}",
            f"verdict in {s:.2f} s, next check {hs:.2f} s; verdicts {others}",
        )


def storm(d: Daemon, rounds: int) -> None:
    path = d.ws / "storm.py"
    for rnd in range(rounds):
        path.write_text(storm_source(0))
        with d.client() as c:
            c.request("hello", client="storm")
            c.request("check", path="storm.py")
            jobs0 = c.request("status")["jobs_done"]
            c.pushes.clear()
            t0 = time.perf_counter()
            for i in range(1, 1001):
                path.write_text(storm_source(i))
                ahead = t0 + i / 1000 - time.perf_counter()
                if ahead > 0:
                    time.sleep(ahead)
            written = time.perf_counter()
            target = storm_line(1000)

            def last(c: P.Client = c, target: int = target) -> bool:
                idle = not c.request("status")["queued"]  # the request also reads the pushes that came
                return idle and any(
                    p.get("type") == "result"
                    and p.get("path") == "storm.py"
                    and (p.get("kernels") or {}).get("storm", {}).get("line") == target
                    for p in c.pushes
                )

            wait_for(last, 120, "the last save's result", interval=0.1)
            settle = time.perf_counter() - written
            time.sleep(0.5)
            c.request("ping")
            results = [p for p in c.pushes if p.get("type") == "result" and p.get("path") == "storm.py"]
            half = sum(1 for p in results if "storm" not in (p.get("kernels") or {}))
            jobs = c.request("status")["jobs_done"] - jobs0
            final = c.request("results", path="storm.py")["results"][0]
        matches = final["kernels"]["storm"]["line"] == target and final["kernels"]["storm"]["validate"] == {
            "cpu": "pass"
        }
        row(
            f"1,000 saves in one second (round {rnd + 1})",
            1000,
            f"last result matches the final file: {matches}; served: {d.healthy()}",
            f"written in {written - t0:.2f} s; {jobs} jobs ran ({half} read a half-written save); "
            f"final result {settle:.2f} s after the last save",
        )


def resave(d: Daemon, rounds: int) -> None:
    """A save while the file's own job runs (the job read the old text)."""
    path = d.ws / "storm.py"
    ok = 0
    lag = []
    with d.client() as c:
        c.request("hello", client="resave")
        for r in range(rounds):
            path.write_text(storm_source(2 * r + 100))
            c.request("check", path="storm.py")
            c.pushes.clear()
            path.write_text(storm_source(2 * r + 101))
            c.wait_push("state", where={"path": "storm.py", "state": "running"})
            path.write_text(storm_source(2 * r + 102))
            t0 = time.perf_counter()
            want = storm_line(2 * r + 102)
            try:
                while True:
                    got = c.wait_push("result", timeout=30, where={"path": "storm.py"})
                    if (got.get("kernels") or {}).get("storm", {}).get("line") == want:
                        ok += 1
                        lag.append(time.perf_counter() - t0)
                        break
            except TimeoutError:
                pass
    row(
        "a save while its file's job runs",
        rounds,
        f"last result is the last save's {ok}/{rounds}",
        f"second save -> a result of it: median {statistics.median(lag) if lag else float('nan'):.2f} s",
    )


def state_folder(d: Daemon) -> None:
    state = d.ws / ".warp-harness"
    remove_tree(state)
    ok_idle = d.healthy()
    (d.ws / "fresh.py").write_text(
        (EXAMPLES / "saxpy.py").read_text().replace("a * x[i] + y[i]", "y[i] + a * x[i]")
    )
    with d.client() as c:
        c.request("check", path="fresh.py", force=True, wait=False)
        c.wait_push("progress", where={"stage": "compile"})
        shutil.rmtree(state, ignore_errors=True)
        mid = c.wait_push("result", where={"path": "fresh.py"})
        again = c.request("check", path="fresh.py", force=True)
    row(
        "state folder deleted (idle, then mid-compile)",
        2,
        f"served: {ok_idle and d.healthy()}",
        f"mid-compile job: {mid['status']} {mid['kernels'].get('saxpy', {}).get('validate')}; "
        f"next: {again['kernels']['saxpy']['validate']}",
    )
    probe = d.ws / "ro_probe.py"
    probe.write_text((EXAMPLES / "saxpy.py").read_text().replace("a * x[i] + y[i]", "a * x[i] + y[i] * 1.0"))
    if not _read_only(state, True):
        _read_only(state, False)
        row("state folder read-only", 0, "skipped", "no chattr / chmod effect here")
        return
    try:
        with d.client() as c:
            r = c.request("check", path="ro_probe.py", force=True)
            b = c.request("check", path="boundary_bug.py", force=True)
        served = d.healthy()
    finally:
        _read_only(state, False)
    with d.client() as c:
        c.request("check", path="ro_probe.py")
        cached = c.request("check", path="ro_probe.py")["cached"]
    row(
        "state folder read-only",
        1,
        f"served: {served}; verdicts kept: {r['kernels']['saxpy']['validate']}",
        f"failing case not stored (said so): {any('not stored' in x['message'] for x in b['records'])}; "
        f"cached again once writable: {cached}",
    )


def kill9(root: Path, procs: Procs, rounds: int) -> None:
    (root / "k9").mkdir()
    ws = _workspace(root / "k9")
    sock = root / "k9run" / "d.sock"
    names = ["saxpy.py", "boundary_bug.py"]
    rng = random.Random(5)
    intact = restarted = 0
    lost = tmp_left = files = 0
    restarts: list[float] = []
    d = Daemon(ws, sock, procs, "--no-watch")
    with d.client() as c:
        for name in names:
            c.request("check", path=name)
    for _ in range(rounds):
        stop = threading.Event()
        done: list[int] = []

        def hammer(stop: threading.Event = stop, done: list[int] = done) -> None:
            try:
                with P.Client(sock, timeout=60) as c:
                    while not stop.is_set():
                        for name in names:
                            c.request("check", path=name, force=True)
                            done.append(1)
            except (OSError, P.ConnectionClosed):
                pass

        t = threading.Thread(target=hammer)
        t.start()
        wait_for(lambda done=done: len(done) >= 2, 60, "writes")  # type: ignore[misc]
        time.sleep(rng.uniform(0, 0.4))
        before = {p: readable_map(p) for p in _store_files(ws)}
        os.kill(d.proc.pid, signal.SIGKILL)
        stop.set()
        t.join(30)
        d.proc.communicate(timeout=10)
        files += len(before)
        gone = [p for p in before if not (p.exists() and readable_map(p))]
        lost += len(gone)
        _, corrupt = repros.load_all(ws)
        intact += not gone and not corrupt
        tmp_left += sum(1 for p in (ws / ".warp-harness").rglob(".*.tmp"))
        d = Daemon(ws, sock, procs, "--no-watch")
        restarts.append(d.start_s)
        with d.client() as c:
            restarted += all(c.request("check", path=n)["cached"] for n in names)
    # the orphan: kill -9 while the worker spins in a kernel that never ends
    with d.client() as c:
        c.request("hello", client="k9")
        c.request("check", path="hang.py", force=True, wait=False)
        c.wait_push("progress", where={"stage": "validate", "kernel": "spin"})
        worker = c.request("status")["worker"]["worker_pid"]
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.communicate(timeout=10)
    t0 = time.perf_counter()
    try:
        wait_for(lambda: not alive(worker), 20, "the orphan to exit", interval=0.02)
        orphan = f"orphaned worker (in a hanging launch) exited {time.perf_counter() - t0:.2f} s after"
    except AssertionError:
        os.kill(worker, signal.SIGKILL)
        orphan = "orphaned worker still running after 20 s (killed by the script)"
    row(
        "kill -9 of the daemon during result writes",
        rounds,
        f"store readable {intact}/{rounds}; {lost} of {files} files lost; "
        f"restart served from the store {restarted}/{rounds}",
        f"{tmp_left} temp files left behind (ignored by readers); "
        f"restart {statistics.median(restarts):.1f} s; {orphan}",
    )


def kill_in_write(root: Path, rounds: int) -> None:
    ws = root / "midwrite"
    ws.mkdir()
    t0 = time.perf_counter()
    c = kill_mid_write(ws, rounds, 64, seed=2)
    row(
        "kill -9 inside a 64 MiB result write (the store's own code)",
        rounds,
        f"kill landed mid-write {c['mid_write']}/{rounds}; "
        f"previous version readable {c['readable']}/{rounds}, "
        f"never older than the last stored {c['not_older']}/{rounds}",
        f"temp files left {c['mid_write']}, removed by the start-up cleanup {c['temp_removed']}; "
        f"{(time.perf_counter() - t0) / rounds:.2f} s/round",
    )


# --------------------------------------------------------------------------- the socket


def socket_cases(root: Path, procs: Procs) -> None:
    ws = root / "sock_ws"
    ws.mkdir()
    shutil.copy(EXAMPLES / "saxpy.py", ws / "saxpy.py")
    base = Path(tempfile.mkdtemp(prefix="wh-stress-", dir="/tmp"))
    os.chmod(base, 0o755)
    try:
        sock = base / "run" / "d.sock"
        d = Daemon(ws, sock, procs, "--no-watch", trust=False)
        rng = random.Random(9)
        n = 10_000
        codes: dict[str, int] = {}
        with d.client(30) as c:
            c.request("subscribe", enabled=False)
            for _ in range(n):
                payload = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
                c.sock.sendall(struct.pack(">I", len(payload)) + payload)
                code = c.recv(timeout=10).get("code", "?")
                codes[code] = codes.get(code, 0) + 1
            alive_after = c.request("ping")["type"] == "pong"
        row("random payloads, valid headers", n, f"all answered {codes}; connection open: {alive_after}", "")
        conns = 1000
        t0 = time.perf_counter()
        for _ in range(conns):
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(sock))
            try:
                s.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 3000))))
            except OSError:
                pass
            s.close()
        row(
            "random byte streams, one connection each",
            conns,
            f"daemon alive: {alive(d.proc.pid)}; ping after {ping(sock) * 1e3:.1f} ms",
            f"{(time.perf_counter() - t0) / conns * 1e3:.2f} ms per connection",
        )
        before = rss_mb(d.proc.pid)
        hog = socket.socket(socket.AF_UNIX)
        hog.connect(str(sock))
        hog.settimeout(60)
        frames = P.encode_frame(P.message("ping", id=1)) * 1000
        sent = [0]
        err = [""]

        def flood() -> None:
            try:
                for _ in range(1000):
                    hog.sendall(frames)
                    sent[0] += 1000
            except OSError as exc:
                err[0] = type(exc).__name__

        t = threading.Thread(target=flood)
        t0 = time.perf_counter()
        t.start()
        lat = []
        while t.is_alive():
            lat.append(ping(sock))
        dropped_after = time.perf_counter() - t0
        hog.close()
        peak = rss_mb(d.proc.pid)
        row(
            "client sends requests and never reads",
            1,
            f"dropped ({err[0] or 'not dropped'}) after {sent[0]:,} requests, {dropped_after:.2f} s",
            f"others' ping during it: median {statistics.median(lat) * 1e3:.1f} ms, "
            f"max {max(lat) * 1e3:.1f} ms (n={len(lat)}); daemon RSS {before:.0f} -> {peak:.0f} MB",
        )
        if os.getuid() == 0:
            res = connect_as(NOBODY, NOBODY, sock)
            os.chmod(sock.parent, 0o755)
            res2 = connect_as(NOBODY, NOBODY, sock)
            os.chmod(sock.parent, 0o700)
            row(
                "another user connects (uid 65534)",
                2,
                f"{errno.errorcode.get(res, res)} (folder 0700); "
                f"{errno.errorcode.get(res2, res2)} (folder opened, socket 0600)",
                "",
            )
        else:
            row("another user connects", 0, "skipped (needs root)", "")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill-rounds", type=int, default=10)
    parser.add_argument("--worker-kills", type=int, default=5)
    parser.add_argument("--storm-rounds", type=int, default=3)
    parser.add_argument("--fuzz", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="1 round of everything")
    args = parser.parse_args()
    if args.quick:
        args.kill_rounds = args.worker_kills = args.storm_rounds = 1
        args.fuzz = 200
    procs = Procs()
    root = Path(tempfile.mkdtemp(prefix="wh-stress-"))
    t0 = time.perf_counter()
    try:
        print(f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}", flush=True)
        engine_fuzz(args.fuzz)
        ws = _workspace(root)
        d = Daemon(ws, root / "run" / "d.sock", procs, "--debounce-ms", "30")
        row(
            "daemon start (trusted, worker warm)",
            1,
            f"served: {d.healthy()}",
            f"{d.start_s:.2f} s to the first pong",
        )
        worker_faults(d, args.worker_kills)
        storm(d, args.storm_rounds)
        resave(d, 10 if not args.quick else 1)
        state_folder(d)
        kill9(root, procs, args.kill_rounds)
        kill_in_write(root, 2 * args.kill_rounds)
        socket_cases(root, procs)
    finally:
        procs.kill_all()
        shutil.rmtree(root, ignore_errors=True)
    widths = [max(len(r[i]) for r in [("case", "runs", "outcome", "figures"), *ROWS]) for i in range(4)]
    print()
    for r in [("case", "runs", "outcome", "figures"), tuple("-" * w for w in widths), *ROWS]:
        print(" | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
