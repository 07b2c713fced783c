"""``python -m warp_harness.daemon daemon|ci|replay ...``"""

import os
import sys

# `python -m` puts the current folder first on sys.path: started from inside an untrusted workspace,
# a `json.py` or `msgpack.py` there would be imported (run) by the daemon itself. Nothing of ours
# lives in the current folder, so drop that entry before importing anything else.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from warp_harness.daemon.cli import main

sys.exit(main())
