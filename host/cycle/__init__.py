"""One host cycle's pipeline: sources → inbox → signal → window → editor → kernel → delivery (contract §9–§11)."""
