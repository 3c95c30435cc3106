"""Editor (agent) backends: ordinary plugins registered through ``fold_core.plugins``."""
