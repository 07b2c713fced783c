"""A background load for benchmarks: processes that keep a core busy while a measurement runs.

A user's machine is rarely idle while they type or run `check`, and the benchmarks say how a command
fares then too. Each busy process spins in pure Python (no memory traffic to speak of) in a session of its
own: Linux's scheduler then gives it its own share of the CPU, as another program of the user would have,
rather than taking it from the measured command's share (processes of one session share one
scheduling group where autogroup is on, as on desktop kernels).

    from load_generator import background_load
    with background_load(1):     # one other process busy
        ...                      # measure

    python benchmarks/load_generator.py 2 -- python -m warp_harness check newton/   # or around a command
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "while True:\n    pass\n"
# how long the busy processes get to start spinning before the measurement (a Python start-up)
SETTLE_S = 0.1


@contextmanager
def background_load(processes: int) -> Iterator[list[int]]:
    """``processes`` busy processes for the duration of the block (none for 0); their pids."""
    busy = [
        subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True, stdin=subprocess.DEVNULL)
        for _ in range(processes)
    ]
    try:
        if busy:
            time.sleep(SETTLE_S)
        yield [p.pid for p in busy]
    finally:
        for p in busy:
            p.kill()
        for p in busy:
            p.wait()


def describe(processes: int) -> str:
    """How a table says what ran beside its rows."""
    if processes == 0:
        return "no background load"
    return f"{processes} busy process{'es' if processes > 1 else ''} beside it"


def main(argv: list[str]) -> int:
    if not argv or not argv[0].isdigit():
        print("usage: load_generator.py N [-- COMMAND...]", file=sys.stderr)
        return 2
    command = argv[2:] if len(argv) > 1 and argv[1] == "--" else []
    with background_load(int(argv[0])):
        if command:
            return subprocess.call(command)
        print(f"{argv[0]} busy processes; load {os.getloadavg()[0]:.2f}; Ctrl-C ends them", file=sys.stderr)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
