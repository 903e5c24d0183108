"""turnflow: a language, linter, compiler and runtime for multi-agent speaker graphs.

The whole user-facing API::

    flow = turnflow.parse(text, path="support.flow")
    diagnostics = turnflow.check(flow)
    specs = turnflow.compile(flow)          # one session spec per block
    code = turnflow.compile_target(flow, "langgraph")   # one workflow as framework code (docs/targets.md)
    text = turnflow.decompile(specs)        # back to canonical .flow text

The package root is light: `import turnflow` (and `import turnflow.runtime`) loads neither the
parser (lark) nor the analysis; each name above loads the module it lives in on first use
(`turnflow.api` re-exports them all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["CompileError", "DecompileError", "ParseError", "__version__", "check", "compile", "compile_target",
           "decompile", "parse"]

if TYPE_CHECKING:  # pragma: no cover
    from turnflow.api import (CompileError, DecompileError, ParseError, check, compile, compile_target, decompile,
                              parse)


#: where each name lives (as `turnflow.api` re-exports them): loaded from there on first use, so
#: `turnflow.check` loads the analysis alone, not the decompiler's pydantic models (~0.08 s of CPU)
_HOMES = {
    "check": ("turnflow.compiler.pipeline", "check"),
    "parse": ("turnflow.dsl.parser", "parse"),
    "ParseError": ("turnflow.dsl.parser", "ParseError"),
    "compile": ("turnflow.compiler.emit.spec", "compile"),
    "CompileError": ("turnflow.compiler.emit.spec", "CompileError"),
    "compile_target": ("turnflow.compiler.emit.targets", "compile_target"),
    "decompile": ("turnflow.compiler.decompile", "decompile_text"),
    "DecompileError": ("turnflow.compiler.decompile", "DecompileError"),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        from importlib import import_module

        value = getattr(import_module(home[0]), home[1])
        globals()[name] = value
        return value
    raise AttributeError(f"module 'turnflow' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
