"""Interoperability with other agent frameworks (optional dependencies)."""
