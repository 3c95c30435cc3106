"""Stores: the write/read protocol of contract §6.2 over a replaceable recorder."""

from fold_core.store.base import Answer, Recorder, Session, Store
from fold_core.store.memory import MemoryRecorder, memory_store

__all__ = ["Answer", "MemoryRecorder", "Recorder", "Session", "Store", "memory_store"]
