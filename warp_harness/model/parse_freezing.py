"""Whether `model.source.parse_source` freezes what is alive after each parse (``gc.freeze``), for batch
checks. Its own module: `batch` switches it on before any file is read, and a check the result cache
answers does not import the parser for it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

active = False


def freeze_parses() -> None:
    """From now on, `parse_source` hands everything alive after each parse to the permanent generation:
    for a process that only checks files and ends (a pool's worker); `frozen_parses` otherwise."""
    global active
    active = True


@contextmanager
def frozen_parses() -> Iterator[None]:
    """Within, every parse is followed by ``gc.freeze()``; at the end, ``gc.unfreeze()``.

    For a batch check, which collects the young generation after each file (`batch._check_one`): a
    file's tree is the bulk of what it allocates and of what outlives its check (the workspace model
    keeps the trees of modules with kernels, and parses launch targets), and it is acyclic, freed by
    reference counting. Frozen, that collection traverses only what was built after the parse (newton:
    1.5 -> 0.2 s of CPU). A cycle alive at a parse that becomes garbage afterwards waits for the end;
    over newton, mujoco_warp and warp's tests none did (as much garbage is left as without).
    """
    global active
    outer = active
    active = True
    try:
        yield
    finally:
        active = outer
        if not outer:
            gc.unfreeze()
