"""``python -m fold_core``: the same as ``foldctl`` (contract §7)."""

import sys

from fold_core.cli import main

sys.exit(main())
