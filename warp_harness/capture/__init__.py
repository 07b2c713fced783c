"""Captured launches: the user's own runs of their kernels, recorded as data and replayed later.

``warp-harness capture -- COMMAND`` runs the command with a launch recorder (``recorder``) in the
child process only; the harness then files what it recorded in the workspace's capture store
(``store``: content-addressed ``.npy`` arrays, one signed JSON index per kernel). The daemon and
``ci --trust`` replay those launches after an edit (``warp_harness.daemon.captured``).
"""
