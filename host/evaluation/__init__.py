"""The skill evaluation (contract §15): scenarios, mechanical property checks, metrics, reports."""
