"""Replaying captured launches (``warp-harness capture``) in the daemon and ``ci``: the worker's half
(``worker_side``), the judging half (``replay``, ``oracles``) and the glue to the engine (``hook``)."""
