"""The host: scheduler loop, agent backends, inbox (contract §9). Arrives in a later issue."""
