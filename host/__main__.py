"""``python -m fold_host``: the same as ``foldctl``."""

import sys

from fold_host.cli import main

sys.exit(main())
