"""The `.flow` front end: grammar, parser → AST (with spans), printer.

`parse`, `parse_source` and `ParseError` load the parser (and lark) on first use, so that
`turnflow.dsl.lexical` and `turnflow.dsl.ast` are importable without it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnflow.dsl.parser import ParseError, parse, parse_source

__all__ = ["ParseError", "parse", "parse_source"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from turnflow.dsl import parser  # lazy: lark is loaded by the first parse, not by `turnflow.dsl`

        return getattr(parser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
