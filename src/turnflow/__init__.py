"""turnflow: a language, linter, compiler and runtime for multi-agent speaker graphs.

The whole user-facing API::

    flow = turnflow.parse(text, path="support.flow")
    diagnostics = turnflow.check(flow)
    specs = turnflow.compile(flow)          # one session spec per block
    code = turnflow.compile_target(flow, "langgraph")   # one workflow as framework code (docs/targets.md)
    text = turnflow.decompile(specs)        # back to canonical .flow text

The package root is light: `import turnflow` (and `import turnflow.runtime`) loads neither the
parser (lark) nor the analysis; the names above load `turnflow.api` on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["CompileError", "DecompileError", "ParseError", "__version__", "check", "compile", "compile_target",
           "decompile", "parse"]

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.api import (CompileError, DecompileError, ParseError, check, compile, compile_target, decompile,
                              parse)


def __getattr__(name: str) -> Any:
    if name in __all__:
        from turnflow import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'turnflow' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
