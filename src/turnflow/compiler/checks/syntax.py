"""TF000 / TF001: diagnostics produced while reading and parsing a file.

They are documented here; the CLI (TF000) and `turnflow.dsl.parser` (TF001)
emit them."""

from turnflow.diagnostics.registry import register

register("TF000", "unreadable-file", "error", """
    A file could not be read as UTF-8 text.

    ## What it does
    Reports a path that cannot be opened, or whose bytes are not UTF-8 text
    (binary files, other encodings). The position is that of the first bad byte.

    ## Why is this bad?
    Nothing in the file can be checked; `turnflow check` exits with status 2.

    ## Example
    A `.flow` file saved as UTF-16, or an image renamed to `.flow`.

    ## Use instead
    Save `.flow` files as UTF-8.
""")

register("TF001", "syntax-error", "error", """
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
    }
    ```

    ## Use instead
    ```
    workflow w {
        participant starter
    }
    ```
""")
