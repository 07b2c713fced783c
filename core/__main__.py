"""``python -m warp_harness ...`` (the same as the `warp-harness` command)."""

import os
import sys

# `python -m` puts the current folder first on sys.path. An editor starts `python -m warp_harness
# serve` (and the server starts the daemon) from inside the workspace: a `json.py` or `msgpack.py`
# there would then be imported, i.e. run, by us. Nothing of ours lives in the current folder.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from warp_harness.cli import main

sys.exit(main())
