"""turnflow: a language, linter, compiler and runtime for multi-agent speaker graphs.

The whole user-facing API::

    flow = turnflow.parse(text, path="support.flow")
    diagnostics = turnflow.check(flow)
    specs = turnflow.compile(flow)          # one session spec per block
    text = turnflow.decompile(specs)        # back to canonical .flow text
"""

__version__ = "0.1.0"

from turnflow.api import (  # noqa: E402
    CompileError, DecompileError, ParseError, check, compile, decompile, parse,
)

__all__ = ["__version__", "parse", "check", "compile", "decompile", "ParseError", "CompileError",
           "DecompileError"]
