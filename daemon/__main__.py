"""``python -m warp_harness.daemon daemon|ci|replay ...``"""

import sys

from warp_harness.daemon.cli import main

sys.exit(main())
