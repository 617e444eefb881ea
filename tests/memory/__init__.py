"""The memory store (fieldrank.memory)."""
