"""Fold core."""
