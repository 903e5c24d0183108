"""The `.flow` front end: grammar, parser → AST (with spans), printer."""

from turnflow.dsl.parser import ParseError, parse, parse_source

__all__ = ["ParseError", "parse", "parse_source"]
