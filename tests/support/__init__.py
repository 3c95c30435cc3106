"""Reusable test support: real local servers and helpers shared by several test modules."""
