import sys

from warp_harness.cli import main

sys.exit(main())
