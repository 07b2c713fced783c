"""When the server's cyclic garbage collector runs: after an analysis's diagnostics are out, not before.

An analysis runs with the collector off (`app.py`'s ``analyse_in_worker``). Turned on again as it
returns, the collector would run at the next allocation, over all the analysis made, before the
diagnostics went out: a keystroke in a 200,000-line file paid ~20 ms for it every few keystrokes, and
the first keystrokes after opening the file seconds (the file's whole model, traversed by a young and
then a middle-aged collection); later, every few hundred keystrokes, a full collection traversed it again.

So the collector stays off until the analysis was published; then :meth:`Collector.after_analysis`, on
the analysis thread, collects the young objects (those made since the last time: a keystroke's worth)
and freezes the survivors (`gc.freeze`): later collections skip them. A frozen object freed by its
reference count is freed as ever; only garbage cycles among frozen objects wait, for a full collection
once about as many objects were frozen since the last one as were frozen then. After an analysis that
made very many objects (a large file opened) they are frozen without a young collection: it would hold
the event loop for seconds, and its garbage (a few percent) waits for the next full collection.
"""

from __future__ import annotations

import gc

# young objects (net of those freed) above which they are frozen without being collected first
BULK = 200_000


class Collector:
    def __init__(self) -> None:
        # objects frozen after the last full collection (or bulk freeze), and how many more (an estimate:
        # net allocations, less the garbage collected) were frozen since; `gc.get_freeze_count` walks
        # every frozen object, too slow to ask after each analysis. None: the start-up's frozen objects,
        # not counted yet (~8 ms for the server's 130,000: counted after the first diagnostics are out)
        self._live: int | None = 0
        self._since = 0
        self.full_collections = 0
        # what the last publications replaced (the previous analysis, its diagnostics): freed here, on
        # the analysis thread after the publication, not before the diagnostics go out
        self._garbage: list[object] = []

    def pause(self) -> None:
        """Hold the collector off (during an analysis; :meth:`after_analysis` turns it on again)."""
        gc.disable()

    def start_up_done(self) -> None:
        """Freeze what start-up made (lsprotocol's classes, the builtin table, the rules: they live as
        long as the server) and turn the collector on."""
        gc.freeze()
        self._live, self._since = None, 0
        gc.enable()

    def release(self, garbage: object) -> None:
        """From the event loop: keep ``garbage`` until the next :meth:`after_analysis` (on the analysis
        thread, after the diagnostics are out) frees it."""
        self._garbage.append(garbage)

    def after_analysis(self) -> None:
        """On the analysis thread, after an analysis was published (or dropped)."""
        self._garbage = []  # a list the event loop appends to meanwhile is freed just the same
        if self._live is None:
            self._live = gc.get_freeze_count()
        young = gc.get_count()[0]
        if young > BULK:
            gc.freeze()
            self._live += young
        else:
            self._since += young - gc.collect(1)
            gc.freeze()
            if self._since > self._live:
                gc.unfreeze()
                gc.collect()
                gc.freeze()
                self._live, self._since = gc.get_freeze_count(), 0
                self.full_collections += 1
        gc.enable()
