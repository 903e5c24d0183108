"""The command line: `app` (the `turnflow` entry point, its parser and the process switches),
`commands/` (one module per subcommand: parse flags, call the pipeline, print), `util` (exit
codes, output, messages every command shares), `help`, `fixes` (`check --fix`)."""

from turnflow.cli.app import main

__all__ = ["main"]
