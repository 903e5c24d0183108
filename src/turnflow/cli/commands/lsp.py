"""`turnflow lsp`: the language server over stdio (needs the `lsp` extra)."""

from __future__ import annotations

from turnflow.cli.util import EXIT_USAGE, err


def register(sub) -> None:
    p = sub.add_parser("lsp", help="run the language server on stdin/stdout (for editors)",
                       description="Run the turnflow language server over stdio: diagnostics, hover, "
                                   "go to definition, references, rename, completion, formatting, "
                                   "outline and quick fixes for .flow files. Needs the `lsp` extra: "
                                   "pip install 'turnflow[lsp]'. Editors start it; see docs/editors.md.")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        err("turnflow lsp: the language server needs the `lsp` extra (pygls, lsprotocol):\n"
            "    pip install 'turnflow[lsp]'")
        return EXIT_USAGE
    from turnflow.lsp.server import main

    return main()
