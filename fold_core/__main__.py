"""``python -m fold_core``: the core commands of ``foldctl`` (contract §7): init, commit, annotate, state, history, verify."""

import sys

from fold_core.cli import main

sys.exit(main())
