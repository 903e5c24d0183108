"""The user-facing functions, re-exported: plain functions over plain data.

Nothing is implemented here; each name lives in the stage that owns it (`turnflow.dsl.parser`,
`turnflow.compiler.pipeline`, `turnflow.compiler.emit.spec`, `turnflow.compiler.emit.targets`,
`turnflow.compiler.decompile`).
The package root loads this module on first use of one of these names."""

from __future__ import annotations

from turnflow.compiler.decompile import DecompileError
from turnflow.compiler.decompile import decompile_text as decompile
from turnflow.compiler.emit.spec import CompileError, compile  # noqa: A004 (the API name)
from turnflow.compiler.emit.targets import compile_target
from turnflow.compiler.pipeline import check
from turnflow.dsl.parser import ParseError, parse

__all__ = ["CompileError", "DecompileError", "ParseError", "check", "compile", "compile_target", "decompile",
           "parse"]
