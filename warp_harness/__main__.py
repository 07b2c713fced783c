"""``python -m warp_harness ...`` (the same as the `warp-harness` command)."""

import os
import sys

# `python -m` puts the current folder first on sys.path. Dropping it here protects what we import
# next, but it comes too late for what runpy imported before this file ran (a `warp_harness/`
# package or a stdlib-named module in the current folder already ran): every launcher of ours
# starts Python with -P or -I (`warp_harness.launch`, the editor set-ups in docs/editors.md).
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from warp_harness.cli import main

sys.exit(main())
