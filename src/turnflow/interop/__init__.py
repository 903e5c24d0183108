"""Interoperability with other agent frameworks (optional dependencies), under the paths users import:
`turnflow.interop.ag2` is `turnflow/frameworks/ag2/interop.py`, re-exported."""
