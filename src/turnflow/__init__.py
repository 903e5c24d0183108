"""turnflow: a language, linter, compiler and runtime for multi-agent speaker graphs.

The whole user-facing API::

    flow = turnflow.parse(text, path="support.flow")
    diagnostics = turnflow.check(flow)
"""

__version__ = "0.1.0"

from turnflow.api import ParseError, check, parse  # noqa: E402

__all__ = ["__version__", "parse", "check", "ParseError"]
