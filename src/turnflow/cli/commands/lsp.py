"""`turnflow lsp`: the language server over stdio (needs the `lsp` extra)."""

from __future__ import annotations

from turnflow.cli.util import EXIT_USAGE, err
from turnflow.extras import pip_install


def register(sub) -> None:
    p = sub.add_parser("lsp", help="run the language server on stdin/stdout (for editors)",
                       description="Run the turnflow language server over stdio: diagnostics, hover, "
                                   "go to definition, references, rename, completion, formatting, "
                                   "outline and quick fixes for .flow files. Needs the `lsp` extra: "
                                   f"{pip_install('lsp')}. Editors start it; see docs/editors.md.")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        err("turnflow lsp: the language server needs the `lsp` extra (pygls, lsprotocol):\n"
            f"    {pip_install('lsp')}")
        return EXIT_USAGE
    from turnflow.lsp.server import main

    return main()
