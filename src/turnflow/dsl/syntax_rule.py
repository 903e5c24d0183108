"""TF001: the documentation of the syntax error `turnflow.dsl.parser` reports (name and
severity: `turnflow.diagnostics.codes`)."""

DOCS: dict[str, str] = {}

DOCS["TF001"] = """
    The text is not valid `.flow` syntax.

    ## What it does
    Reports the first token the parser cannot accept, says what it expected in
    the words of the language reference (a name, a string, `->`, the end of the
    statement, ...), and points at the offending token. Unterminated strings,
    keywords used as names and an early end of file are reported the same way.
    A file with a syntax error gets only this diagnostic; it cannot be suppressed.

    ## Why is this bad?
    The flow cannot be analysed, compiled or run until it parses.

    ## Example
    ```
    workflow w {
        participant start      # `start` is a keyword
        participant closer
        start start
        start -> closer
        closer -> terminate
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant starter
        participant closer
        start starter
        starter -> closer
        closer -> terminate
    }
    ```
"""
